// Package redisd runs a private redis-server for the live engine and its
// tests: on an ephemeral loopback port, with persistence off, its PID
// recorded, and never anyone else's Redis touched. Faults act on it for
// real: Stop and Cont send SIGSTOP and SIGCONT (a store outage), Restart
// kills it and starts it again on the same port (a store restart).
//
//	srv, err := redisd.Start(ctx, nil)
//	defer srv.Close()
//	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
package redisd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/live/internal/tmpdir"
	"github.com/stormsim/stormsim/live/internal/wait"
)

// ErrNoRedis is returned when redis-server is not on PATH.
var ErrNoRedis = errors.New("redisd: redis-server is not on PATH; install it (Debian: apt-get install redis-server) or pass --redis-url")

// Options configures a server. A nil *Options means the defaults.
type Options struct {
	// Persistent turns on append-only persistence, so a Restart keeps the
	// data (store-restart with persistent = true).
	Persistent bool
	// Dir holds the server's files; a new temporary folder when empty.
	Dir string
}

// Server is one redis-server process this package started. Its methods are
// safe for concurrent use; the mutex guards cmd and stopped.
type Server struct {
	addr   string // fixed at Start
	dir    string
	opts   Options
	ownDir bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool // SIGSTOPped
}

// Start launches a redis-server on a free loopback port and waits until it
// answers PING: up to wait.Ready (scaled by STORMSIM_WAIT_SCALE), or until
// it exits.
func Start(ctx context.Context, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNoRedis
	}
	s := &Server{opts: *opts, dir: opts.Dir}
	if s.dir == "" {
		d, err := tmpdir.Make("stormsim-redis-")
		if err != nil {
			return nil, fmt.Errorf("redisd: %w", err)
		}
		s.dir, s.ownDir = d, true
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := s.launch(ctx); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return s.addr }

// PID is the current process id, 0 when none runs.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) launch(ctx context.Context) error {
	_, port, _ := net.SplitHostPort(s.addr)
	args := []string{"--bind", "127.0.0.1", "--port", port, "--dir", s.dir, "--save", "", "--protected-mode", "yes", "--daemonize", "no", "--logfile", ""}
	if s.opts.Persistent {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command("redis-server", args...)
	if err := child.Start(cmd); err != nil { // never outlive us
		return fmt.Errorf("redisd: %w", err)
	}
	s.mu.Lock()
	s.cmd, s.stopped = cmd, false
	s.mu.Unlock()
	exited := make(chan struct{})
	go func() {
		cmd.Wait() //nolint:errcheck // reaped here; Close waits on the PID itself
		close(exited)
	}()
	limit := wait.For(wait.Ready)
	deadline := time.Now().Add(limit)
	for {
		if err := ctx.Err(); err != nil {
			s.kill()
			return err
		}
		if ping(s.addr) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redisd: waited %v for redis-server (pid %d) to answer PING on %s; it did not", limit, cmd.Process.Pid, s.addr)
		}
		select {
		case <-exited:
			s.kill()
			return fmt.Errorf("redisd: redis-server (pid %d) exited before it answered PING on %s: %v", cmd.Process.Pid, s.addr, cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("redisd: unexpected answer %q", line)
	}
	return nil
}

// Stop freezes the server with SIGSTOP: every call to it hangs until Cont.
func (s *Server) Stop() error { return s.signal(syscall.SIGSTOP, true) }

// Cont thaws it with SIGCONT.
func (s *Server) Cont() error { return s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, stopped bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("redisd: not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redisd: %w", err)
	}
	s.stopped = stopped
	return nil
}

// Restart kills the server and starts it again on the same address. Without
// persistence it comes back empty.
func (s *Server) Restart(ctx context.Context) error {
	s.kill()
	return s.launch(ctx)
}

// kill sends SIGKILL (after SIGCONT, so a stopped server dies too) and waits
// until the process is gone.
func (s *Server) kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Kill()
	for i := 0; i < 500 && alive(cmd.Process.Pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the ")" that ends the command name.
	for i := len(data) - 1; i > 0; i-- {
		if data[i] == ')' && i+2 < len(data) {
			return data[i+2] != 'Z'
		}
	}
	return true
}

// Alive reports whether pid is a live process; tests use it to check that
// nothing stormsim started outlives it.
func Alive(pid int) bool { return pid > 0 && alive(pid) }

// Close kills the server and removes its files.
func (s *Server) Close() error {
	s.kill()
	s.cleanup()
	return nil
}

func (s *Server) cleanup() {
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisd: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
