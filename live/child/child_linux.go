//go:build linux

package child

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// spawn is one fork request for the spawner goroutine.
type spawn struct {
	cmd *exec.Cmd
	err chan error
}

var (
	spawnOnce sync.Once
	spawns    chan spawn
)

// spawner forks every child from a thread that lives as long as the
// process: it locks its goroutine to its OS thread and never returns, so
// the thread is never handed to another goroutine nor destroyed.
func spawner() {
	runtime.LockOSThread()
	for s := range spawns {
		s.err <- s.cmd.Start()
	}
}

func start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawnOnce.Do(func() {
		spawns = make(chan spawn)
		go spawner()
	})
	s := spawn{cmd: cmd, err: make(chan error, 1)}
	spawns <- s
	return <-s.err
}
