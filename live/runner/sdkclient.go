package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/workload"
)

// sdkClient is a virtual client of flavour client.impl = "go-sdk": the
// official MCP Go SDK's client over its StreamableClientTransport, which
// makes every protocol decision itself (initialize, resume with
// Last-Event-ID, its own reconnect backoff, giving up). stormsim only
// watches:
//
//   - an http.RoundTripper under the SDK records every request (kind,
//     session, status, replica, when its body ended) and carries out the
//     drops by cancelling the open stream's request;
//   - the SDK's progress notifications and the call's result give the
//     receipts, with the progress as the logical index.
//
// It draws its calls, think times and drop instants from the same streams
// as a native client of the same id, so it makes the same calls. The SDK
// ignores client.max_concurrent_reconnects and the design's backoff
// settings: its own are what it is measured for.
type sdkClient struct {
	id    int32
	d     *designRun
	work  rand.PCG
	drops rand.PCG
	tr    http.RoundTripper

	// Only the client's goroutine touches these.
	client   *mcp.Client
	session  *mcp.ClientSession
	nextDrop int64
	renewAt  int64 // the application connects a new session from then on (app_reconnect); -1 none

	mu      sync.Mutex // guards the rest: the SDK's goroutines record too
	hist    history.History
	seq     int32 // the current call, -1 outside one
	e       int32
	reached int32 // highest logical index received in the current call
	streams []int // the current call's stream requests (200, SSE), in order
	cur     int   // the stream request now open, -1 for none
	cancel  context.CancelFunc
	gen     uint64
	why     map[int]history.DropCause // streams ended by a drop of ours
	// lastStream is each call's latest stream request, for the receipts.
	lastStream map[int32]int
	// An own server's progress values as indices, by call (nil for
	// stormsim's replicas), and its calls' results, indexed when the
	// history is sealed: the SDK may hand a call's last notifications
	// over after its result.
	progs     map[int32]*progressIndex
	results   []sdkResult
	awayUntil int64
	sealed    bool               // the history was handed over: record nothing more
	renewing  bool               // the session being connected replaces one after a failed call
	events    int32              // notifications the current call received
	overLimit string             // the cause, once the current call went over a limit (failOn)
	stopCall  context.CancelFunc // ends the current call (the limit); nil outside one
	// ids holds one copy of each session id the requests carry: the
	// ts-sdk clients' proxy reads a fresh copy from every request.
	ids history.Interner
}

func newSDKClient(d *designRun, id int32, tr http.RoundTripper) *sdkClient {
	c := &sdkClient{id: id, d: d, tr: tr, seq: -1, cur: -1, renewAt: -1, why: map[int]history.DropCause{}, lastStream: map[int32]int{}}
	workload.Seed(&c.work, &c.drops, d.sc.Seed, int(id))
	if d.own != nil {
		c.progs = map[int32]*progressIndex{}
	}
	c.client = mcp.NewClient(&mcp.Implementation{Name: "stormsim-go-sdk-client", Version: "1"},
		&mcp.ClientOptions{ProgressNotificationHandler: c.progress})
	return c
}

func (c *sdkClient) now() int64 { return c.d.now() }

// history seals the client's history and returns it: the SDK's goroutines
// may still be finishing a stream a call timeout cut, and record nothing
// once it is sealed.
func (c *sdkClient) history() *history.History {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	c.indexResults()
	return &c.hist
}

func (c *sdkClient) ident() int32 { return c.id }

// run is the client's life: arrive, call until the scenario ends, close.
func (c *sdkClient) run(ctx context.Context, arrival int64) {
	if !sleepUntil(ctx, c.d, arrival) {
		return
	}
	if mean := int64(c.d.sc.Workload.DropEvery); mean > 0 {
		c.nextDrop = arrival + workload.Exp(&c.drops, mean)
	}
	w := &c.d.sc.Workload
	defer func() {
		if c.session != nil {
			c.session.Close() //nolint:errcheck // the DELETE is recorded; its failure changes nothing
		}
	}()
	for seq := int32(0); ctx.Err() == nil; seq++ {
		if c.now() >= int64(c.d.sc.Duration) || (w.CallsPerClient > 0 && int(seq) >= w.CallsPerClient) {
			return
		}
		n, think := workload.Draw(w, &c.work)
		ok := c.call(ctx, seq, n)
		if ctx.Err() != nil || !ok && !w.ContinueAfterFailure {
			return
		}
		if !sleepUntil(ctx, c.d, c.now()+think) {
			return
		}
	}
}

