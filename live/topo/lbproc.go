package topo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/lb"
)

// startLB starts the load balancer as a process of its own (`stormsim
// lb`), so that it and the clients do not share one process's open files:
// it inherits ln, the socket the topology opened for the clients, and a
// loopback socket for its control endpoint, and dies with this process
// (package child). Its health-check verdicts reach onHealth.
func (t *Topology) startLB(ctx context.Context, ln net.Listener, policy string, onHealth func(slot int, up bool, why string)) error {
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("topo: the LB's control socket: %w", err)
	}
	defer ctl.Close()
	files, err := listenerFiles(ln, ctl)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	tok := make([]byte, 16)
	rand.Read(tok) //nolint:errcheck // crypto/rand.Read never fails
	token := hex.EncodeToString(tok)
	cmd := exec.Command(t.opts.Bin, "lb", "--policy", policy, "--path", t.path(), "--listen", "fd:3", "--control", "fd:4")
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), lb.TokenEnv+"="+token)
	if t.opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(cmd); err != nil {
		return fmt.Errorf("topo: starting the LB: %w", err)
	}
	pid := cmd.Process.Pid
	t.mu.Lock()
	t.pids[pid] = true
	t.lbCmd = cmd
	t.mu.Unlock()
	go t.waitLB(cmd)
	ready := make(chan string, 1)
	silent := make(chan struct{})
	go func() {
		if !lb.Watch(out, func(_, control string) { ready <- control }, onHealth) {
			close(silent)
		}
	}()
	limit := wait.For(wait.Ready)
	select {
	case control := <-ready:
		t.bal = lb.NewRemote(control, token)
		return nil
	case <-silent:
		return fmt.Errorf("topo: the LB (pid %d) exited before it printed that it listens", pid)
	case <-time.After(limit):
		return fmt.Errorf("topo: waited %v for the LB (pid %d) to print that it listens; it did not", limit, pid)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listenerFiles returns a copy of each listener's socket, for a child to
// inherit.
func listenerFiles(lns ...net.Listener) ([]*os.File, error) {
	var files []*os.File
	for _, l := range lns {
		f, err := l.(*net.TCPListener).File()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("topo: handing the LB its socket: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}

// waitLB reaps the LB process; when it ends before Close, it records the
// end as an Exit (slot -1) and says so.
func (t *Topology) waitLB(cmd *exec.Cmd) {
	err := cmd.Wait()
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pids, cmd.Process.Pid)
	if t.closing {
		return
	}
	t.exits = append(t.exits, Exit{At: time.Now(), Slot: -1, PID: cmd.Process.Pid, Status: status})
	if t.opts.Notify != nil {
		t.notes = append(t.notes, fmt.Sprintf("lb pid %d exited: %s", cmd.Process.Pid, status))
		t.kick()
	}
}

// Addr is the address the LB listens on for clients.
func (t *Topology) Addr() string { return t.addr.String() }

// LBPID is the process id of the load balancer.
func (t *Topology) LBPID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lbCmd == nil {
		return 0
	}
	return t.lbCmd.Process.Pid
}

// lbFailed records a control request the LB did not carry out where no
// caller can be told: the LB is gone or wedged, and the requests that
// depend on it fail on their own.
func (t *Topology) lbFailed(err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closing && t.opts.Notify != nil {
		t.notes = append(t.notes, "lb: "+err.Error())
		t.kick()
	}
}

// inPool is the LB's SetInPool, for callers that cannot return its error.
func (t *Topology) inPool(slot int, in bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.lbFailed(t.bal.SetInPool(ctx, slot, in))
}

// LBFiles asks the LB process what it ran short of: the requests it
// refused and the connections it could not accept for want of a file.
func (t *Topology) LBFiles(ctx context.Context) (lb.FilesAnswer, error) {
	t.mu.Lock()
	bal := t.bal
	t.mu.Unlock()
	if bal == nil {
		return lb.FilesAnswer{}, nil
	}
	return bal.Files(ctx)
}
