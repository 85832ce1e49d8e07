package drift

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/internal/logbuf"
	"github.com/stormsim/stormsim/live/sdkreplica"
	"github.com/stormsim/stormsim/protocol"
)

// revision is the era these tests measure the SDK at.
const revision = "2026-07-28"

// breaker2026 is an MCP server of the 2026-07-28 revision: it answers
// server/discover with the revision alone, and every tools/call either with
// status (when it is not 200) or with an SSE stream that carries no event
// id (the revision has no resumption), one progress event, and then a
// reset connection. It records when each tools/call came and when each
// stream broke.
type breaker2026 struct {
	status int // the answer to every tools/call; 0 or 200 for the stream

	mu    sync.Mutex
	calls []time.Time
	broke []time.Time
}

func (b *breaker2026) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	json.Unmarshal(body, &m) //nolint:errcheck // an unreadable body is answered as a notification
	switch m.Method {
	case "server/discover":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":[%q],"capabilities":{"tools":{}},"resultType":"complete","_meta":{%q:{"name":"breaker","version":"1"}}}}`,
			m.ID, revision, protocol.MetaServerInfo)
	case "tools/call":
		b.mu.Lock()
		b.calls = append(b.calls, time.Now())
		b.mu.Unlock()
		if b.status != 0 && b.status != http.StatusOK {
			http.Error(w, http.StatusText(b.status), b.status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		tok, _ := json.Marshal(m.Params.Meta["progressToken"])
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1,\"total\":10}}\n\n", tok)
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		b.mu.Lock()
		b.broke = append(b.broke, time.Now())
		b.mu.Unlock()
		reset(w)
	default:
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
	}
}

// call2026 is what one go-sdk call against a breaker2026 did: the
// tools/call requests it sent (the first and every re-issue), the waits
// between a break (or a refusal) and the next request, whether CallTool
// returned an error, and how long after the last break or refusal it did.
type call2026 struct {
	Posts  int
	Delays []time.Duration
	Failed bool
	Err    string
	After  time.Duration
}

// goSDK2026Call runs the go-sdk client (its defaults: it negotiates
// 2026-07-28 through server/discover) for one call against b.
func goSDK2026Call(t *testing.T, b *breaker2026) call2026 {
	srv := httptest.NewServer(b)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "drift", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != revision {
		t.Fatalf("the client negotiated %q, want %s", v, revision)
	}
	params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{"events": 10}}
	params.SetProgressToken("drift")
	_, err = cs.CallTool(ctx, params)
	end := time.Now()
	// A re-issue would come after its backoff: wait out the longest first
	// delay the go-sdk profile allows, so that one is counted.
	time.Sleep(2*time.Second + slack(2*time.Second))
	b.mu.Lock()
	defer b.mu.Unlock()
	out := call2026{Posts: len(b.calls), Failed: err != nil}
	if err != nil {
		out.Err = err.Error()
	}
	if len(b.calls) == 0 {
		return out
	}
	last := b.calls[0]
	for i, at := range b.calls[1:] {
		if i < len(b.broke) {
			last = b.broke[i]
		}
		out.Delays = append(out.Delays, at.Sub(last))
	}
	if len(b.broke) > 0 {
		last = b.broke[len(b.broke)-1]
	}
	out.After = end.Sub(last)
	return out
}

