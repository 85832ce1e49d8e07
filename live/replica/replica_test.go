package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/topology"
)

// sseEvent is one parsed SSE event.
type sseEvent struct {
	ID, Data string
	Retry    string
}

// readSSE parses an SSE body until it ends (or n events, when n > 0).
// scanners holds the scanner of each response readSSE reads.
var scanners sync.Map // *http.Response → *bufio.Scanner

func readSSE(t *testing.T, resp *http.Response, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	// One scanner per response: what a scanner read ahead of the n-th
	// event belongs to the next call (events that come in one read).
	v, ok := scanners.Load(resp)
	if !ok {
		fresh := bufio.NewScanner(resp.Body)
		fresh.Buffer(make([]byte, 1<<20), 1<<20)
		v, _ = scanners.LoadOrStore(resp, fresh)
	}
	sc := v.(*bufio.Scanner)
	if n == 0 {
		defer scanners.Delete(resp)
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out = append(out, cur)
				cur = sseEvent{}
				if n > 0 && len(out) == n {
					return out
				}
			}
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "data: "):
			cur.Data = line[6:]
		case strings.HasPrefix(line, "retry: "):
			cur.Retry = line[7:]
		}
	}
	return out
}

type client struct {
	t       *testing.T
	url     string
	session string
}

func (c *client) do(method string, body any, hdr map[string]string) *http.Response {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, c.url, rd)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if h := hdr["Host"]; h != "" {
		req.Host = h // net/http sends req.Host, not the header
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *client) initialize() *http.Response {
	resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}}, nil)
	resp.Body.Close()
	c.session = resp.Header.Get("Mcp-Session-Id")
	return resp
}

func (c *client) call(events, intervalMS int) *http.Response {
	return c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": events, "interval_ms": intervalMS, "bytes": 8},
			"_meta": map[string]any{"progressToken": "t"}}}, nil)
}

func newServer(t *testing.T, cfg Config) (*Server, *client) {
	t.Helper()
	srv := New(cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Kill(); ts.Close() })
	return srv, &client{t: t, url: ts.URL}
}

func memoryDesign() Config {
	return Config{Sessions: topology.SessionsLocal, Events: topology.EventsMemory,
		Store: store.NewMemory(0, 0), Replica: topology.ReplicaConfig{RetryHint: 250 * time.Millisecond, DrainLimit: 5 * time.Second}}
}

// initialize sets Mcp-Session-Id on a stateful server, and not on a stateless one.
func TestSessionHeader(t *testing.T) {
	t.Parallel()
	_, c := newServer(t, memoryDesign())
	if resp := c.initialize(); resp.StatusCode != 200 || c.session == "" {
		t.Errorf("stateful: %d, session %q", resp.StatusCode, c.session)
	}
	_, s := newServer(t, Config{Sessions: topology.SessionsNone, Events: topology.EventsNone})
	if resp := s.initialize(); resp.StatusCode != 200 || s.session != "" {
		t.Errorf("stateless: %d, session %q", resp.StatusCode, s.session)
	}
	resp := s.do("POST", map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("notification: %d, want 202", resp.StatusCode)
	}
}

// With a store, a priming event (an id, empty data) comes first; the call
// streams N−1 progress events and then the result.
func TestPrimingAndStream(t *testing.T) {
	t.Parallel()
	_, c := newServer(t, memoryDesign())
	c.initialize()
	resp := c.call(5, 1)
	evs := readSSE(t, resp, 0)
	if len(evs) != 6 || evs[0].Data != "" || !strings.HasSuffix(evs[0].ID, "_0") {
		t.Fatalf("events: %+v", evs)
	}
	for i, e := range evs[1:5] {
		if !strings.Contains(e.Data, `"notifications/progress"`) || !strings.HasSuffix(e.ID, fmt.Sprintf("_%d", i+1)) {
			t.Errorf("event %d: %+v", i+1, e)
		}
	}
	if !strings.Contains(evs[5].Data, `"result"`) {
		t.Errorf("last event: %+v", evs[5])
	}
}

