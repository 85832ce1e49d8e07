package topo

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/redisd"
)

// The LB is a process of its own, `stormsim lb`, that the topology records
// with its replicas: it serves the clients' endpoint, and when it dies
// unasked the topology records the exit (slot -1), and the endpoint no
// longer answers. Close leaves no LB behind (start's cleanup checks every
// PID).
func TestLBProcess(t *testing.T) {
	t.Parallel()
	top := start(t, "steady", "memory-sticky")
	pid := top.LBPID()
	if pid == 0 || pid == os.Getpid() {
		t.Fatalf("LB pid %d: want a process of its own", pid)
	}
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if args := strings.Split(string(cmdline), "\x00"); len(args) < 2 || args[1] != "lb" {
		t.Errorf("LB pid %d runs %q: want `stormsim lb`", pid, args)
	}
	found := false
	for _, p := range top.PIDs() {
		found = found || p == pid
	}
	if !found {
		t.Errorf("PIDs %v do not list the LB, pid %d", top.PIDs(), pid)
	}
	resp, err := http.Get(top.Endpoint())
	if err != nil {
		t.Fatalf("GET the endpoint: %v", err)
	}
	resp.Body.Close()
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 300 && redisd.Alive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	var exits []Exit
	for i := 0; i < 300 && len(exits) == 0; i++ {
		time.Sleep(10 * time.Millisecond)
		exits = top.Exits()
	}
	if len(exits) != 1 || exits[0].Slot != -1 || exits[0].PID != pid || !strings.Contains(exits[0].String(), "the load balancer (pid "+strconv.Itoa(pid)+") exited unexpectedly: signal: killed") {
		t.Errorf("exits %v: want the LB's, killed", exits)
	}
	if resp, err := http.Get(top.Endpoint()); err == nil {
		resp.Body.Close()
		t.Errorf("the LB is dead and the endpoint still answers %s", resp.Status)
	}
}