// brain2026 drives the brain of profile p under 2026-07-28 through one
// call against the server a breaker2026 with status is, drawing its jitter
// from src: the tools/call requests it sends, the wait before each re-send
// and whether the call failed (false when it is left waiting for its call
// timeout, or still going after 50 steps).
func brain2026(p clients.Config, status int, src rand.Source) (posts int, waits []time.Duration, failed bool) {
	p.Discover = true
	b := clients.New(&p, rand.New(src))
	in := clients.Input{Kind: clients.InStartCall}
	for range 50 {
		a := b.Step(in)
		switch a.Kind {
		case clients.ActSend:
			switch {
			case a.Req != clients.ReqCall:
				in = clients.Input{Kind: clients.InResponse, Status: http.StatusOK}
			case status != 0 && status != http.StatusOK:
				posts++
				in = clients.Input{Kind: clients.InResponse, Status: status}
			default:
				posts++
				b.Step(clients.Input{Kind: clients.InResponse, Status: http.StatusOK})
				in = clients.Input{Kind: clients.InStreamEnd, Cursor: 1, NoResume: true}
			}
		case clients.ActWait:
			waits = append(waits, a.Delay)
			in = clients.Input{Kind: clients.InTimer}
		case clients.ActEndCall:
			return posts, waits, a.Outcome == clients.Failed
		default:
			return posts, waits, false
		}
	}
	return posts, waits, false
}

// drift2026 compares what the SDK did against a breaker2026 answering
// status with what profile p's brain does there: the requests (the call
// and its re-issues), each wait within the least and the most p's backoff
// gives, and whether the call failed.
func drift2026(p clients.Config, status int, m call2026) []string {
	var out []string
	posts, least, failed := brain2026(p, status, constSrc(0))
	_, most, _ := brain2026(p, status, constSrc(^uint64(0)))
	if posts != m.Posts {
		out = append(out, fmt.Sprintf("the SDK sent %d tools/call requests (%d re-issues), the profile %d (no_id %q, retry_on %q, max_retries %d)",
			m.Posts, m.Posts-1, posts, p.NoID, p.RetryOn, p.MaxRetries))
	}
	if failed != m.Failed {
		out = append(out, fmt.Sprintf("the SDK's call failed: %v (%s), the profile's: %v", m.Failed, m.Err, failed))
	}
	for n, d := range m.Delays {
		if n >= len(least) {
			break
		}
		if d < least[n]-early || d > most[n]+slack(most[n]) {
			out = append(out, fmt.Sprintf("wait before re-issue %d: the SDK waited %v, the profile says %v to %v", n+1, d.Round(time.Millisecond), least[n], most[n]))
		}
	}
	return out
}

// TestDrift2026GoSDK measures go-sdk v1.8's client at 2026-07-28 against
// the go-sdk profile under that era: a stream that breaks fails the call
// at once ("request terminated without response"), with no re-issue, as no
// event id ever came; a tools/call answered 503 fails it too, unretried.
func TestDrift2026GoSDK(t *testing.T) {
	t.Parallel()
	var broken, refused call2026
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); broken = goSDK2026Call(t, &breaker2026{}) }()
	go func() {
		defer wg.Done()
		refused = goSDK2026Call(t, &breaker2026{status: http.StatusServiceUnavailable})
	}()
	wg.Wait()
	t.Logf("go-sdk at %s: broken stream: %d tools/call, failed %v after %v (%s); 503: %d tools/call, failed %v (%s)",
		revision, broken.Posts, broken.Failed, broken.After.Round(time.Millisecond), broken.Err, refused.Posts, refused.Failed, refused.Err)
	if broken.Failed && broken.After > time.Second {
		t.Errorf("the call failed %v after its stream broke: not at once", broken.After)
	}
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return drift2026(p, 0, broken) },
		func(p *clients.Config) { p.NoID = clients.NoIDReissue })
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return drift2026(p, http.StatusServiceUnavailable, refused) },
		func(p *clients.Config) { p.RetryOn = clients.RetryOnAny })
}

