package topo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/scenario"
)

// Exit is a replica process that ended when nobody stopped it: a server
// command that crashed in the middle of a run.
type Exit struct {
	At     time.Time
	Slot   int // -1: the load balancer
	PID    int
	Status string // as os/exec says it: "exit status 2", "signal: segmentation fault"
	Output string // the end of what it wrote to stdout and stderr
}

func (e Exit) String() string {
	s := fmt.Sprintf("replica %d (pid %d) exited unexpectedly: %s", e.Slot, e.PID, e.Status)
	if e.Slot < 0 {
		s = fmt.Sprintf("the load balancer (pid %d) exited unexpectedly: %s", e.PID, e.Status)
	}
	if o := e.Output; o != "" {
		if len(o) > 300 {
			o = "…" + strings.ToValidUTF8(o[len(o)-300:], "")
		}
		s += "; its last output: " + o
	}
	return s
}

// NotReadyError is a replica the server command started that never became
// ready: it exited first, did not answer within the ready timeout, or the
// run ended while it waited. At the start of a run it is an error; a
// replica restarted by a fault that never becomes ready is reported, and
// the run goes on without it.
type NotReadyError struct {
	Slot    int
	Command string
	Why     string // "did not answer GET /mcp on port 4321 within the ready timeout (15s)"
	Output  string // the end of what it wrote
}

func (e *NotReadyError) Error() string {
	msg := fmt.Sprintf("topo: replica %d: server command %q %s", e.Slot, e.Command, e.Why)
	if e.Output != "" {
		msg += "; its last output: " + e.Output
	}
	return msg
}

// tail keeps the last bytes written to it; safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(t.buf), "?")), " ")
}

// shellChars are what makes a command need /bin/sh.
const shellChars = "|&;<>()$`\\\"'*?[]#~=%!{}\n"