// A disconnect does not cancel the call, and a resume replays only that
// stream's events after the cursor, then the rest live, through the result.
func TestDisconnectAndResume(t *testing.T) {
	t.Parallel()
	_, c := newServer(t, memoryDesign())
	c.initialize()
	other := c.call(3, 1) // another stream of the same session
	readSSE(t, other, 0)
	resp := c.call(40, 10)
	first := readSSE(t, resp, 3) // priming, 1, 2
	resp.Body.Close()            // the client drops
	time.Sleep(150 * time.Millisecond)
	cursor := first[2].ID
	stream := cursor[:strings.LastIndexByte(cursor, '_')]
	got := readSSE(t, c.do("GET", nil, map[string]string{"Last-Event-ID": cursor}), 0)
	if len(got) != 38 {
		t.Fatalf("resume gave %d events, want 38 (3..40)", len(got))
	}
	for i, e := range got {
		if e.ID != fmt.Sprintf("%s_%d", stream, i+3) {
			t.Fatalf("resumed event %d has id %s", i, e.ID)
		}
	}
	if !strings.Contains(got[37].Data, `"result"`) {
		t.Error("the resumed stream does not end with the result")
	}
}

// 404, 400, 409 and 405 come exactly where docs/domain.md §1 and §4 put them.
func TestStatusCodes(t *testing.T) {
	t.Parallel()
	_, c := newServer(t, memoryDesign())
	c.initialize()
	good := c.session
	c.session = "nope"
	if r := c.call(1, 1); r.StatusCode != 404 {
		t.Errorf("unknown session: %d, want 404", r.StatusCode)
	}
	c.session = ""
	if r := c.call(1, 1); r.StatusCode != 400 {
		t.Errorf("no session id: %d, want 400", r.StatusCode)
	}
	c.session = good
	resp := c.call(200, 20)
	evs := readSSE(t, resp, 2)
	if r := c.do("GET", nil, map[string]string{"Last-Event-ID": evs[1].ID}); r.StatusCode != 409 {
		t.Errorf("second connection to a live stream: %d, want 409", r.StatusCode)
	}
	resp.Body.Close()

	// Purged: a tiny memory store cannot replay an old cursor.
	cfg := memoryDesign()
	cfg.Store = store.NewMemory(64, 0)
	_, p := newServer(t, cfg)
	p.initialize()
	r := p.call(30, 1)
	evs = readSSE(t, r, 0)
	if r := p.do("GET", nil, map[string]string{"Last-Event-ID": evs[1].ID}); r.StatusCode != 400 {
		t.Errorf("purged replay: %d, want 400", r.StatusCode)
	}

	// No store: a GET with Last-Event-ID is 400; without one it opens the standalone stream.
	_, n := newServer(t, Config{Sessions: topology.SessionsLocal, Events: topology.EventsNone})
	n.initialize()
	if r := n.do("GET", nil, map[string]string{"Last-Event-ID": "abc_3"}); r.StatusCode != 400 {
		t.Errorf("resume without a store: %d, want 400", r.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", n.url, nil)
	req.Header.Set("Mcp-Session-Id", n.session)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 200 || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("standalone GET: %v %v", r, err)
	}

	// Stateless: GET and DELETE are 405.
	_, s := newServer(t, Config{Sessions: topology.SessionsNone, Events: topology.EventsNone})
	for _, m := range []string{"GET", "DELETE"} {
		if r := s.do(m, nil, nil); r.StatusCode != 405 {
			t.Errorf("stateless %s: %d, want 405", m, r.StatusCode)
		}
	}
}

// DELETE ends the session: its next request gets 404.
func TestDeleteEndsSession(t *testing.T) {
	t.Parallel()
	_, c := newServer(t, memoryDesign())
	c.initialize()
	if r := c.do("DELETE", nil, nil); r.StatusCode != 200 {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}
	if r := c.call(1, 1); r.StatusCode != 404 {
		t.Errorf("after DELETE: %d, want 404", r.StatusCode)
	}
}

// Drain closes a store-backed stream with a retry hint when sessions are
// shared (it can resume elsewhere), and refuses new calls.
func TestDrainSendsRetry(t *testing.T) {
	t.Parallel()
	cfg := memoryDesign()
	cfg.Replica.DrainClose = topology.DrainCloseStart
	srv, c := newServer(t, cfg)
	c.initialize()
	resp := c.call(100, 20)
	readSSE(t, resp, 2)
	go srv.Drain()
	rest := readSSE(t, resp, 0)
	if len(rest) == 0 || rest[len(rest)-1].Retry != "250" {
		t.Errorf("the drained stream ended with %+v, want a retry: 250", rest)
	}
	if r := c.call(1, 1); r.StatusCode != 503 {
		t.Errorf("a call while draining: %d, want 503", r.StatusCode)
	}
	if srv.Healthy() {
		t.Error("a draining replica reports healthy")
	}
}

// The hand-built progress notifications and production log lines are the
// bytes encoding/json gives the same maps.
func TestHandBuiltJSON(t *testing.T) {
	for _, tok := range []any{"c1.k2.a3", `we"ird\token`, "stream-id"} {
		pad, _ := json.Marshal(strings.Repeat("x", 7))
		tj, _ := json.Marshal(tok)
		got := progressData(pad, tj, 4, 9)
		want, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": tok, "progress": 4, "total": 9, "message": strings.Repeat("x", 7)}})
		if string(got) != string(want) {
			t.Errorf("progress:\n got %s\nwant %s", got, want)
		}
		c := &call{session: "s1", stream: "ab12", token: tok.(string)}
		c.logHead = logHead(c)
		line := logEvent(c, 5, 1234567890)
		wantLine, _ := json.Marshal(map[string]any{"session": "s1", "stream": "ab12", "token": tok, "index": 5, "t_ns": 1234567890})
		if string(line) != string(wantLine)+"\n" {
			t.Errorf("log line:\n got %s\nwant %s", line, wantLine)
		}
	}
}

// randString draws a string of up to 24 runes, quotes, backslashes,
// control characters, HTML's <>& and bytes that are no UTF-8 among them.
func randString(r *rand.Rand) string {
	pool := []string{"a", "Z", "0", "_", ".", `"`, `\`, "\n", "\t", "\x00", "\x1f", "<", ">", "&", "é", "\u2028", "😀", "\xff", "\xc3"}
	var b strings.Builder
	for range r.IntN(25) {
		b.WriteString(pool[r.IntN(len(pool))])
	}
	return b.String()
}

// The hand-built progress notifications and production log lines are
// encoding/json's bytes on random values too, and a call's reused log
// buffer gives each line whole.
func TestHandBuiltJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 1))
	for range 2000 {
		tok, sess, strm, pad := randString(r), randString(r), randString(r), randString(r)
		i, total := r.IntN(1<<20), r.IntN(1<<20)
		index, tNS := r.Int64()-r.Int64(), r.Int64()
		padJSON, _ := json.Marshal(pad)
		tokJSON, _ := json.Marshal(tok)
		want, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": tok, "progress": i, "total": total, "message": pad}})
		if got := progressData(padJSON, tokJSON, i, total); string(got) != string(want) {
			t.Fatalf("progress:\n got %s\nwant %s", got, want)
		}
		c := &call{session: sess, stream: strm, token: tok}
		c.logHead = logHead(c)
		for range 2 { // the second line reuses the first one's buffer
			wantLine, _ := json.Marshal(map[string]any{"session": sess, "stream": strm, "token": tok, "index": index, "t_ns": tNS})
			if line := logEvent(c, index, tNS); string(line) != string(wantLine)+"\n" {
				t.Fatalf("log line:\n got %s\nwant %s", line, wantLine)
			}
			index, tNS = index/3, tNS/7
		}
	}
}
