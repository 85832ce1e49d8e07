package topo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/redisd"
)

func postJSON(t *testing.T, url, session string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// SIGTERM drains a `stormsim serve` replica: its open stream ends with a
// retry hint, and the process exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "s.toml")
	os.WriteFile(file, []byte(`
[scenario.s]
designs = ["memory-sticky"]
[scenario.s.replica]
drain_close = "start"
drain_limit = "2s"
retry_hint = "300ms"
`), 0o644)
	cmd := exec.Command(bin, "serve", "--file", file, "--scenario", "s", "--design", "memory-sticky")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	sc.Scan()
	url, ok := strings.CutPrefix(sc.Text(), "listening on ")
	if !ok {
		t.Fatalf("first line %q", sc.Text())
	}
	init := postJSON(t, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
	sid := init.Header.Get("Mcp-Session-Id")
	resp := postJSON(t, url, sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 1000, "interval_ms": 10}}})
	r := bufio.NewReader(resp.Body)
	r.ReadString('\n') // the stream is open
	cmd.Process.Signal(syscall.SIGTERM)
	var retry bool
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "retry: 300") {
			retry = true
		}
		if err != nil {
			break
		}
	}
	if !retry {
		t.Error("the drained stream ended without retry: 300")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(wait.For(wait.Ready)):
		t.Fatalf("waited %v for serve to exit after SIGTERM and its drain limit; it did not", wait.For(wait.Ready))
	}
}

// An interrupted `stormsim up` leaves none of the processes it recorded.
func TestUpSIGINTLeavesNothing(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	cmd := exec.Command(bin, "up", "steady", "--design", "redis-shared", "--file", abs, "--logs", t.TempDir())
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var endpoint string
	var pids []int
	for endpoint == "" && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "endpoint: "); ok {
			endpoint = v // the last line of the listing
		}
		// "slot 0 pid 1234 http://…", "redis pid 1234 127.0.0.1:…", "lb pid 1234 127.0.0.1:…"
		if f := strings.Fields(line); (len(f) == 5 && f[0] == "slot" || len(f) == 4 && (f[0] == "redis" || f[0] == "lb")) && f[len(f)-3] == "pid" {
			p, _ := strconv.Atoi(f[len(f)-2])
			pids = append(pids, p)
		}
	}
	if endpoint == "" || len(pids) != 5 { // 3 replicas, redis-server and the LB
		t.Fatalf("endpoint %q, pids %v", endpoint, pids)
	}
	if r := postJSON(t, endpoint, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}}); r.StatusCode != 200 {
		t.Fatalf("initialize through up: %d", r.StatusCode)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(wait.For(wait.Ready)):
		t.Fatalf("waited %v for stormsim up to exit after SIGINT; it did not", wait.For(wait.Ready))
	}
	for _, p := range pids {
		if redisd.Alive(p) {
			t.Errorf("process %d outlived stormsim up", p)
		}
	}
}