// cutter stands between a client and a server: it forwards every request,
// and cuts an SSE stream right after its first event of method after
// ("notifications/progress" when ""), closing the connection to the server
// (which sees its response stream close) and resetting the client's. It
// counts the requests of method ("tools/call" when ""); with refuse set it
// answers each of them with that status instead of forwarding it. It
// records when it first cut or refused, and how many it had counted then.
type cutter struct {
	upstream string
	method   string
	after    string
	refuse   int

	mu     sync.Mutex
	cut    time.Time
	calls  int
	before int // calls when it first cut or refused
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if bytes.Contains(body, []byte(strconv.Quote(cmp.Or(c.method, "tools/call")))) {
		c.mu.Lock()
		c.calls++
		c.mu.Unlock()
		if c.refuse != 0 {
			c.stamp()
			http.Error(w, http.StatusText(c.refuse), c.refuse)
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, r.Method, c.upstream, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		io.Copy(w, resp.Body) //nolint:errcheck // the client reads what came
		return
	}
	br := bufio.NewReader(io.LimitReader(resp.Body, 1<<20))
	after, seen := cmp.Or(c.after, "notifications/progress"), false
	for {
		line, err := br.ReadString('\n')
		w.Write([]byte(line)) //nolint:errcheck // a failed write is a cut too
		w.(http.Flusher).Flush()
		if err != nil {
			return
		}
		seen = seen || strings.Contains(line, after)
		if seen && strings.TrimSpace(line) == "" {
			break // the event is through
		}
	}
	c.stamp()
	cancel()
	reset(w)
}

// stamp records the first cut or refusal.
func (c *cutter) stamp() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut.IsZero() {
		c.cut, c.before = time.Now(), c.calls
	}
}

// cancelled is what a go-sdk replica did after a cutter cut its call's
// stream: the events it produced after the cut, whether it logged the call
// cancelled and how long after the cut.
type cancelled struct {
	After     int
	Cancelled bool
	Latency   time.Duration
	Posts     int
	CallErr   string
}