// begin records the start of call seq of n events; with a server the user
// brings, its progress values are read by a progressIndex of the call's own
// and its length is what the arguments ask for (ownLength).
func (c *sdkClient) begin(seq, n int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq, c.e, c.reached, c.streams, c.cur = seq, n, -1, nil, -1
	c.events, c.overLimit = 0, ""
	c.hist.Calls = append(c.hist.Calls, history.Call{Client: c.id, Seq: seq, E: c.d.ownLength(n), Start: c.now(), End: -1})
	if c.progs != nil {
		p := newProgressIndex(c.d.own.Tool.Progress)
		p.reset(c.d.ownLength(n))
		p.absurd = &c.d.guard.absurdProgress
		c.progs[seq] = p
		delete(c.progs, seq-2) // its notifications are long over
	}
}

// call makes call seq of n events; false when it failed.
func (c *sdkClient) call(ctx context.Context, seq, n int32) bool {
	c.begin(seq, n)
	outcome, cause := clients.Completed, clients.CauseNone
	// The call timeout, as the native clients and the model apply it: the
	// SDK has none of its own.
	callCtx, deadline := ctx, int64(-1)
	if to := c.d.d.Client.CallTimeout; to > 0 {
		c.mu.Lock()
		deadline = c.hist.Calls[len(c.hist.Calls)-1].Start + int64(to)
		c.mu.Unlock()
		var cancel context.CancelFunc
		callCtx, cancel = context.WithDeadline(ctx, c.d.t0.Add(time.Duration(deadline)))
		defer cancel()
	}
	callCtx, stop := context.WithCancel(callCtx) // limitEvents ends the call
	defer stop()
	c.mu.Lock()
	c.stopCall = stop
	c.mu.Unlock()
	var err error
	renew := c.renewAt >= 0 && c.now() >= c.renewAt
	if renew {
		// The application replaces its session (client.app_reconnect):
		// Close sends a DELETE unless the session is known missing.
		c.renewAt = -1
		if c.session != nil {
			c.session.Close() //nolint:errcheck // the DELETE is recorded; its failure changes nothing
		}
		c.session = nil
	}
	if c.session == nil {
		tr := &mcp.StreamableClientTransport{Endpoint: c.d.endpoint, HTTPClient: &http.Client{Transport: c, CheckRedirect: c.d.guard.checkRedirect},
			MaxEventSize: c.d.guard.lim.EventBytes,
			// stormsim's calls need no server-initiated messages, and the
			// model's clients open no standalone stream.
			DisableStandaloneSSE: true}
		c.mu.Lock()
		c.renewing = renew
		c.mu.Unlock()
		c.session, err = c.client.Connect(callCtx, tr, nil)
		c.mu.Lock()
		c.renewing = false
		c.mu.Unlock()
	}
	var res *mcp.CallToolResult
	if err == nil {
		tok := history.Token(c.id, seq, 0)
		params := &mcp.CallToolParams{Name: "stream",
			Arguments: map[string]any{"events": n - c.d.resultOnly, "interval_ms": c.d.intervalMS, "bytes": c.d.sc.Workload.EventBytes}}
		if o := c.d.own; o != nil {
			// A server the user brings: its tool, the arguments template.
			params.Name, params.Arguments = c.d.tool, o.ToolArguments(int(n), c.d.intervalMS, c.d.sc.Workload.EventBytes)
		}
		params.SetProgressToken(tok)
		res, err = c.session.CallTool(callCtx, params)
	}
	if ctx.Err() != nil {
		c.finish(-1, 0, clients.CauseNone) // pending
		return true
	}
	switch {
	case err != nil && callCtx.Err() != nil:
		// Given up at the call timeout: a stream open then (or cut by
		// it) ended before its result, a drop (docs/domain.md §6).
		outcome, cause = clients.Failed, clients.CauseAbandoned
		c.mu.Lock()
		if k := len(c.streams); k > 0 {
			if r := &c.hist.Requests[c.streams[k-1]]; r.Closed == 0 || r.Closed >= deadline {
				c.why[c.streams[k-1]] = history.DropTimeout
			}
		}
		c.mu.Unlock()
	case err == nil && !res.IsError:
	case err == nil:
		outcome, cause = clients.Failed, clients.CauseError
	default:
		outcome, cause = clients.Failed, clients.CauseAbandoned
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			cause = clients.CauseError
		}
		if c.lastResumePurged() {
			cause = clients.CausePurged
		}
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.mu.Lock()
	if c.stopCall = nil; c.overLimit != "" {
		msg = c.overLimit
	}
	c.mu.Unlock()
	c.settle(c.now(), outcome, cause, msg)
	return outcome == clients.Completed
}

