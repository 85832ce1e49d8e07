package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/sse"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/workload"
)

// vclient is one virtual client: a goroutine that drives the same
// clients.Brain as the simulator, over net/http, and records its history.
// Only its own goroutine touches it, except cut, which the fault schedule
// and the timers call.
type vclient struct {
	id    int32
	d     *designRun
	brain *clients.Brain
	work  rand.PCG
	drops rand.PCG

	session   string
	seq       int32 // the current call's number; -1 before the first
	e         int32 // the current call's length
	think     int64
	attempt   int32  // the current attempt; -1 before the call's first POST
	tok       string // history.Token of the current attempt; "" before the call's first POST
	attempts  int32  // attempts begun in the current call
	stream    string // the server's stream id, from the event ids
	lastID    string // the last event id of the current attempt, as the server wrote it
	reached   int32  // highest index received on the current attempt, -1 if none
	events    int32  // events the current call received, over all its streams
	hasID     bool   // an event id of the current attempt was received
	callStart int64
	inCall    bool
	renewAt   int64 // the application connects a new session from then on (app_reconnect); -1 none
	done      bool  // no more calls
	awayUntil int64
	nextDrop  int64

	hist history.History // this client's part of the history
	prog *progressIndex  // an own server's progress values as indices; nil otherwise

	mu     sync.Mutex         // guards the fields below: the open stream, for cut
	cancel context.CancelFunc // ends the open call or resume stream; nil when none
	why    int                // why the stream is being cut, cutNone if it is not
	gen    uint64             // generation of the open stream
	away   time.Duration      // cutFault: how long to stay away
}

func newClient(d *designRun, id int32) *vclient {
	c := &vclient{id: id, d: d, seq: -1, attempt: -1, reached: -1, renewAt: -1}
	if d.own != nil {
		c.prog = newProgressIndex(d.own.Tool.Progress)
		c.prog.absurd = &d.guard.absurdProgress
	}
	workload.Seed(&c.work, &c.drops, d.sc.Seed, int(id))
	s1, s2 := d.seed()
	c.brain = clients.New(&d.client, rand.New(rand.NewPCG(s1, s2^uint64(id)*0x9e3779b97f4a7c15)))
	return c
}

func (c *vclient) now() int64 { return c.d.now() }

func (c *vclient) history() *history.History { return &c.hist }

func (c *vclient) ident() int32 { return c.id }

// run is the client's life: arrive, call until the scenario ends, finish.
func (c *vclient) run(ctx context.Context, arrival int64) {
	if _, ok := c.wait(ctx, arrival); !ok {
		return
	}
	if mean := int64(c.d.sc.Workload.DropEvery); mean > 0 {
		// As in the simulator: the first drop instant counts from arrival.
		c.nextDrop = arrival + workload.Exp(&c.drops, mean)
	}
	c.act(ctx, c.nextCall())
}

// nextCall draws the next call and hands it to the brain, or finishes the
// client when the scenario is over.
func (c *vclient) nextCall() clients.Action {
	w := &c.d.sc.Workload
	if c.done || c.now() >= int64(c.d.sc.Duration) || (w.CallsPerClient > 0 && int(c.seq+1) >= w.CallsPerClient) {
		c.done, c.inCall = true, false
		return c.brain.Step(clients.Input{Kind: clients.InFinish})
	}
	n, think := workload.Draw(w, &c.work)
	c.seq++
	c.e, c.think, c.attempt, c.attempts, c.reached, c.hasID, c.stream, c.lastID = n, think, -1, 0, -1, false, "", ""
	c.tok = ""
	c.events = 0
	c.callStart, c.inCall = c.now(), true
	c.hist.Calls = append(c.hist.Calls, history.Call{Client: c.id, Seq: c.seq, E: c.d.ownLength(n), Start: c.callStart, End: -1})
	if c.prog != nil {
		c.prog.reset(c.d.ownLength(n))
	}
	renew := c.renewAt >= 0 && c.callStart >= c.renewAt
	if renew {
		c.renewAt = -1
	}
	return c.brain.Step(clients.Input{Kind: clients.InStartCall, Renew: renew})
}

