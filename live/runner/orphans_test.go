package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/internal/tmpdir"
	"github.com/stormsim/stormsim/live/redisd"
)

// TestParentKilled SIGKILLs a live run's parent, a real `stormsim run
// --engine live` process, while its replicas and private redis-server run:
// it cannot clean up, yet 500 ms later none of its children, nor anything
// else in its process group, is alive (Pdeathsig, package child). The
// temporary folders it could not remove, named for its pid, go at the next
// tmpdir.Make (here a Sweep), and the test leaves nothing in the temp folder.
func TestParentKilled(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.toml")
	// A run long enough to be killed in the middle of.
	if err := os.WriteFile(file, []byte(fmt.Sprintf(storeKillScenario, "60s")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "t", "--file", file, "--engine", "live", "--out", filepath.Join(dir, "out"), "--quiet")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, to find whatever it leaves
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var kids []int
	defer func() { // whatever the test fails on, nothing outlives it
		syscall.Kill(-pid, syscall.SIGKILL)
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
	}()
	rpid, serve := waitChildren(t, pid, 2, 2*time.Minute)
	kids = append(serve, rpid)
	time.Sleep(time.Second) // the clients arrive and stream
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cmd.Wait() //nolint:errcheck // killed
	gone := time.Duration(-1)
	for time.Since(killed) < 500*time.Millisecond {
		alive := false
		for _, k := range kids {
			alive = alive || redisd.Alive(k)
		}
		if !alive && len(inGroup(pid)) == 0 {
			gone = time.Since(killed)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	left := map[int]bool{}
	for _, k := range append(kids, inGroup(pid)...) {
		if redisd.Alive(k) {
			left[k] = true
		}
	}
	if len(left) > 0 {
		t.Fatalf("500 ms after SIGKILL of stormsim run (pid %d), its children %v are still alive", pid, left)
	}
	t.Logf("the %d children (replicas and LB %v, redis-server %d) were gone %v after the SIGKILL", len(kids), serve, rpid, gone)

	left2, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(left2) == 0 {
		t.Errorf("the killed run left no temporary folder in %s; is TMPDIR still where it makes them?", tmp)
	}
	t.Setenv("TMPDIR", tmp)
	tmpdir.Sweep("stormsim-live-")
	tmpdir.Sweep("stormsim-redis-")
	tmpdir.Sweep("stormsim-sock-")
	if after, _ := filepath.Glob(filepath.Join(tmp, "*")); len(after) > 0 {
		t.Errorf("the killed run left %v; the sweep removed %d of %d", after, len(left2)-len(after), len(left2))
	}
}