// cutCall runs a go-sdk client at 2026-07-28 through a cutter against the
// go-sdk replica of cfg (its production log in log), one call of 40 events
// 50 ms apart, and reads the log once the call was cancelled or had time
// to end.
func cutCall(t *testing.T, cfg sdkreplica.Config) cancelled {
	log := &logbuf.Buffer{}
	cfg.Era, cfg.Revision, cfg.Log = revision, true, log
	up := httptest.NewServer(sdkreplica.New(cfg))
	defer up.Close()
	cut := &cutter{upstream: up.URL}
	front := httptest.NewServer(cut)
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "drift", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{"events": 40, "interval_ms": 50}}
	params.SetProgressToken("c0.0.0")
	_, err = cs.CallTool(ctx, params)
	var out cancelled
	if err != nil {
		out.CallErr = err.Error()
	}
	// The call's whole production takes 2 s: wait for its cancelled line
	// or for its end, and a little longer for a late event.
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ls := log.Lines(); strings.Contains(ls[len(ls)-1], `"cancelled"`) || strings.Contains(ls[len(ls)-1], `"index":40`) {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	cut.mu.Lock()
	at := cut.cut
	out.Posts = cut.calls
	cut.mu.Unlock()
	for _, l := range log.Lines() {
		var rec struct {
			Index     int   `json:"index"`
			Cancelled bool  `json:"cancelled"`
			TNS       int64 `json:"t_ns"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		when := time.Unix(0, rec.TNS)
		switch {
		case rec.Cancelled:
			out.Cancelled, out.Latency = true, when.Sub(at)
		case rec.Index > 0 && when.After(at):
			out.After++
		}
	}
	return out
}

// cancelDrift compares what the server did after the cut with caps: an
// era that cancels on close (CancelOnClose) stops the call's work at once
// (at most the events due in the quarter second a loaded machine may take
// to see the connection close: 5 of the 39 left), one that does not lets
// it run to its end.
func cancelDrift(caps protocol.Caps, m cancelled) []string {
	stopped := m.Cancelled && m.After <= 5
	if stopped != caps.CancelOnClose {
		return []string{fmt.Sprintf("cancel_on_close: after the stream closed the server produced %d more events (cancelled: %v), the era %s says cancel on close: %v",
			m.After, m.Cancelled, caps.Era, caps.CancelOnClose)}
	}
	return nil
}

// TestDrift2026GoSDKCancel measures what closing a response stream does on
// the go-sdk v1.8 stateless server at 2026-07-28, with a real go-sdk client
// and a cutter that cuts the stream after its first event: as the
// flavour's replicas run it (PropagateRequestCancellation), the call is
// cancelled at once, as the era's model says; with the SDK's default
// (Stateless alone), the call runs to its end. Either way the client's
// call fails and is not re-issued.
func TestDrift2026GoSDKCancel(t *testing.T) {
	t.Parallel()
	var flavour, sdkDefault cancelled
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); flavour = cutCall(t, sdkreplica.Config{}) }()
	go func() { defer wg.Done(); sdkDefault = cutCall(t, sdkreplica.Config{KeepRunning: true}) }()
	wg.Wait()
	t.Logf("go-sdk server at %s, the flavour: %d events after the cut, cancelled %v after %v; the SDK's default: %d events after the cut, cancelled %v",
		revision, flavour.After, flavour.Cancelled, flavour.Latency.Round(time.Millisecond), sdkDefault.After, sdkDefault.Cancelled)
	caps := protocol.CapsOf(revision, "", "")
	for _, d := range cancelDrift(caps, flavour) {
		t.Errorf("the model drifts from the go-sdk flavour's server: %s", d)
	}
	if flavour.Cancelled && flavour.Latency > time.Second {
		t.Errorf("the call was cancelled %v after its stream closed: not at once", flavour.Latency)
	}
	mut := caps
	mut.CancelOnClose = false
	if len(cancelDrift(mut, flavour)) == 0 {
		t.Error("cancel_on_close changed: the measurement shows no drift; the check cannot fail")
	}
	// The SDK's default is what docs/model.md reports: the revision's
	// rule does not hold there, and a call runs on for a client that left.
	if len(cancelDrift(caps, sdkDefault)) == 0 || sdkDefault.After < 30 {
		t.Errorf("the SDK's default stateless server: %d events after the cut, cancelled %v; docs/model.md says it runs the call to its end", sdkDefault.After, sdkDefault.Cancelled)
	}
	for name, m := range map[string]cancelled{"flavour": flavour, "SDK default": sdkDefault} {
		if m.CallErr == "" || m.Posts != 1 {
			t.Errorf("%s: the client's call ended with %q after %d tools/call, want an error and no re-issue", name, m.CallErr, m.Posts)
		}
	}
}

// listenWindow is how long after the first cut or refusal the listen
// requests are counted: past the longest wait of the go-sdk profile's
// backoff before a first re-open (2 s: 1 s and its additive jitter) by
// its slack, so that a re-open under "backoff" would have been seen.
const listenWindow = 3 * time.Second

// listen2026 is what a go-sdk client did with its subscriptions/listen
// stream: the listen requests it sent before the first cut or refusal, and
// within listenWindow after it.
type listen2026 struct {
	Before, After int
}

// goSDKListen connects a go-sdk client at 2026-07-28 that has a tools
// list-changed handler, through a cutter, to the go-sdk replica (stateless,
// which declares tools.listChanged and holds a listen stream open until it
// closes). The cutter cuts each listen stream once its acknowledgement is
// through or, with refuse set, answers each listen request with that
// status; the listen requests are counted until listenWindow after the
// first cut or refusal.
func goSDKListen(refuse int) (listen2026, error) {
	up := httptest.NewServer(sdkreplica.New(sdkreplica.Config{Era: revision, Revision: true}))
	defer up.Close()
	cut := &cutter{upstream: up.URL, method: protocol.MethodListen, after: protocol.MethodListenAck, refuse: refuse}
	front := httptest.NewServer(cut)
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "drift", Version: "1"},
		&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return listen2026{}, err
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != revision {
		return listen2026{}, fmt.Errorf("the client negotiated %q, want %s", v, revision)
	}
	var at time.Time
	for deadline := time.Now().Add(10 * time.Second); at.IsZero() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		cut.mu.Lock()
		at = cut.cut
		cut.mu.Unlock()
	}
	if at.IsZero() {
		return listen2026{}, fmt.Errorf("refuse %d: no listen stream was cut or refused within 10 s of Connect", refuse)
	}
	time.Sleep(time.Until(at.Add(listenWindow)))
	cut.mu.Lock()
	defer cut.mu.Unlock()
	return listen2026{Before: cut.before, After: cut.calls - cut.before}, nil
}

// listenBrain drives clients.Listener under profile p, with jitter from
// src, against the cutter: every listen request is refused (refused) or
// opens a stream that is cut at once. It returns the listen requests it
// sends within window of the first cut or refusal.
func listenBrain(p clients.Config, refused bool, window time.Duration, src rand.Source) int {
	var l clients.Listener
	l.Init(&p, rand.New(src))
	a, at, n := l.Open(), time.Duration(0), -1
	for a.Send && n < 100 {
		if at += a.Delay; at > window {
			break
		}
		n++
		if refused {
			a = l.Answered(http.StatusServiceUnavailable, 0)
			continue
		}
		l.Answered(http.StatusOK, 0)
		a = l.Dropped(0)
	}
	return max(n, 0)
}

// listenDrift compares the listen requests the SDK sent after its stream
// was cut (or its open refused) with what profile p's Listener sends in
// that window: at least as many as its longest waits fit in, at most as
// many as its shortest do.
func listenDrift(p clients.Config, refused bool, m listen2026) []string {
	lo := listenBrain(p, refused, listenWindow-slack(listenWindow), constSrc(^uint64(0)))
	hi := listenBrain(p, refused, listenWindow+early, constSrc(0))
	if m.After >= lo && m.After <= hi {
		return nil
	}
	what := "cut"
	if refused {
		what = "refused (503)"
	}
	return []string{fmt.Sprintf("listen_reopen: in the %v after its listen stream was %s the SDK sent %d listen requests (re-opened: %v), the profile (listen_reopen %q, base %v) sends %d to %d",
		listenWindow, what, m.After, m.After > 0, p.ListenReopen, p.Base, lo, hi)}
}

// TestDrift2026GoSDKListen measures go-sdk v1.8's client at 2026-07-28
// against the go-sdk profile's listen_reopen, through clients.Listener:
// Connect opens one subscriptions/listen stream (the client has a tools
// list-changed handler and the server declares tools.listChanged), and
// when that stream is cut after its acknowledgement, or when its open is
// answered 503, the SDK opens no other (mcp/shared.go line 160,
// mcp/transport.go line 283: the listen call is sent without awaiting
// it).
func TestDrift2026GoSDKListen(t *testing.T) {
	t.Parallel()
	var cut, refused listen2026
	var cutErr, refusedErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); cut, cutErr = goSDKListen(0) }()
	go func() { defer wg.Done(); refused, refusedErr = goSDKListen(http.StatusServiceUnavailable) }()
	wg.Wait()
	if err := errors.Join(cutErr, refusedErr); err != nil {
		t.Fatal(err)
	}
	t.Logf("go-sdk at %s: listen stream cut: %d listen requests before, %d in the %v after; open answered 503: %d before, %d after",
		revision, cut.Before, cut.After, listenWindow, refused.Before, refused.After)
	for what, m := range map[string]listen2026{"cut": cut, "refused": refused} {
		if m.Before != 1 {
			t.Errorf("%s: Connect sent %d listen requests, want 1 (the Listener's Open)", what, m.Before)
		}
	}
	backoff := func(p *clients.Config) { p.ListenReopen = clients.ListenReopenBackoff }
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return listenDrift(p, false, cut) }, backoff)
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return listenDrift(p, true, refused) }, backoff)
}