// act carries out the brain's decisions until the client is idle or the
// run ends.
func (c *vclient) act(ctx context.Context, a clients.Action) {
	for ctx.Err() == nil {
		switch a.Kind {
		case clients.ActIdle:
			return
		case clients.ActEndCall:
			call := &c.hist.Calls[len(c.hist.Calls)-1]
			call.End, call.Outcome, call.Cause = c.now(), a.Outcome, a.Cause
			c.inCall = false
			if a.Renew && c.renewAt < 0 {
				c.renewAt = call.End + int64(a.RenewAfter)
			}
			if a.Outcome == clients.Failed && !c.d.sc.Workload.ContinueAfterFailure {
				c.done = true
			} else if _, ok := c.wait(ctx, c.now()+c.think); !ok {
				return
			}
			a = c.nextCall()
		case clients.ActWait:
			in, ok := c.wait(ctx, max(c.now()+int64(a.Delay), c.awayUntil))
			if !ok {
				return
			}
			a = c.brain.Step(in)
		case clients.ActAwait:
			if !c.inCall {
				return
			}
			in, ok := c.wait(ctx, -1) // only the call timeout can end this
			if !ok {
				return
			}
			a = c.brain.Step(in)
		case clients.ActSend:
			if c.now() < c.awayUntil {
				in, ok := c.wait(ctx, c.awayUntil)
				if !ok {
					return
				}
				if in.Kind == clients.InCallTimeout {
					a = c.brain.Step(in)
					continue
				}
			}
			in, ok := c.send(ctx, a)
			if !ok {
				return
			}
			a = c.brain.Step(in)
		default:
			return
		}
	}
}

// timeoutAt is when the current call's timeout fires, or -1.
func (c *vclient) timeoutAt() int64 {
	if !c.inCall {
		return -1
	}
	return c.callStart + int64(c.brain.Config().CallTimeout)
}

// wait sleeps until `until` (-1: no limit) and returns InTimer, or returns
// InCallTimeout when the call times out first; false when the run ends.
func (c *vclient) wait(ctx context.Context, until int64) (clients.Input, bool) {
	to := c.timeoutAt()
	kind := clients.InTimer
	if to >= 0 && (until < 0 || to < until) {
		until, kind = to, clients.InCallTimeout
	}
	if until < 0 {
		<-ctx.Done()
		return clients.Input{}, false
	}
	t := time.NewTimer(time.Duration(until - c.now()))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return clients.Input{}, false
	case <-t.C:
		c.d.host.timer(c.now() - until)
		return clients.Input{Kind: kind}, true
	}
}

