package lb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/topology"
)

func replicas(t *testing.T, n int) []string {
	t.Helper()
	var urls []string
	for i := 0; i < n; i++ {
		s := replica.New(replica.Config{Sessions: topology.SessionsLocal, Events: topology.EventsMemory,
			Store: store.NewMemory(0, 0), Replica: topology.ReplicaConfig{RetryHint: 100 * time.Millisecond}})
		ts := httptest.NewServer(s)
		t.Cleanup(func() { s.Kill(); ts.Close() })
		urls = append(urls, ts.URL)
	}
	return urls
}

func post(t *testing.T, url, session string, body any) *http.Response {
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

func initialize(t *testing.T, url string) string {
	resp := post(t, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
	resp.Body.Close()
	return resp.Header.Get("Mcp-Session-Id")
}

func call(t *testing.T, url, session string, events, interval int) *http.Response {
	return post(t, url, session, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": events, "interval_ms": interval}}})
}

// Through a sticky LB every session request reaches the replica that minted
// it, and each SSE event comes through as it is produced, not at the end.
func TestStickyStreamsThrough(t *testing.T) {
	t.Parallel()
	p, _ := topology.NewPolicy("sticky", nil)
	b, err := New(p, replicas(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(b)
	defer ts.Close()
	for i := 0; i < 6; i++ {
		sid := initialize(t, ts.URL)
		if sid == "" {
			t.Fatal("no session id through the LB")
		}
		resp := call(t, ts.URL, sid, 50, 40) // 2 s of events
		if resp.StatusCode != 200 {
			t.Fatalf("call through the LB: %d (a sticky LB sent it elsewhere?)", resp.StatusCode)
		}
		start := time.Now()
		r := bufio.NewReader(resp.Body)
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "id: ") {
			t.Fatalf("first line %q %v", line, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the first event took %v: the LB buffers the stream", took)
		}
		resp.Body.Close()
	}
}

// No replica in the pool: 503. A partitioned replica: 503, and its open
// streams are cut.
func TestPoolAndPartition(t *testing.T) {
	t.Parallel()
	p, _ := topology.NewPolicy("round-robin", nil)
	b, _ := New(p, replicas(t, 1))
	ts := httptest.NewServer(b)
	defer ts.Close()
	sid := initialize(t, ts.URL)
	resp := call(t, ts.URL, sid, 1000, 20)
	done := make(chan struct{})
	go func() {
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		close(done)
	}()
	time.Sleep(100 * time.Millisecond)
	b.Partition(0, true)
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("a partition did not cut the open stream")
	}
	if r := post(t, ts.URL, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); r.StatusCode != 503 {
		t.Errorf("request to a partitioned replica: %d, want 503", r.StatusCode)
	}
	b.Partition(0, false)
	b.SetInPool(0, false)
	if r := post(t, ts.URL, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize"}); r.StatusCode != 503 {
		t.Errorf("no replica in the pool: %d, want 503", r.StatusCode)
	}
}

// A backend set with a Unix socket is reached through it: the replica
// serves on the socket alone, its URL names a port nobody listens on, and a
// session and a stream go through.
func TestBackendSocket(t *testing.T) {
	t.Parallel()
	s := replica.New(replica.Config{Sessions: topology.SessionsLocal, Events: topology.EventsMemory, Store: store.NewMemory(0, 0)})
	sock := filepath.Join(t.TempDir(), "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s}
	go hs.Serve(ln)
	t.Cleanup(func() { s.Kill(); hs.Close() })
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + closed.Addr().String()
	closed.Close()
	policy, _ := topology.NewPolicy("sticky", nil)
	b, _ := New(policy, nil)
	if err := b.SetBackend(0, dead, sock); err != nil {
		t.Fatal(err)
	}
	b.SetInPool(0, true)
	front := httptest.NewServer(b)
	defer front.Close()
	sid := initialize(t, front.URL)
	if sid == "" {
		t.Fatal("initialize through the socket got no session")
	}
	resp := call(t, front.URL, sid, 3, 10)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "streamed 3 events") {
		t.Fatalf("the stream through the socket: status %d, body %q; want 200 and the call's result", resp.StatusCode, body)
	}
	if err := b.SetBackend(0, dead, ""); err != nil {
		t.Fatal(err)
	}
	if resp := post(t, front.URL, sid, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("without the socket, to the dead port: status %d; want 503", resp.StatusCode)
	}
}
