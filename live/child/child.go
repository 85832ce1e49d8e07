// Package child starts the live engine's child processes (replicas, the
// private redis-server, own-server commands, fault hooks) so that they die
// with stormsim: on Linux each gets Pdeathsig SIGKILL, so a stormsim that
// is itself SIGKILLed, and so cannot clean up, takes them down at once
// instead of leaving them re-parented to PID 1. Elsewhere Start is
// cmd.Start: those children are stopped by Close only.
//
// Pdeathsig fires when the thread that forked the child exits, not the
// process. Go threads normally live as long as the process, but a thread
// whose goroutine exits while locked to it (runtime.LockOSThread) is
// destroyed. Start therefore forks every child from one goroutine that
// holds its OS thread for the life of the process and never exits: the
// signal comes when the process dies and not before.
//
// Pdeathsig reaches the child alone, not what it starts in turn (the
// server `go run` builds, the processes of a shell line). For a child that
// leads a process group of its own, GuardGroup adds a watchdog that kills
// the whole group when this process dies.
//
//	cmd := exec.Command("redis-server", args...)
//	if err := child.Start(cmd); err != nil { … }
package child

import "os/exec"

// Start starts cmd so that it does not outlive this process (on Linux).
// It keeps the SysProcAttr fields cmd already has (Setpgid).
func Start(cmd *exec.Cmd) error { return start(cmd) }