// body is the JSON-RPC message a request carries.
func (c *vclient) body(r clients.Req) []byte {
	var m map[string]any
	switch r {
	case clients.ReqInitialize:
		m = map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
			"protocolVersion": c.d.d.Era, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "stormsim", "version": "0.1.0"}}}
	case clients.ReqInitialized:
		m = map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}
	case clients.ReqCall:
		tok := history.Token(c.id, c.seq, c.attempt)
		if o := c.d.own; o != nil {
			// A server the user brings: its tool, the arguments template.
			m = map[string]any{"jsonrpc": "2.0", "id": tok, "method": "tools/call", "params": map[string]any{
				"name":      c.toolName(),
				"arguments": o.ToolArguments(int(c.e), c.d.intervalMS, c.d.sc.Workload.EventBytes),
				"_meta":     map[string]any{"progressToken": tok}}}
			break
		}
		m = map[string]any{"jsonrpc": "2.0", "id": tok, "method": "tools/call", "params": map[string]any{
			"name":      c.toolName(),
			"arguments": map[string]any{"events": c.e - c.d.resultOnly, "interval_ms": c.d.intervalMS, "bytes": c.d.sc.Workload.EventBytes},
			"_meta":     map[string]any{"progressToken": tok}}}
	case clients.ReqDiscover:
		m = map[string]any{"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": map[string]any{}}
	default:
		return nil
	}
	if c.d.client.Discover {
		// The revision's requests carry what the server needs to know in
		// their _meta.
		p, _ := m["params"].(map[string]any)
		if _, ok := m["id"]; ok && p != nil {
			meta, _ := p["_meta"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
			}
			meta[protocol.MetaVersion] = c.d.d.Era
			meta[protocol.MetaCapabilities] = map[string]any{}
			meta[protocol.MetaClientInfo] = map[string]any{"name": "stormsim", "version": "0.1.0"}
			p["_meta"] = meta
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// reqMethods are the JSON-RPC methods of the POSTed requests, for the
// revision's Mcp-Method header.
var reqMethods = [...]string{clients.ReqInitialize: "initialize", clients.ReqInitialized: "notifications/initialized",
	clients.ReqCall: "tools/call", clients.ReqDiscover: "server/discover"}

// toolName is the tool a call names: the own server's, or the replica's.
func (c *vclient) toolName() string {
	if c.d.own != nil {
		return c.d.tool
	}
	return "stream"
}

var methods = [...]string{clients.ReqInitialize: http.MethodPost, clients.ReqInitialized: http.MethodPost, clients.ReqCall: http.MethodPost, clients.ReqDiscover: http.MethodPost,
	clients.ReqResume: http.MethodGet, clients.ReqStandalone: http.MethodGet, clients.ReqDelete: http.MethodDelete}

// send makes one request and returns what the brain must hear next.
func (c *vclient) send(ctx context.Context, a clients.Action) (clients.Input, bool) {
	if a.Req == clients.ReqCall {
		c.attempt, c.attempts = c.attempts, c.attempts+1
		c.tok = history.Token(c.id, c.seq, c.attempt)
		c.reached, c.hasID, c.stream, c.lastID = -1, false, "", ""
	}
	rec := c.newRecord(a)
	body := c.body(a.Req)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.Reconnect && c.d.reconnSem != nil {
		// The client-side cap on concurrent reconnects, as in the
		// simulator: wait for a slot, held until the answer arrives.
		select {
		case c.d.reconnSem <- struct{}{}:
		case <-ctx.Done():
			return clients.Input{}, false
		}
	}
	rec.BytesOut = int64(len(body))
	rec.Sent = c.now()
	resp, refused, err := c.d.guard.follow(c.d.target, func(u *url.URL) (*http.Response, error) {
		return c.d.http.Do(c.request(rctx, a, &rec, u, body))
	}, func(resp *http.Response) {
		// A redirect within the origin, followed: a request of its own.
		hop := rec
		hop.Answered, hop.Closed, hop.Status = c.now(), c.now(), resp.StatusCode
		c.record(hop)
		rec.Sent = c.now()
	})
	rec.Answered = c.now()
	if a.Reconnect && c.d.reconnSem != nil {
		<-c.d.reconnSem
	}
	if err != nil {
		rec.Closed, rec.Err = rec.Answered, err.Error()
		if ctx.Err() != nil {
			return clients.Input{}, false
		}
		c.record(rec)
		return clients.Input{Kind: clients.InResponse, Status: http.StatusServiceUnavailable}, true
	}
	if refused != nil {
		rec.Err = refused.Error() // the answer's status fails the call
	}
	rec.Status = resp.StatusCode
	rec.Replica = -1
	if n, err := strconv.Atoi(resp.Header.Get(lb.ReplicaHeader)); err == nil {
		rec.Replica = n
	}
	in := clients.Input{Kind: clients.InResponse, Status: resp.StatusCode, RetryHint: c.d.guard.hint(resp.Header.Get("Retry-After"))}
	streamed := resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if streamed && a.Req == clients.ReqStandalone {
		// The standalone stream never carries the call's events; the brain
		// now waits for the call timeout, so the stream is not kept open.
		resp.Body.Close()
		rec.Closed = c.now()
		c.record(rec)
		return in, true
	}
	if streamed && (a.Req == clients.ReqCall || a.Req == clients.ReqResume) {
		idx := c.record(rec)
		c.brain.Step(in) // 200: the brain awaits the stream
		return c.readStream(ctx, cancel, resp, idx)
	}
	return c.plain(a, rec, in, resp)
}

// newRecord is the history's record of the request a makes.
func (c *vclient) newRecord(a clients.Action) history.Request {
	seq := c.seq
	if !c.inCall {
		seq = -1
	}
	rec := history.Request{Client: c.id, Seq: seq, Attempt: -1, Kind: a.Req, Reconnect: a.Reconnect, Reissue: a.Reissue,
		Session: a.Req != clients.ReqInitialize && c.brain.HasSession() && c.session != "", Cursor: -1}
	if a.Req == clients.ReqCall || a.Req == clients.ReqResume {
		rec.Attempt = c.attempt
	}
	if rec.Session {
		rec.SessionID = c.session
	}
	if a.Req == clients.ReqResume {
		rec.Cursor = int32(a.Cursor)
	}
	return rec
}

// request is the HTTP request a makes to u (the endpoint, or where a
// redirect within its origin points), with rec's session and cursor.
func (c *vclient) request(ctx context.Context, a clients.Action, rec *history.Request, u *url.URL, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, methods[a.Req], u.String(), bytes.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.Req != clients.ReqInitialize {
		req.Header.Set("MCP-Protocol-Version", c.d.d.Era)
	}
	if c.d.client.Discover && methods[a.Req] == http.MethodPost {
		// The revision's headers repeat the method and the tool.
		req.Header.Set(protocol.HeaderMethod, reqMethods[a.Req])
		if a.Req == clients.ReqCall {
			req.Header.Set(protocol.HeaderName, c.toolName())
		}
	}
	if rec.Session {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if a.Req == clients.ReqResume {
		if c.d.own != nil || c.d.opaqueIDs {
			// Another server's ids need not be <stream>_<index>: resume
			// from the last id it sent, as the SDK clients do.
			req.Header.Set("Last-Event-ID", c.lastID)
		} else {
			req.Header.Set("Last-Event-ID", c.stream+"_"+strconv.Itoa(a.Cursor))
		}
	}
	return req
}

// plain reads an answer that is not a stream: an error status, a session,
// or a call's whole result as one JSON message.
func (c *vclient) plain(a clients.Action, rec history.Request, in clients.Input, resp *http.Response) (clients.Input, bool) {
	lim := c.d.guard.lim
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(lim.BodyBytes)+1))
	resp.Body.Close()
	rec.Closed, rec.BytesIn = c.now(), int64(len(b))
	sid := resp.Header.Get("Mcp-Session-Id")
	switch {
	case len(b) > lim.BodyBytes:
		rec.Err = c.d.guard.hit(limBody)
	case a.Req == clients.ReqInitialize && len(sid) > lim.SessionIDBytes:
		rec.Err = c.d.guard.hit(limSession)
	}
	if rec.Err != "" {
		// Over a limit: the request failed, whatever its status said.
		c.record(rec)
		return clients.Input{Kind: clients.InResponse, Status: http.StatusBadGateway}, true
	}
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(b, []byte("purged")) {
		rec.Purged, in.Purged = true, true
	}
	if a.Req == clients.ReqInitialize && resp.StatusCode/100 == 2 {
		c.session = sid
		in.Session = c.session != ""
		rec.SessionID = c.session
	}
	if a.Req != clients.ReqCall || resp.StatusCode != http.StatusOK {
		c.record(rec)
		return in, true
	}
	// A plain JSON answer: the whole result at once, or an error.
	p := parseData(b, c.e)
	if kind := c.protocolError(p); kind != "" {
		rec.Err = kind
		c.d.guard.protocol(kind)
		p.result, p.rpcErr = false, true
	}
	switch {
	case p.result:
		idx := c.record(rec)
		e := c.e
		if c.prog != nil {
			e = c.prog.result(c.d.ownLength(c.e))
			c.grow(e)
		}
		c.hist.Receipts = append(c.hist.Receipts, history.Receipt{Client: c.id, Seq: c.seq, Attempt: c.attempt, Index: e, T: rec.Closed, Req: int32(idx)})
		c.brain.Step(in)
		return clients.Input{Kind: clients.InStreamEnd, Result: true}, true
	case p.rpcErr:
		if rec.Err == "" {
			rec.Err = "JSON-RPC error: " + strings.TrimSpace(string(b))
		}
		idx := c.record(rec)
		c.brain.Step(in)
		c.hist.Drops = append(c.hist.Drops, history.Drop{Client: c.id, Seq: c.seq, T: rec.Closed, Req: int32(idx), Cause: history.DropError})
		return clients.Input{Kind: clients.InStreamEnd, RPCError: true, Cursor: int(c.reached), HasID: c.hasID}, true
	}
	rec.Err = "200 without a stream or a JSON-RPC answer"
	c.record(rec)
	return clients.Input{Kind: clients.InResponse, Status: http.StatusServiceUnavailable}, true
}

// protocolError is the kind of protocol error a message of the current
// call is, "" for none: invalid JSON, or a response that does not answer
// the call.
func (c *vclient) protocolError(p parsed) string {
	switch {
	case p.invalid:
		return protoInvalidJSON
	case p.result || p.rpcErr:
		return answers(p, c.id, c.seq)
	}
	return ""
}

// grow makes the current call at least e events long: an own server's call
// is as long as what it sent before its result (see progressIndex).
func (c *vclient) grow(e int32) {
	if call := &c.hist.Calls[len(c.hist.Calls)-1]; call.E < e {
		call.E = e
	}
}

func (c *vclient) record(r history.Request) int {
	c.hist.Requests = append(c.hist.Requests, r)
	return len(c.hist.Requests) - 1
}

// countingReader counts the bytes of a response body.
type countingReader struct {
	r io.Reader
	n *int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	*r.n += int64(n)
	return n, err
}

// message is what the client reads from an event's data.
type message struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		ProgressToken any      `json:"progressToken"`
		Progress      *float64 `json:"progress"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// parsed is what an event's data says.
type parsed struct {
	index    int32 // -1 when the data names no index
	progress float64
	isProg   bool // a progress notification: progress is its value
	token    string
	result   bool
	rpcErr   bool
	invalid  bool   // the data is not JSON
	rawID    string // a response's id as JSON
}

// parseData reads an event's JSON-RPC message. The reference replica's
// messages are read by a fast scan (they are compact JSON with sorted keys);
// anything else goes through encoding/json.
func parseData(data []byte, e int32) parsed {
	if p, ok := scanData(data, e); ok {
		return p
	}
	p := parsed{index: -1}
	var m message
	if json.Unmarshal(data, &m) != nil {
		p.invalid = true
		return p
	}
	switch {
	case m.Method == "notifications/progress":
		if m.Params.Progress != nil {
			// The reference contract's index; an own server's value is
			// read by progressIndex, whatever its shape.
			p.progress, p.isProg = *m.Params.Progress, true
			p.index = int32(math.Max(math.Min(p.progress, math.MaxInt32), 0))
		}
		p.token, _ = m.Params.ProgressToken.(string)
	case m.Result != nil:
		p.index, p.result, p.rawID = e, true, string(m.ID)
		json.Unmarshal(m.ID, &p.token) //nolint:errcheck // a non-string id names no attempt
	case m.Error != nil:
		p.rpcErr, p.rawID = true, string(m.ID)
		json.Unmarshal(m.ID, &p.token) //nolint:errcheck // a non-string id names no attempt
	}
	return p
}

// scanData is parseData's fast path for compact JSON without escapes in the
// fields it reads; false sends the message to encoding/json. It reads data
// in place (the SSE reader's buffer) and copies out only the strings it
// returns.
func scanData(data []byte, e int32) (parsed, bool) {
	p := parsed{index: -1}
	str := func(key string) (string, bool) {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return "", false
		}
		rest := data[i+len(key):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
			return "", false
		}
		return string(rest[:j]), true
	}
	switch {
	case bytes.HasPrefix(data, []byte(`{"jsonrpc":"2.0","method":"notifications/progress",`)):
		i := bytes.Index(data, []byte(`"progress":`))
		if i < 0 {
			return p, false
		}
		rest := data[i+len(`"progress":`):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 || j == len(rest) || (rest[j] != ',' && rest[j] != '}') {
			return p, false
		}
		n, err := strconv.Atoi(string(rest[:j])) // no allocation: the conversion does not escape
		if err != nil {
			return p, false
		}
		p.index, p.progress, p.isProg = int32(n), float64(n), true
		p.token, _ = str(`"progressToken":"`)
		return p, true
	case bytes.HasPrefix(data, []byte(`{"id":"`)) && bytes.Contains(data, []byte(`,"result":`)):
		tok, ok := str(`{"id":"`)
		p.index, p.result, p.token, p.rawID = e, true, tok, `"`+tok+`"`
		return p, ok
	}
	return p, false
}

