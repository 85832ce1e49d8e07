package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/redisd"
)

// ownOrphans is a live run of an own server whose command is a shell line:
// the server is the shell's child, which Pdeathsig on the shell does not
// reach. Each replica appends "SHELL-PID SERVER-PID" to %s.
const ownOrphans = `
[scenario.o]
duration = "60s"
drain = "2s"
replicas = 2
designs = ["memory-sticky"]
[scenario.o.server]
command = %s
ready_timeout = "60s"
[scenario.o.workload]
clients = 10
arrival_rate = 10
think = "200ms"
events_min = 5
events_max = 10
`

// TestParentKilledOwnServer SIGKILLs `stormsim run --engine live` while
// it runs an own server started by a shell line (as `go run` starts the
// server it builds): 500 ms later neither the shells nor the servers they
// started are alive (the process group's watchdog, child.GuardGroup).
func TestParentKilledOwnServer(t *testing.T) {
	exe := ownServerBin(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	command := exe + ` -port {port} & echo $$ $! >> ` + pidFile + `; wait`
	file := filepath.Join(dir, "o.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(ownOrphans, strconv.Quote(command))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "o", "--file", file, "--engine", "live", "--out", filepath.Join(dir, "out"), "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var shells, servers []int
	defer func() { // whatever the test fails on, nothing outlives it
		cmd.Process.Kill()
		for _, p := range append(shells, servers...) {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}()
	limit := 2 * time.Minute
	deadline := time.Now().Add(limit)
	for len(servers) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for both replicas' shells to write their pids to %s; got shells %v, servers %v", limit, pidFile, shells, servers)
		}
		time.Sleep(20 * time.Millisecond)
		data, _ := os.ReadFile(pidFile)
		shells, servers = nil, nil
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var sh, srv int
			if n, _ := fmt.Sscanf(line, "%d %d", &sh, &srv); n == 2 {
				shells, servers = append(shells, sh), append(servers, srv)
			}
		}
	}
	time.Sleep(time.Second) // the servers start; some may be serving
	for _, p := range servers {
		if !redisd.Alive(p) {
			t.Fatalf("server %d is not running before the kill", p)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck // killed
	time.Sleep(500 * time.Millisecond)
	left := map[int]bool{}
	for i, p := range append(shells, servers...) {
		if redisd.Alive(p) {
			left[p] = true
		}
		if i < len(shells) {
			for _, q := range inGroup(p) { // the group the shell leads: the watchdog too
				left[q] = true
			}
		}
	}
	if len(left) > 0 {
		t.Fatalf("500 ms after SIGKILL of stormsim run, processes of its own-server commands are alive: %v (shells %v, servers %v)", left, shells, servers)
	}
}
