package replica

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/topology"
)

// twoShared starts two replicas of redis-shared over one private redis-server.
func twoShared(t *testing.T, lease time.Duration) (*Server, *Server, *client, *client) {
	t.Helper()
	a, b, ca, cb, _ := twoSharedRedis(t, lease)
	return a, b, ca, cb
}

func twoSharedRedis(t *testing.T, lease time.Duration) (*Server, *Server, *client, *client, *redisd.Server) {
	t.Helper()
	srv, err := redisd.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
	rs := store.NewRedis(rdb, &store.RedisOptions{SessionTTL: time.Minute})
	mk := func() (*Server, *client) {
		s := New(Config{Sessions: topology.SessionsShared, Events: topology.EventsRedis,
			Store: rs, Shared: rs, Replica: topology.ReplicaConfig{RetryHint: 100 * time.Millisecond, OrphanLease: lease, DrainLimit: 5 * time.Second}})
		ts := httptest.NewServer(s)
		t.Cleanup(func() { s.Kill(); ts.Close() })
		return s, &client{t: t, url: ts.URL}
	}
	a, ca := mk()
	b, cb := mk()
	t.Cleanup(func() { rdb.Close(); srv.Close() })
	return a, b, ca, cb, srv
}

// SIGSTOP of the redis-server makes the shared-session replicas answer 503
// once the store call times out; after SIGCONT they recover.
func TestRedisOutageGives503(t *testing.T) {
	t.Parallel()
	_, _, ca, _, srv := twoSharedRedis(t, time.Second)
	ca.initialize()
	note := map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}
	if r := ca.do("POST", note, nil); r.StatusCode != 202 {
		t.Fatalf("before the outage: %d", r.StatusCode)
	}
	srv.Stop()
	if r := ca.do("POST", note, nil); r.StatusCode != 503 {
		t.Errorf("during the outage: %d, want 503", r.StatusCode)
	}
	srv.Cont()
	var status int
	for i := 0; i < 50 && status != 202; i++ {
		status = ca.do("POST", note, nil).StatusCode
		time.Sleep(20 * time.Millisecond)
	}
	if status != 202 {
		t.Errorf("after SIGCONT: %d, want 202", status)
	}
}

// A resume on another replica replays from Redis and follows the call live
// to its result.
func TestSharedResumeElsewhere(t *testing.T) {
	t.Parallel()
	_, _, ca, cb := twoShared(t, time.Second)
	ca.initialize()
	resp := ca.call(30, 10)
	first := readSSE(t, resp, 4)
	resp.Body.Close()
	cb.session = ca.session // the LB sent the resume to the other replica
	got := readSSE(t, cb.do("GET", nil, map[string]string{"Last-Event-ID": first[3].ID}), 0)
	if len(got) != 27 || !strings.Contains(got[26].Data, `"result"`) {
		t.Fatalf("resume on replica b gave %d events, last %+v", len(got), got[len(got)-1])
	}
	stream := first[3].ID[:strings.LastIndexByte(first[3].ID, '_')]
	for i, e := range got {
		if e.ID != fmt.Sprintf("%s_%d", stream, i+4) {
			t.Fatalf("event %d: id %s", i, e.ID)
		}
	}
}

// When the producing replica dies, a follower elsewhere ends the stream with
// a JSON-RPC error once the call's lease runs out.
func TestOrphanEndsWithError(t *testing.T) {
	t.Parallel()
	a, _, ca, cb := twoShared(t, 300*time.Millisecond)
	ca.initialize()
	resp := ca.call(1000, 20)
	first := readSSE(t, resp, 3)
	resp.Body.Close()
	a.Kill() // the producer dies
	cb.session = ca.session
	start := time.Now()
	got := readSSE(t, cb.do("GET", nil, map[string]string{"Last-Event-ID": first[2].ID}), 0)
	if len(got) == 0 || !strings.Contains(got[len(got)-1].Data, `"error"`) {
		t.Fatalf("the orphaned stream ended with %+v, want a JSON-RPC error", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the error came after %v", took)
	}
}

// TestNoNullID scans every answer of the replica to requests that carry an
// id, over every path that answers with a JSON-RPC message: initialize,
// tools/list, an unknown method, bad tool arguments, a call's stream to its
// result, and the error that ends an orphaned call's stream on another
// replica after its producer died. None may say "id":null, and the orphan
// error must carry the call's own id, so that a client can match it to the
// call (go-sdk fails its whole connection on a response it cannot match).
func TestNoNullID(t *testing.T) {
	t.Parallel()
	a, _, ca, cb := twoShared(t, 300*time.Millisecond)
	var bodies []string
	read := func(resp *http.Response) string {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies = append(bodies, string(b))
		return string(b)
	}
	ca.initialize()
	read(ca.do("POST", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}}, nil))
	read(ca.do("POST", map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, nil))
	read(ca.do("POST", map[string]any{"jsonrpc": "2.0", "id": 4, "method": "no/such"}, nil))
	read(ca.do("POST", map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
		"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 0}}}, nil))
	if s := read(ca.do("POST", map[string]any{"jsonrpc": "2.0", "id": "short-1", "method": "tools/call",
		"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 3, "interval_ms": 1, "bytes": 8}}}, nil)); !strings.Contains(s, `"id":"short-1"`) {
		t.Errorf("a call's stream did not end with its result for id short-1:\n%s", s)
	}
	// An orphan: the producer dies; the other replica follows the call
	// until its lease runs out, then ends the stream with an error.
	resp := ca.do("POST", map[string]any{"jsonrpc": "2.0", "id": "long-7", "method": "tools/call",
		"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 1000, "interval_ms": 20, "bytes": 8}}}, nil)
	first := readSSE(t, resp, 3)
	resp.Body.Close()
	a.Kill()
	cb.session = ca.session
	got := readSSE(t, cb.do("GET", nil, map[string]string{"Last-Event-ID": first[2].ID}), 0)
	if len(got) == 0 {
		t.Fatal("the orphaned stream ended with nothing")
	}
	last := got[len(got)-1].Data
	for _, e := range got {
		bodies = append(bodies, e.Data)
	}
	if !strings.Contains(last, "call orphaned") || !strings.Contains(last, `"id":"long-7"`) {
		t.Errorf("the orphaned stream ended with %s, want the orphan error for id long-7", last)
	}
	if len(bodies) != 5+len(got) {
		t.Fatalf("%d answers read", len(bodies))
	}
	for i, b := range bodies {
		if strings.Contains(b, `"id":null`) {
			t.Errorf("answer %d says \"id\":null though its request had an id: %s", i, b)
		}
	}
}