// ownCommand builds the command that starts an own server's replica for
// slot on port. A plain command line is run directly, so that the process
// stormsim starts is the server itself (it dies with stormsim through
// Pdeathsig, see package child); anything with shell syntax is run by /bin/sh. Either way it
// leads a process group of its own, which every stop signals whole.
func ownCommand(o *scenario.OwnServer, dir string, slot, port int, gotmp string) *exec.Cmd {
	line := strings.NewReplacer("{port}", strconv.Itoa(port), "{replica}", strconv.Itoa(slot)).Replace(o.Command)
	var cmd *exec.Cmd
	if f := strings.Fields(line); len(f) > 0 && !strings.ContainsAny(line, shellChars) {
		cmd = exec.Command(f[0], f[1:]...)
	} else {
		cmd = exec.Command("/bin/sh", "-c", line)
	}
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if gotmp != "" {
		cmd.Env = append(cmd.Env, "GOTMPDIR="+gotmp) // server.env may still set its own
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.NewReplacer("{port}", strconv.Itoa(port), "{replica}", strconv.Itoa(slot)).Replace(o.Env[k])
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // and Pdeathsig: child.Start
	return cmd
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startOwn starts the own server's command for slot and puts the replica in
// the pool once its readiness path answers. A command that exits first, or
// does not answer within the ready timeout, is an error naming the replica,
// the command and its last output; its whole process group is killed.
func (t *Topology) startOwn(ctx context.Context, slot int) error {
	o := t.d.Own
	port, err := freePort()
	if err != nil {
		return err
	}
	dir := filepath.Dir(t.opts.File)
	cmd := ownCommand(o, dir, slot, port, t.goTmp())
	cmd.WaitDelay = 2 * time.Second // a descendant that left the group and holds the output cannot hold the run
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	if t.opts.LogDir != "" {
		if f, err := os.OpenFile(filepath.Join(t.opts.LogDir, fmt.Sprintf("own-%d.log", slot)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			defer f.Close() // the child holds its own copy
			cmd.Stdout, cmd.Stderr = multi{out, f}, multi{out, f}
		}
	}
	if err := child.Start(cmd); err != nil {
		return fmt.Errorf("topo: replica %d: starting %q: %w", slot, o.Command, err)
	}
	pid := cmd.Process.Pid
	// What the command starts in its group dies with stormsim too, even a
	// SIGKILLed stormsim that cannot clean up: Pdeathsig reaches the
	// command alone.
	guard, gerr := child.GuardGroup(pid)
	if gerr != nil {
		guard = io.NopCloser(nil) // the group is gone already, or there is no /bin/sh: Close still kills it
	}
	done := make(chan struct{})
	t.mu.Lock()
	t.pids[pid] = true
	t.groups = append(t.groups, pid)
	for len(t.slots) <= slot {
		t.slots = append(t.slots, nil)
	}
	t.slots[slot] = cmd
	t.mu.Unlock()
	go t.watchOwn(cmd, slot, out, guard, done)

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	fail := func(format string, args ...any) error {
		t.mu.Lock()
		if slot < len(t.slots) && t.slots[slot] == cmd {
			t.slots[slot] = nil
		}
		t.mu.Unlock()
		killGroup(pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		return &NotReadyError{Slot: slot, Command: o.Command, Why: fmt.Sprintf(format, args...), Output: out.String()}
	}
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(o.ReadyTimeout)
	for {
		select {
		case <-done:
			t.mu.Lock()
			var status string
			if cmd.ProcessState != nil {
				status = cmd.ProcessState.String()
			}
			t.mu.Unlock()
			return fail("exited before it was ready (%s)", status)
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fail("was still not ready when the run ended"))
		default:
		}
		if time.Now().After(deadline) {
			return fail("did not answer GET %s on port %d within the ready timeout (%v)", o.Ready, port, o.ReadyTimeout)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+o.Ready, nil)
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				break
			}
		}
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := t.bal.SetBackend(ctx, slot, base, ""); err != nil {
		return fail("%v", err)
	}
	t.mu.Lock()
	t.setSlot(slot, cmd, base, SlotServing, "", "serving "+base)
	t.mu.Unlock()
	if err := t.bal.SetInPool(ctx, slot, true); err != nil {
		return fail("%v", err)
	}
	return nil
}

// watchOwn waits for slot's own-server command to end, records an end
// nobody asked for as a crash (taking the slot out of the pool), kills what
// the command left in its group, closes done, and lets go of the group once
// it is gone.
func (t *Topology) watchOwn(cmd *exec.Cmd, slot int, out *tail, guard io.Closer, done chan struct{}) {
	pid := cmd.Process.Pid
	err := cmd.Wait()
	t.mu.Lock()
	delete(t.pids, pid)
	// Still the slot's process, and not stopped by a fault or Close:
	// the server crashed.
	crashed := slot < len(t.slots) && t.slots[slot] == cmd && !t.closing
	if crashed {
		t.slots[slot] = nil
		status := "exit status 0"
		if err != nil {
			status = err.Error()
		}
		t.exits = append(t.exits, Exit{At: time.Now(), Slot: slot, PID: pid, Status: status, Output: out.String()})
	}
	t.mu.Unlock()
	killGroup(pid, syscall.SIGKILL) // whatever the command left behind
	if crashed {
		t.inPool(slot, false)
	}
	close(done)
	// Once the group is gone its id may be reused by an unrelated
	// process: Close must not signal it then.
	for i := 0; i < 300 && groupAlive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !groupAlive(pid) {
		t.mu.Lock()
		t.groups = slices.DeleteFunc(t.groups, func(g int) bool { return g == pid })
		t.mu.Unlock()
		guard.Close() // its watchdog died with the group; this closes the pipe
	}
}

// goTmp is the GOTMPDIR the own server's commands run with: a folder of
// the topology's own, made on first use and removed by Close, so that the
// build folders a `go run` command leaves (go-build*, kept when the command
// is killed) go with the run. "" when it cannot be made: the command then
// uses Go's default.
func (t *Topology) goTmp() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gotmp == "" {
		if d, err := os.MkdirTemp("", "stormsim-gotmp-"); err == nil {
			t.gotmp = d
		}
	}
	return t.gotmp
}

// multi writes to every writer; the first error wins.
type multi []interface{ Write([]byte) (int, error) }

func (m multi) Write(p []byte) (int, error) {
	for _, w := range m {
		if _, err := w.Write(p); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// stopOwn stops an own server's replica process: a graceful stop sends the
// stop signal to its process group and kills the group after the drain
// timeout; a hard stop kills the group at once.
func (t *Topology) stopOwn(cmd *exec.Cmd, graceful bool) {
	pid := cmd.Process.Pid
	o := t.d.Own
	if !graceful || o.StopSignal == "KILL" {
		killGroup(pid, syscall.SIGKILL)
		return
	}
	killGroup(pid, stopSignals[o.StopSignal])
	limit := o.DrainTimeout
	go func() {
		tm := time.NewTimer(limit)
		defer tm.Stop()
		for {
			select {
			case <-tm.C:
				killGroup(pid, syscall.SIGKILL)
				return
			case <-time.After(100 * time.Millisecond):
				if !redisd.Alive(pid) {
					killGroup(pid, syscall.SIGKILL) // the leader drained; nothing it started outlives it
					return
				}
			}
		}
	}()
}

var stopSignals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "KILL": syscall.SIGKILL,
}

// killGroup signals the process group led by pid.
func killGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		syscall.Kill(-pid, sig) //nolint:errcheck // ESRCH: the group is gone already
	}
}

// groupAlive reports whether any process of the group led by pid is alive
// (not a zombie).
func groupAlive(pid int) bool {
	if syscall.Kill(-pid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(p); err == nil && g == pid && redisd.Alive(p) {
			return true
		}
	}
	return false
}

// Exits lists the processes that ended when nobody stopped them: an own
// server's replicas, and the load balancer (Slot -1).
func (t *Topology) Exits() []Exit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Exit(nil), t.exits...)
}

// RunHook runs a fault hook command with /bin/sh in dir, in a process group
// of its own that is killed when ctx ends, with the fault in its
// environment (STORMSIM_FAULT, STORMSIM_REPLICA). It returns the command's
// last output and its error.
func RunHook(ctx context.Context, dir, command string, env []string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // and Pdeathsig: child.Start
	cmd.WaitDelay = 2 * time.Second                       // a descendant that left the group and holds the output cannot hold the run
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := child.Start(cmd); err != nil {
		return "", err
	}
	pid := cmd.Process.Pid
	if guard, err := child.GuardGroup(pid); err == nil {
		defer guard.Close()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		killGroup(pid, syscall.SIGKILL)
		return out.String(), err
	case <-ctx.Done():
		killGroup(pid, syscall.SIGKILL)
		<-done
		return out.String(), ctx.Err()
	}
}