// settle ends the current call (finish) with the SDK's error, if any, and
// schedules the application's new session after a failure as
// client.app_reconnect says. With "never" it keeps this one: once the SDK
// failed its connection for good (go-sdk: a 404 is mcp.ErrSessionMissing),
// every later call fails at once without a request, or (ts-sdk) is sent
// with the dead id, as in the model. Both SDK harnesses end calls here.
func (c *sdkClient) settle(end int64, outcome clients.Outcome, cause clients.Cause, msg string) {
	c.finish(end, outcome, cause)
	c.mu.Lock()
	defer c.mu.Unlock()
	call := &c.hist.Calls[len(c.hist.Calls)-1]
	if msg != "" {
		call.Err = msg
	}
	if d, ok := c.d.d.Client.ReconnectAfter(); ok && outcome == clients.Failed && c.renewAt < 0 {
		c.renewAt = call.End + int64(d)
	}
}

// finish ends the current call: its result is a receipt on the stream open
// now, and every other stream of the call ended before the result came, so
// each is a drop.
func (c *sdkClient) finish(end int64, outcome clients.Outcome, cause clients.Cause) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := -1
	if len(c.streams) > 0 {
		last = c.streams[len(c.streams)-1]
	}
	if outcome == clients.Completed && last >= 0 {
		if c.progs != nil {
			c.results = append(c.results, sdkResult{ri: len(c.hist.Receipts), seq: c.seq, e: c.d.ownLength(c.e), p: c.progs[c.seq]})
		}
		c.hist.Receipts = append(c.hist.Receipts, history.Receipt{Client: c.id, Seq: c.seq, Index: c.e, T: end, Req: int32(last)})
	}
	for _, ri := range c.streams {
		r := &c.hist.Requests[ri]
		if ri == last && (outcome == clients.Completed || end < 0 || r.Closed == 0 && c.why[ri] != history.DropTimeout) {
			continue // carried the result, or open when the run ended (the SDK closes it then)
		}
		cause, ok := c.why[ri]
		if !ok {
			cause = history.DropServer
		}
		t := r.Closed
		if t == 0 {
			t = c.now()
		}
		if cause == history.DropTimeout && end >= 0 {
			t = min(t, end) // the timeout cut it, whenever the SDK noticed
		}
		c.hist.Drops = append(c.hist.Drops, history.Drop{Client: c.id, Seq: c.seq, T: t, Req: int32(ri), Cause: cause})
	}
	slices.SortStableFunc(c.hist.Drops, func(a, b history.Drop) int { return int(a.T - b.T) })
	call := &c.hist.Calls[len(c.hist.Calls)-1]
	call.End, call.Outcome, call.Cause = end, outcome, cause
	c.seq, c.streams, c.cur, c.cancel = -1, nil, -1, nil
}

// sdkResult is the result receipt of an own server's call, indexed once
// every notification of the call is in.
type sdkResult struct {
	ri  int // into hist.Receipts
	seq int32
	e   int32 // the length the arguments asked for (ownLength)
	p   *progressIndex
}

// indexResults gives each own-server result its index, one past what the
// server sent before it (progressIndex.result), and its call that length;
// a notification the SDK handed over after the result moves the result's
// time to it, the order in which the server sent them. c.mu is held.
func (c *sdkClient) indexResults() {
	for _, r := range c.results {
		rc := &c.hist.Receipts[r.ri]
		rc.Index = r.p.result(r.e)
		if call := &c.hist.Calls[r.seq]; call.E < rc.Index {
			call.E = rc.Index
		}
		for i := r.ri + 1; i < len(c.hist.Receipts); i++ {
			if x := &c.hist.Receipts[i]; x.Seq == r.seq && x.T > rc.T {
				rc.T = x.T
			}
		}
	}
	c.results = nil
}

