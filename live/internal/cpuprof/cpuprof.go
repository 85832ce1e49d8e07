// Package cpuprof lets the live engine's child processes (the LB and the
// replicas) write a CPU profile each, for `go tool pprof`, when
// STORMSIM_CPUPROFILE_DIR names a folder: a child started with it set
// profiles itself from its start, and the topology that started it asks
// for the profile before it kills it (Collect), since every child of a
// live run ends by SIGKILL, which leaves no profile behind.
//
//	stop := cpuprof.Start("lb") // in the child; a no-op without the variable
//	defer stop()
//	cpuprof.Collect(pids)       // in the topology, before the kill
//
// A child writes DIR/ROLE-PID.pprof, through a temporary name and a
// rename, so that a file with its final name is whole. SIGUSR1 ends a
// child's profile and writes it; the child serves on. A child killed
// before it was asked (a crash in the middle of a run) writes none.
package cpuprof

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

// DirEnv names the variable that turns the profiles on.
const DirEnv = "STORMSIM_CPUPROFILE_DIR"

// Path is where the child with that role and pid writes its profile.
func Path(dir, role string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", role, pid))
}

// Start profiles this process when DirEnv is set, until SIGUSR1 or the
// returned stop, whichever comes first. It returns a no-op without the
// variable, or when the profile cannot start (it says why on stderr).
func Start(role string) (stop func()) {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		return func() {}
	}
	final := Path(dir, role, os.Getpid())
	f, err := os.Create(final + ".part")
	if err != nil {
		fmt.Fprintf(os.Stderr, "cpuprof: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "cpuprof: %v\n", err)
		f.Close()
		os.Remove(f.Name())
		return func() {}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
			os.Rename(f.Name(), final) //nolint:errcheck // a missing profile is seen by Collect
		})
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		<-sig
		signal.Stop(sig)
		stop()
	}()
	return stop
}

// Collect asks every process in pids for its profile (SIGUSR1) and waits,
// up to 5 s in all, until each has written one under the folder DirEnv
// names. It does nothing without the variable.
func Collect(pids []int) {
	dir := os.Getenv(DirEnv)
	if dir == "" || len(pids) == 0 {
		return
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGUSR1) //nolint:errcheck // a process already gone writes nothing
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && !written(dir, pid) && syscall.Kill(pid, 0) == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// written reports whether the process pid has written its profile in dir.
func written(dir string, pid int) bool {
	m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("*-%d.pprof", pid)))
	return len(m) > 0
}
