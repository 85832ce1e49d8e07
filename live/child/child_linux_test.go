//go:build linux

package child

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid runs (is neither gone nor a zombie).
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	for i := len(data) - 1; i > 0; i-- {
		if data[i] == ')' && i+2 < len(data) {
			return data[i+2] != 'Z'
		}
	}
	return true
}

// TestThreadExit starts two children from a goroutine locked to its OS
// thread that then exits, which destroys the thread: one with Pdeathsig
// set and cmd.Start called there, as the code did before, and one with
// Start. Pdeathsig follows the forking thread, so the first dies with the
// thread although stormsim lives on; the one Start forked from its own
// thread does not.
func TestThreadExit(t *testing.T) {
	type pair struct{ naive, ours *exec.Cmd }
	errMain := errors.New("on the main thread")
	try := func() (pair, error) {
		got := make(chan pair, 1)
		errs := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if syscall.Gettid() == os.Getpid() {
				errs <- errMain
				return
			}
			naive := exec.Command("sleep", "120")
			naive.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := naive.Start(); err != nil {
				errs <- err
				return
			}
			ours := exec.Command("sleep", "120")
			if err := Start(ours); err != nil {
				naive.Process.Kill()
				naive.Wait()
				errs <- err
				return
			}
			got <- pair{naive, ours}
		}()
		select {
		case p := <-got:
			return p, nil
		case err := <-errs:
			return pair{}, err
		}
	}
	// The runtime never destroys the main thread (a goroutine that exits
	// locked to it wedges it instead): the children must come from another.
	var p pair
	var err error
	for range 10 {
		if p, err = try(); err != errMain {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		p.naive.Process.Kill()
		p.ours.Process.Kill()
		p.naive.Wait()
		p.ours.Wait()
	}()
	if p.ours.SysProcAttr == nil || p.ours.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Errorf("Start left SysProcAttr %+v: want Pdeathsig SIGKILL", p.ours.SysProcAttr)
	}
	// The naive child's death shows the thread is gone; give a loaded
	// machine a minute to get there.
	limit := time.Minute
	deadline := time.Now().Add(limit)
	for alive(p.naive.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for the child forked from the exited thread to get its Pdeathsig; it did not (the thread lives on?)", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !alive(p.ours.Process.Pid) {
		t.Error("the child Start forked died with a thread that was not its parent's: Start must fork from a thread that lives as long as the process")
	}
}

// TestKeepsSysProcAttr: Start adds Pdeathsig to what the command already
// asks for (a process group of its own, for own-server commands).
func TestKeepsSysProcAttr(t *testing.T) {
	cmd := exec.Command("sleep", "120")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if g, err := syscall.Getpgid(cmd.Process.Pid); err != nil || g != cmd.Process.Pid {
		t.Errorf("process group %d (%v): want its own, %d", g, err, cmd.Process.Pid)
	}
	if cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Errorf("Pdeathsig %v: want SIGKILL", cmd.SysProcAttr.Pdeathsig)
	}
}