// Reasons a stream was cut by the client side.
const (
	cutNone = iota
	cutRandom
	cutFault
	cutTimeout
)

// setStream makes cancel the open stream's (nil: none) and clears the
// reason of the last cut. It returns that reason and the new stream's
// generation.
func (c *vclient) setStream(cancel context.CancelFunc) (why int, away time.Duration, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	why, away = c.why, c.away
	c.cancel, c.why, c.away = cancel, cutNone, 0
	if cancel != nil {
		c.gen++
	}
	return why, away, c.gen
}

// cut closes the client's open stream for a reason; false when none is open
// or it is already being cut. gen, when not 0, must be the open stream's
// generation: a timer of a stream that has ended cannot cut the next one.
// The fault schedule and the timers call it from other goroutines.
func (c *vclient) cut(why int, away time.Duration, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel == nil || c.why != cutNone || (gen != 0 && gen != c.gen) {
		return false
	}
	c.why, c.away = why, away
	c.cancel()
	return true
}

// readStream reads a call's SSE stream until its result, its end, a drop
// (random or a client-drop fault), the call timeout or the end of the run.
// It reads in the client's own goroutine; a drop or a timeout cancels the
// request, which ends the read.
func (c *vclient) readStream(ctx context.Context, cancel context.CancelFunc, resp *http.Response, ri int) (clients.Input, bool) {
	var nIn int64
	_, _, gen := c.setStream(cancel)
	if mean := int64(c.d.sc.Workload.DropEvery); mean > 0 {
		now := c.now()
		for c.nextDrop <= now {
			c.nextDrop += workload.Exp(&c.drops, mean)
		}
		due := c.nextDrop
		t := time.AfterFunc(time.Duration(due-now), func() { c.d.host.timer(c.d.now() - due); c.cut(cutRandom, 0, gen) })
		defer t.Stop()
	}
	if to := c.timeoutAt(); to >= 0 {
		t := time.AfterFunc(time.Duration(to-c.now()), func() { c.d.host.timer(c.d.now() - to); c.cut(cutTimeout, 0, gen) })
		defer t.Stop()
	}
	end := func() (int, time.Duration) {
		why, away, _ := c.setStream(nil)
		resp.Body.Close()
		r := &c.hist.Requests[ri]
		r.Closed, r.BytesIn = c.now(), nIn
		return why, away
	}
	drop := func(cause history.DropCause, in clients.Input) (clients.Input, bool) {
		c.hist.Drops = append(c.hist.Drops, history.Drop{Client: c.id, Seq: c.seq, T: c.now(), Req: int32(ri), Cause: cause})
		return in, true
	}
	var hint time.Duration
	rd := sse.NewReaderLimits(countingReader{resp.Body, &nIn}, c.d.guard.sseLimits())
	for {
		ev, data, err := rd.NextBytes()
		if err != nil {
			why, away := end()
			if err != io.EOF {
				c.hist.Requests[ri].Err = err.Error() // how the stream ended
			}
			if ctx.Err() != nil {
				return clients.Input{}, false // the run is over
			}
			if k := streamLimit(err); k >= 0 {
				c.hist.Requests[ri].Err = c.d.guard.hit(k)
				return drop(history.DropError, clients.Input{Kind: clients.InCallTimeout}) // a limit fails the call at once
			}
			in := clients.Input{Kind: clients.InStreamEnd, Cursor: int(c.reached), HasID: c.hasID && !c.d.noResume,
				RetryHint: hint, NoResume: c.d.noResume}
			switch why {
			case cutTimeout:
				// The stream ends before its result: a drop (docs/domain.md §6),
				// though nothing follows it.
				return drop(history.DropTimeout, clients.Input{Kind: clients.InCallTimeout})
			case cutRandom:
				return drop(history.DropRandom, in)
			case cutFault:
				c.awayUntil = c.now() + int64(away)
				return drop(history.DropFault, in)
			}
			return drop(history.DropServer, in)
		}
		if ev.HasRetry {
			hint = ev.Retry
			if ev.RetryClamped {
				c.d.guard.hintsClamped.Add(1)
			}
		}
		if c.events++; c.events > int32(c.d.guard.lim.EventsPerCall) {
			end()
			c.hist.Requests[ri].Err = c.d.guard.hit(limEvents)
			return drop(history.DropError, clients.Input{Kind: clients.InCallTimeout}) // a limit fails the call at once
		}
		idx, attempt, p := c.event(ev, data, ri)
		if kind := c.protocolError(p); kind != "" {
			end()
			c.hist.Requests[ri].Err = kind
			c.d.guard.protocol(kind)
			return drop(history.DropError, clients.Input{Kind: clients.InStreamEnd, RPCError: true, Cursor: int(c.reached), HasID: c.hasID})
		}
		own := c.prog != nil
		if idx >= 0 {
			rc := history.Receipt{Client: c.id, Seq: c.seq, Attempt: attempt, Index: idx, T: c.now(), Req: int32(ri)}
			if own && ev.HasID {
				rc.ID = ev.ID
			}
			c.hist.Receipts = append(c.hist.Receipts, rc)
			if attempt == c.attempt && idx > c.reached {
				c.reached = idx
			}
		}
		if p.result {
			end()
			return clients.Input{Kind: clients.InStreamEnd, Result: true}, true
		}
		if p.rpcErr {
			end()
			return drop(history.DropError, clients.Input{Kind: clients.InStreamEnd, RPCError: true, Cursor: int(c.reached), HasID: c.hasID})
		}
	}
}