// lastResumePurged reports whether the current call's last request was a
// resume answered 400: the SDK's answer to a purged replay.
func (c *sdkClient) lastResumePurged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.hist.Requests) - 1; i >= 0; i-- {
		r := &c.hist.Requests[i]
		if r.Seq != c.seq {
			return false
		}
		if r.Kind == clients.ReqResume {
			return r.Status == http.StatusBadRequest
		}
	}
	return false
}

// progress records a progress notification as the receipt of its index.
func (c *sdkClient) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	cl, seq, att, ok := history.ParseToken(tok)
	c.mu.Lock()
	defer c.mu.Unlock()
	// The SDK hands notifications to this handler on its own goroutine, so
	// a call's last notifications may come after CallTool returned its
	// result: they are receipts of that call all the same.
	if !ok || cl != c.id {
		return
	}
	if c.limitEvents(seq) {
		c.receive(seq, att, req.Params.Progress)
	}
}

// receive records a progress notification of call seq (attempt att) as the
// receipt of its index, on the call's latest stream: the value itself under
// stormsim's contract, or what a progressIndex makes of an own server's
// value. c.mu is held.
func (c *sdkClient) receive(seq, att int32, progress float64) {
	last, known := c.lastStream[seq]
	if !known || c.sealed {
		return
	}
	idx := int32(progress)
	if c.progs != nil {
		p := c.progs[seq]
		if p == nil || int(seq) >= len(c.hist.Calls) {
			return
		}
		idx = p.index(progress, att)
		if call := &c.hist.Calls[seq]; call.E < idx+1 {
			call.E = idx + 1
		}
	}
	c.hist.Receipts = append(c.hist.Receipts, history.Receipt{Client: c.id, Seq: seq, Attempt: att, Index: idx, T: c.now(), Req: int32(last)})
	if seq == c.seq {
		c.reached = max(c.reached, idx)
	}
}

// limitEvents counts a notification of call seq against
// limits.events_per_call; false once the call is over it, which ends the
// call. c.mu is held.
func (c *sdkClient) limitEvents(seq int32) bool {
	if seq != c.seq {
		return true
	}
	if c.events++; c.events <= int32(c.d.guard.lim.EventsPerCall) {
		return true
	}
	c.failOn(limEvents)
	return false
}

// failOn fails the current call on limit k, once: its cause is the
// limit's, and stopCall ends it. c.mu is held.
func (c *sdkClient) failOn(k int) {
	if c.overLimit == "" && c.stopCall != nil {
		c.overLimit = c.d.guard.hit(k)
		c.stopCall()
	}
}

// cut drops the open stream, as a native client's cut does: the SDK sees
// its connection fail and resumes on its own. away keeps the client's
// requests from leaving for that long.
func (c *sdkClient) cut(why int, away time.Duration, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel == nil || (gen != 0 && gen != c.gen) {
		return false
	}
	cause := history.DropRandom
	if why == cutFault {
		cause = history.DropFault
		c.awayUntil = c.now() + int64(away)
	}
	c.why[c.cur] = cause
	c.cancel()
	c.cancel, c.cur = nil, -1
	return true
}