// event reads one event of a call's stream (request ri): the index it
// delivers (-1 none), the attempt it belongs to, and its message.
func (c *vclient) event(ev sse.Event, data []byte, ri int) (int32, int32, parsed) {
	idx := int32(-1)
	attempt := c.attempt
	own := c.prog != nil
	if ev.HasID && (own || c.d.opaqueIDs) {
		// A server the user brings: the index comes from its progress
		// notifications alone, whatever its ids look like.
		if ev.ID != "" {
			c.lastID, c.hasID = ev.ID, true
		}
	} else if ev.HasID {
		if i := strings.LastIndexByte(ev.ID, '_'); i > 0 {
			if n, err := strconv.Atoi(ev.ID[i+1:]); err == nil {
				c.stream, c.hasID, idx = ev.ID[:i], true, int32(n)
			}
		}
	}
	if ev.HasID && c.d.iso != nil {
		c.d.iso.saw(c.id, c.seq, attempt, c.session, ev.ID, c.hist.Requests[ri].Replica)
	}
	var p parsed
	if !ev.HasData || len(data) == 0 {
		return idx, attempt, p
	}
	p = parseData(data, c.e)
	if p.index >= 0 {
		idx = p.index
	}
	// Nearly every event names the current attempt: a comparison with its
	// token spares the parse.
	if p.token == "" || p.token != c.tok {
		if cl, k, a, ok := history.ParseToken(p.token); ok && cl == c.id && k == c.seq {
			attempt = a
		}
	}
	switch {
	case p.invalid || ((p.result || p.rpcErr) && answers(p, c.id, c.seq) != ""):
		// A protocol error: the caller ends the stream on it.
	case own && p.isProg:
		idx = c.prog.index(p.progress, attempt)
		c.grow(idx + 1)
	case own && p.result:
		idx = c.prog.result(c.d.ownLength(c.e))
		c.grow(idx)
	}
	return idx, attempt, p
}