// RoundTrip records one of the SDK's requests and watches its stream.
func (c *sdkClient) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	away := c.awayUntil - c.now()
	c.mu.Unlock()
	if away > 0 && !sleepUntil(req.Context(), c.d, c.now()+away) {
		return nil, req.Context().Err()
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	kind := sdkKind(req, body)
	if c.now() >= int64(c.d.sc.Duration+c.d.sc.Drain) {
		// The run is over: the SDK's own cleanup (notifications/cancelled,
		// the DELETE of its session) is outside the history, as a native
		// client sends nothing then.
		return c.tr.RoundTrip(req)
	}
	c.mu.Lock()
	if c.sealed {
		c.mu.Unlock()
		return c.tr.RoundTrip(req)
	}
	rec := history.Request{Client: c.id, Seq: c.seq, Attempt: -1, Kind: kind, Cursor: -1, Replica: -1,
		SessionID: c.ids.Of(req.Header.Get("Mcp-Session-Id")), BytesOut: int64(len(body))}
	rec.Session = rec.SessionID != ""
	if kind == clients.ReqCall || kind == clients.ReqResume {
		rec.Attempt = 0
	}
	if kind == clients.ReqResume {
		rec.Reconnect, rec.Cursor = true, c.reached
	}
	if c.renewing && (kind == clients.ReqInitialize || kind == clients.ReqDiscover && c.d.client.Discover) {
		rec.Reconnect = true // a re-initialize (or, under 2026-07-28, a new discover) after a failed call
	}
	rec.Sent = c.now()
	ri := len(c.hist.Requests)
	c.hist.Requests = append(c.hist.Requests, rec)
	c.mu.Unlock()

	ctx, cancel := context.WithCancel(req.Context())
	resp, err := c.tr.RoundTrip(req.WithContext(ctx))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sealed {
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = &watched{ReadCloser: resp.Body, c: c, ri: ri, cancel: cancel}
		return resp, nil
	}
	r := &c.hist.Requests[ri]
	r.Answered = c.now()
	if err != nil {
		cancel()
		r.Closed, r.Err = r.Answered, err.Error()
		return nil, err
	}
	r.Status = resp.StatusCode
	if n, err := strconv.Atoi(resp.Header.Get(lb.ReplicaHeader)); err == nil {
		r.Replica = n
	}
	if err := c.d.guard.limitResponse(kind == clients.ReqInitialize, resp); err != nil {
		resp.Body.Close()
		cancel()
		r.Closed, r.Err = r.Answered, err.Error()
		return nil, err
	}
	if kind == clients.ReqInitialize {
		r.SessionID = c.ids.Of(resp.Header.Get("Mcp-Session-Id"))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = c.d.guard.clampingRetry(resp.Body)
	}
	w := &watched{ReadCloser: resp.Body, c: c, ri: ri, cancel: cancel}
	resp.Body = w
	if resp.StatusCode == http.StatusOK && (kind == clients.ReqCall || kind == clients.ReqResume) && c.seq >= 0 {
		c.streams = append(c.streams, ri)
		c.lastStream[c.seq] = ri
		c.cur, c.cancel = ri, cancel
		c.gen++
		if mean := int64(c.d.sc.Workload.DropEvery); mean > 0 {
			now := c.now()
			for c.nextDrop <= now {
				c.nextDrop += workload.Exp(&c.drops, mean)
			}
			gen := c.gen
			due := c.nextDrop
			w.timer = time.AfterFunc(time.Duration(due-now), func() { c.d.host.timer(c.d.now() - due); c.cut(cutRandom, 0, gen) })
		}
	}
	return resp, nil
}

// sdkKind names a request the SDK sends.
func sdkKind(req *http.Request, body []byte) clients.Req {
	switch req.Method {
	case http.MethodGet:
		if req.Header.Get("Last-Event-ID") != "" {
			return clients.ReqResume
		}
		return clients.ReqStandalone
	case http.MethodDelete:
		return clients.ReqDelete
	}
	var m struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &m) //nolint:errcheck // an unreadable body is a request of no kind
	switch m.Method {
	case "initialize":
		return clients.ReqInitialize
	case "notifications/initialized":
		return clients.ReqInitialized
	case "tools/call":
		return clients.ReqCall
	case "server/discover":
		// The SDK's first request in every era (mcp/client.go, Connect):
		// a server of an earlier era refuses it, and the SDK falls back to
		// initialize.
		return clients.ReqDiscover
	}
	return clients.ReqNone
}

// watched is a response body that records when it ended and how many bytes
// it carried.
type watched struct {
	io.ReadCloser
	c      *sdkClient
	ri     int
	n      atomic.Int64 // Read and Close may come from different goroutines
	cancel context.CancelFunc
	timer  *time.Timer
	once   sync.Once
}

func (w *watched) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	w.n.Add(int64(n))
	if err != nil {
		w.end()
	}
	return n, err
}

func (w *watched) Close() error {
	err := w.ReadCloser.Close()
	w.end()
	return err
}

func (w *watched) end() {
	w.once.Do(func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		c := w.c
		c.mu.Lock()
		if !c.sealed {
			r := &c.hist.Requests[w.ri]
			r.Closed, r.BytesIn = c.now(), w.n.Load()
			if c.cur == w.ri {
				c.cur, c.cancel = -1, nil
			}
		}
		c.mu.Unlock()
		w.cancel()
	})
}

// sleepUntil sleeps until t (ns since the run began); false if ctx ended.
func sleepUntil(ctx context.Context, d *designRun, t int64) bool {
	wait := time.Duration(t - d.now())
	if wait <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		d.host.timer(d.now() - t)
		return true
	}
}
