// Package replica is the live engine's reference MCP server: one replica of
// a design, speaking Streamable HTTP (docs/domain.md §1) with sessions local to
// the process or shared in Redis, and events in no store, in memory or in
// Redis. Its one tool, "stream", sends N−1 progress notifications and then
// the result, at a fixed interval; every SSE event carries an id
// "<stream>_<index>" from the event store, the priming event taking index 0.
//
// A disconnect does not cancel a call, except in an era that cancels on
// close (protocol.Caps.CancelOnClose, 2026-07-28): there the call's work
// stops when its response stream closes. A GET with Last-Event-ID replays that
// stream's events after the cursor and then follows the call live: from the
// producer in this process, or, with shared sessions, from Redis while the
// producer's lease holds. Drain closes the streams with a retry hint, lets
// the calls finish up to the drain limit, and stops.
//
// What it answers is decided by package protocol, as the simulator's
// server model's is: this package learns the facts (the session table, the
// claim on a stream, the store) and writes the response.
//
//	srv := replica.New(replica.Config{Sessions: "local", Events: "memory", Store: store.NewMemory(10<<20, 64)})
//	http.Handle("/mcp", srv)
package replica

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// Config is a replica's design and settings; fixed once the server starts.
type Config struct {
	Slot, Slots int    // this replica's slot among Slots, for hash-minted session ids
	HashMint    bool   // mint session ids that hash back to Slot
	Sessions    string // topology.SessionsNone (stateless), SessionsLocal or SessionsShared
	Events      string // topology.EventsNone, EventsMemory or EventsRedis
	Era         string // protocol era; "" means protocol.DefaultEra
	// Replica is the design's [replica] block: retry hint and spread
	// (a zero spread means [1, 1]), drain, orphan lease, admission and
	// accept queue. Admission windows are Unix time / admit_interval; a
	// run starts on a window boundary (protocol.AlignStart).
	Replica topology.ReplicaConfig
	// Clock is the time admission reads; time.Now when nil.
	Clock func() time.Time

	// Allow is the Host and Origin names the replica answers to; the zero
	// Allow is loopback alone. Any other gets 403 (DNS rebinding).
	Allow protocol.Allow

	Store  store.Events // the event store; nil when Events is none
	Shared *store.Redis // sessions and leases, when Sessions is shared
	// NotifyRate is the notification workload (workload.notification_rate):
	// notifications per second on each listen stream; 0 sends none, and
	// the replica then declares no capability a listen stream delivers.
	NotifyRate float64
	// Log is the production log: a JSON line when a call starts ("start":
	// true) and one per event produced, each with the session, the stream,
	// the client's progress token, the index and the time; nil for none.
	Log io.Writer
}

// Server is one replica. It is safe for concurrent use: cfg is fixed at
// creation (caps with it), mu guards the maps and the drain state, logMu
// the log, admMu the admission state, the hint jitter and the drain count.
type Server struct {
	cfg    Config
	caps   protocol.Caps
	kill   context.CancelFunc // ends every running call: the process dies
	callsC context.Context

	mu       sync.Mutex
	sessions map[string]bool
	calls    map[string]*call // running calls by stream id
	live     map[string]bool  // streams with a connection open, by session and stream
	draining bool
	closing  chan struct{} // closed when open streams must end with a retry hint
	running  sync.WaitGroup

	logMu sync.Mutex

	// The counters (counts.go), kept apart from the log; cmu guards them.
	cmu      sync.Mutex
	counts   Counts
	byStream map[string]string // progress token by stream, for the calls run here
	frozen   bool

	admMu   sync.Mutex
	adm     protocol.Admission // admission windows, connection-rate bucket, accept queue
	rng     *mrand.Rand        // jitter of retry hints, seeded once from crypto/rand
	drained int                // streams a drain closed so far, for their hints

	listenEnd  chan struct{} // closed by a drain or a death: listen streams end (listen.go)
	listenOnce sync.Once
}

// call is one running tools/call; subscribers get its events as produced.
type call struct {
	session, stream string
	token           string // the client's progress token: the production log's join key
	logHead         []byte // the production log line after the index, up to the time
	logTail         []byte // and after the time
	logBuf          []byte // the line being written; only the producer's goroutine touches it
	total           int
	// cancel ends the call's work: the replica's death (every call), or,
	// in an era that cancels on close, its response stream closing.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	events []store.Event // every event produced, for subscribers that join late
	subs   []chan store.Event
	done   bool
}

// New returns a replica for cfg.
func New(cfg Config) *Server {
	if cfg.Era == "" {
		cfg.Era = protocol.DefaultEra
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Replica.RetryHintSpread == [2]float64{} {
		cfg.Replica.RetryHintSpread = [2]float64{1, 1}
	}
	events := cfg.Events
	if cfg.Store == nil {
		events = topology.EventsNone
	}
	if cfg.Slots == 0 {
		cfg.Slots = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	var seed [16]byte
	rand.Read(seed[:])
	rng := mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	return &Server{cfg: cfg, caps: protocol.CapsOf(cfg.Era, cfg.Sessions, events), kill: cancel, callsC: ctx, sessions: map[string]bool{}, calls: map[string]*call{},
		live: map[string]bool{}, closing: make(chan struct{}), rng: rng, listenEnd: make(chan struct{}),
		counts: Counts{Calls: map[string]*CallCount{}, ResultsByStream: map[string]int{}, Listeners: map[string]*ListenCount{}}, byStream: map[string]string{}}
}

func (s *Server) hasStore() bool { return s.caps.HasStore() }

func (s *Server) priming() bool { return s.caps.Priming }

// ServeHTTP implements the Streamable HTTP endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, why := s.cfg.Allow.Check(r.Host, r.Header.Get("Origin")); status != 0 {
		http.Error(w, why, status)
		return
	}
	switch r.Method {
	case http.MethodPost:
		msg, ok := readMessage(w, r)
		if ok && s.admit(w, r, postKind(msg)) {
			s.post(w, r, msg)
		}
	case http.MethodGet:
		kind := clients.ReqStandalone
		if r.Header.Get("Last-Event-ID") != "" {
			kind = clients.ReqResume
		}
		if s.admit(w, r, kind) {
			s.get(w, r)
		}
	case http.MethodDelete:
		s.delete(w, r)
	default:
		s.fail(w, protocol.NoMethod)
	}
}

// admit applies the design's admission rules and accept queue to a request
// of kind: a refused one is answered here, an admitted one waits its turn
// in the queue first. It reports whether the request goes on.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, kind clients.Req) bool {
	if !protocol.NewConn(kind) {
		return true
	}
	now := s.cfg.Clock().UnixNano()
	s.admMu.Lock()
	ans := s.adm.Admit(&s.cfg.Replica, now, kind, s.rng.Float64)
	var wait time.Duration
	if ans.OK() {
		wait, ans = s.adm.Enqueue(&s.cfg.Replica, now, s.rng.Float64)
	}
	s.admMu.Unlock()
	if !ans.OK() {
		s.fail(w, ans)
		return false
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

// fail writes an answer that is not served: its status, why, and the
// headers that go with it.
func (s *Server) fail(w http.ResponseWriter, a protocol.Answer) {
	if a.Draining {
		w.Header().Set(DrainingHeader, "1")
	}
	if a.RetryHint > 0 {
		// Whole seconds: protocol.RetryAfter rounded the hint.
		w.Header().Set("Retry-After", strconv.FormatInt(int64(a.RetryHint/time.Second), 10))
	}
	why := a.Why
	if why == "" {
		why = http.StatusText(a.Status)
	}
	http.Error(w, why, a.Status)
}

// rpcFail writes an answer that carries a JSON-RPC error (a.Code) for the
// request id: its status and the error.
func (s *Server) rpcFail(w http.ResponseWriter, id json.RawMessage, a protocol.Answer) {
	if a.Code == 0 {
		s.fail(w, a)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	e := map[string]any{"code": a.Code, "message": a.Why}
	if a.Data != nil {
		e["data"] = a.Data
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e}) //nolint:errcheck // the client reads what arrives
}

// DrainingHeader is set on the 503 a draining replica answers new work
// with (an initialize, a call): it refused the request before doing
// anything, so a load balancer may send it to another replica.
const DrainingHeader = "X-Stormsim-Draining"

// Healthy reports whether the replica takes new work (the LB's health check).
func (s *Server) Healthy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.draining
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// versionOK answers 400 to an MCP-Protocol-Version this replica's era does
// not speak, and reports whether the request may go on.
func (s *Server) versionOK(w http.ResponseWriter, r *http.Request) bool {
	status, why := protocol.CheckVersion(r.Header.Get("MCP-Protocol-Version"), s.cfg.Era)
	if status != 0 {
		http.Error(w, why, status)
	}
	return status == 0
}

// checkSession looks up the request's session id (returned) in the
// session table or, with shared sessions, in Redis.
func (s *Server) checkSession(r *http.Request) (string, protocol.Session) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return "", protocol.SessionMissing
	}
	if s.cfg.Sessions == topology.SessionsShared && s.cfg.Shared != nil {
		ok, err := s.cfg.Shared.SessionExists(r.Context(), id)
		if err != nil {
			return id, protocol.SessionUnavailable
		}
		if !ok {
			return id, protocol.SessionUnknown
		}
		return id, protocol.SessionKnown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sessions[id] {
		return id, protocol.SessionUnknown
	}
	return id, protocol.SessionKnown
}

// readMessage reads a POST's JSON-RPC message, answering a malformed one.
func readMessage(w http.ResponseWriter, r *http.Request) (rpcMessage, bool) {
	var msg rpcMessage
	// Read the whole body: a handler that streams its answer must not leave
	// the request body unread.
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	if err != nil || msg.JSONRPC != "2.0" || protocol.KindOf(msg.ID, msg.Method, msg.Result, msg.Error) == protocol.MsgInvalid {
		http.Error(w, "not a JSON-RPC 2.0 message", protocol.Malformed.Status)
		return msg, false
	}
	return msg, true
}

// postKind is the request a POSTed message is, as protocol knows them.
func postKind(msg rpcMessage) clients.Req {
	switch msg.Method {
	case "initialize":
		return clients.ReqInitialize
	case "notifications/initialized":
		return clients.ReqInitialized
	case "server/discover":
		return clients.ReqDiscover
	case protocol.MethodListen:
		if len(msg.ID) > 0 {
			return clients.ReqListen
		}
	case "tools/call":
		if len(msg.ID) > 0 {
			return clients.ReqCall
		}
	}
	return clients.ReqNone // tools/list and the rest: need a session, open nothing
}

// wire is what the revision's checks read of a POST (protocol.Check).
func wire(r *http.Request, msg rpcMessage) protocol.Wire {
	h := func(name string) (string, bool) {
		v, ok := r.Header[http.CanonicalHeaderKey(name)]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	w := protocol.Wire{Request: len(msg.ID) > 0, Method: msg.Method, Params: msg.Params}
	w.Version, w.VersionSent = h(protocol.HeaderVersion)
	w.MethodHead, w.MethodSent = h(protocol.HeaderMethod)
	w.NameHead, w.NameSent = h(protocol.HeaderName)
	return w
}

// serverInfo is how the replica names itself.
var serverInfo = map[string]any{"name": "stormsim-replica", "version": "0.1.0"}

// capabilities are what the replica offers: one tool, and from
// 2026-07-28, when it sends notifications, the list changes and resource
// updates its listen streams deliver (protocol.Caps.ListenCapabilities).
var capabilities = map[string]any{"tools": map[string]any{}}

func (s *Server) capabilities() map[string]any {
	c := s.caps.ListenCapabilities(s.cfg.NotifyRate > 0)
	if _, ok := c["tools"]; !ok {
		c["tools"] = map[string]any{}
	}
	return c
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
	if msg.Method == "initialize" {
		s.initialize(w, r, msg)
		return
	}
	if ans := s.caps.Check(wire(r, msg)); ans.Status != 0 {
		s.rpcFail(w, msg.ID, ans)
		return
	}
	if !s.versionOK(w, r) {
		return
	}
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	f := &facts{s: s, r: r}
	kind := postKind(msg)
	ans := s.caps.Serve(protocol.Request{Kind: kind, Draining: draining && (kind == clients.ReqDiscover || kind == clients.ReqListen)}, f)
	if !ans.OK() {
		s.rpcFail(w, msg.ID, ans)
		return
	}
	if protocol.Accepted(protocol.KindOf(msg.ID, msg.Method, msg.Result, msg.Error)) {
		w.WriteHeader(protocol.NoBody.Status) // a notification or a response has no answer
		return
	}
	if result, ok := s.caps.Builtin(msg.Method); ok {
		writeJSON(w, msg.ID, result)
		return
	}
	switch msg.Method {
	case "server/discover":
		writeJSON(w, msg.ID, s.caps.DiscoverResult(s.capabilities(), serverInfo))
	case "tools/list":
		writeJSON(w, msg.ID, s.caps.Result(msg.Method, map[string]any{"tools": []map[string]any{{
			"name":        "stream",
			"description": "Streams N-1 progress notifications, then the result.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"events": map[string]any{"type": "integer"}, "interval_ms": map[string]any{"type": "integer"}, "bytes": map[string]any{"type": "integer"}}},
		}}}, serverInfo))
	case "tools/call":
		s.toolCall(w, r, msg, f)
	case protocol.MethodListen:
		s.listen(w, r, msg)
	default:
		s.rpcFail(w, msg.ID, s.caps.NotFound(msg.Method))
	}
}

func (s *Server) initialize(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	f := &facts{s: s, r: r, create: true}
	ans := s.caps.Serve(protocol.Request{Kind: clients.ReqInitialize, Draining: draining}, f)
	if !ans.OK() {
		s.rpcFail(w, msg.ID, ans)
		return
	}
	if ans.Session {
		w.Header().Set("Mcp-Session-Id", f.session)
	}
	writeJSON(w, msg.ID, map[string]any{
		"protocolVersion": s.cfg.Era,
		"capabilities":    capabilities,
		"serverInfo":      serverInfo,
	})
}

// facts answers protocol's questions about one request (protocol.Facts)
// from the session table, the claims and the store, keeping what it learns
// for the handler: the session, the claim and the events read.
type facts struct {
	s      *Server
	r      *http.Request
	create bool // an initialize: Session creates the session

	session string
	checked bool
	found   protocol.Session

	stream  string
	index   int64
	closing <-chan struct{}
	release func() // of the claim; nil when not claimed
	read    error
	evs     []store.Event
}

var _ protocol.Facts = (*facts)(nil)

func (f *facts) Session() protocol.Session {
	if f.checked {
		return f.found
	}
	f.checked = true
	if !f.create {
		f.session, f.found = f.s.checkSession(f.r)
		return f.found
	}
	f.session, f.found = f.s.mintSession(), protocol.SessionKnown
	if f.s.cfg.Sessions == topology.SessionsShared && f.s.cfg.Shared != nil {
		if err := f.s.cfg.Shared.CreateSession(f.r.Context(), f.session); err != nil {
			f.found = protocol.SessionUnavailable
		}
		return f.found
	}
	f.s.mu.Lock()
	f.s.sessions[f.session] = true
	f.s.mu.Unlock()
	return f.found
}

func (f *facts) Claim() bool {
	closing, release, ok := f.s.claim(f.session, f.stream)
	f.closing, f.release = closing, release
	return ok
}

func (f *facts) Read() protocol.Read {
	f.evs, f.read = f.s.cfg.Store.After(f.r.Context(), f.session, f.stream, f.index)
	switch {
	case f.read == nil:
		return protocol.ReadOK
	case errors.Is(f.read, store.ErrPurged):
		return protocol.ReadPurged
	case errors.Is(f.read, store.ErrUnknownStream):
		// Not purged: the stream lives in another process's memory, or
		// died with it.
		return protocol.ReadUnknown
	}
	return protocol.ReadUnavailable
}

// mintSession returns an unguessable id; under hash routing one that hashes
// back to this replica's slot (docs/domain.md §4).
func (s *Server) mintSession() string {
	for {
		var b [16]byte
		rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		if !s.cfg.HashMint || topology.HashSlot(topology.SessionKey(id), s.cfg.Slots) == s.cfg.Slot {
			return id
		}
	}
}

type streamArgs struct {
	Events     int `json:"events"`
	IntervalMS int `json:"interval_ms"`
	Bytes      int `json:"bytes"`
}

func (s *Server) toolCall(w http.ResponseWriter, r *http.Request, msg rpcMessage, f *facts) {
	session := f.session
	var p struct {
		Name      string          `json:"name"`
		Arguments streamArgs      `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	p.Arguments.Events = 1 // a call that names no length streams its result alone
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Name != "stream" {
		writeError(w, msg.ID, protocol.CodeInvalidParams, "unknown tool or bad arguments")
		return
	}
	a := p.Arguments
	if a.Events < 1 || a.Events > 1_000_000 || a.IntervalMS < 0 || a.Bytes < 0 || a.Bytes > 1<<20 {
		writeError(w, msg.ID, protocol.CodeInvalidParams, "events must be 1..1000000, interval_ms ≥ 0, bytes 0..1048576")
		return
	}
	s.mu.Lock()
	if ans := s.caps.Serve(protocol.Request{Kind: clients.ReqCall, Draining: s.draining}, f); !ans.OK() {
		s.mu.Unlock()
		s.fail(w, ans)
		return
	}
	c := &call{session: session, stream: newStreamID(), total: a.Events}
	c.ctx, c.cancel = context.WithCancel(s.callsC)
	s.calls[c.stream] = c
	s.running.Add(1)
	s.mu.Unlock()
	closing, release, _ := s.claim(session, c.stream) // a new stream: nobody else has it
	defer release()
	go s.produce(c, msg.ID, p.Meta, a)
	s.stream(w, r, c, 0, true, closing)
}

func newStreamID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// produce runs a call: it appends every event to the store, logs it, and
// hands it to the subscribers. Only the replica's death stops it. A call
// whose _meta gave no progress token gets its N−1 events with empty data,
// as the priming event has, and no progress notification: progress may
// only name a token the client provided.
func (s *Server) produce(c *call, reqID, meta json.RawMessage, a streamArgs) {
	defer s.running.Done()
	defer func() {
		s.mu.Lock()
		delete(s.calls, c.stream)
		s.mu.Unlock()
		c.cancel()
	}()
	ctx := c.ctx
	tokJSON, progress := protocol.ProgressToken(meta)
	c.token = c.stream
	if progress {
		var token any
		json.Unmarshal(tokJSON, &token)
		c.token = fmt.Sprint(token)
		tokJSON, _ = json.Marshal(token)
	}
	padJSON, _ := json.Marshal(strings.Repeat("x", a.Bytes))
	c.logHead = logHead(c)
	if !s.countStart(c) {
		return // frozen for a hard stop: the process dies before it would produce
	}
	s.logLine(map[string]any{"session": c.session, "stream": c.stream, "token": c.token, "start": true, "t_ns": time.Now().UnixNano()})
	if s.priming() {
		s.emit(ctx, c, store.Event{Index: 0})
	}
	if s.cfg.Shared != nil && s.cfg.Sessions == topology.SessionsShared {
		s.cfg.Shared.StartCall(ctx, c.session, c.stream, reqID, s.lease())
	}
	pace := NewPacer(time.Now(), time.Duration(max(a.IntervalMS, 1))*time.Millisecond)
	defer pace.Stop()
	for i := 1; i <= a.Events; i++ {
		select {
		case <-ctx.Done():
			// The process died, or the client closed the stream in an era
			// that cancels on close: the rest is never produced.
			if cancelled := s.callsC.Err() == nil; cancelled {
				s.countKilled(c, true)
				s.logLine(map[string]any{"session": c.session, "stream": c.stream, "token": c.token, "cancelled": true, "t_ns": time.Now().UnixNano()})
				return
			}
			s.countKilled(c, false)
			return
		case now := <-pace.C():
			pace.After(now)
		}
		var data []byte
		switch {
		case i < a.Events && progress:
			data = progressData(padJSON, tokJSON, i, a.Events)
		case i == a.Events:
			data, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqID,
				"result": s.caps.Result("tools/call", map[string]any{"content": []map[string]any{{"type": "text", "text": fmt.Sprintf("streamed %d events", a.Events)}}}, serverInfo)})
		}
		s.emit(ctx, c, store.Event{Index: int64(i), Data: data, Final: i == a.Events})
		if s.cfg.Shared != nil && s.cfg.Sessions == topology.SessionsShared && i%10 == 0 {
			s.cfg.Shared.Lease(ctx, c.session, c.stream, s.lease())
		}
	}
}

func (s *Server) lease() time.Duration {
	if s.cfg.Replica.OrphanLease > 0 {
		return s.cfg.Replica.OrphanLease
	}
	return 5 * time.Second
}

// emit logs, stores and publishes one event. The log line goes first, so an
// event a SIGKILL catches between the two is produced and unstored, never
// stored and unproduced: another replica may replay whatever the store
// holds. A failed append leaves a gap in the store; the event still goes out
// live.
func (s *Server) emit(ctx context.Context, c *call, ev store.Event) {
	if s.cfg.Log != nil {
		line := logEvent(c, ev.Index, time.Now().UnixNano())
		s.logMu.Lock()
		s.cfg.Log.Write(line)
		s.logMu.Unlock()
	}
	if ev.Index >= 1 {
		s.countProduced(c) // before anyone can receive it
	}
	if s.hasStore() {
		s.cfg.Store.Append(ctx, c.session, c.stream, ev) //nolint:errcheck // a failed append is a gap, by design
	}
	c.mu.Lock()
	c.events = append(c.events, ev)
	for _, ch := range c.subs {
		ch <- ev
	}
	if ev.Final {
		c.done = true
		for _, ch := range c.subs {
			close(ch)
		}
		c.subs = nil
	}
	c.mu.Unlock()
}

// progHead opens a progress notification, up to its message.
const progHead = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"message":`

// progressData is the i-th progress notification of total: the bytes
// json.Marshal gives the map with these keys, built without reflection, for
// this runs for every event of every call.
func progressData(padJSON, tokJSON []byte, i, total int) []byte {
	data := make([]byte, 0, len(progHead)+len(padJSON)+len(tokJSON)+64)
	data = append(data, progHead...)
	data = append(data, padJSON...)
	data = append(data, `,"progress":`...)
	data = strconv.AppendInt(data, int64(i), 10)
	data = append(data, `,"progressToken":`...)
	data = append(data, tokJSON...)
	data = append(data, `,"total":`...)
	data = strconv.AppendInt(data, int64(total), 10)
	return append(data, "}}"...)
}

// logHead sets the fixed parts of c's production log lines.
func logHead(c *call) []byte {
	sess, _ := json.Marshal(c.session)
	strm, _ := json.Marshal(c.stream)
	tok, _ := json.Marshal(c.token)
	c.logTail = append(append([]byte(`,"token":`), tok...), "}\n"...)
	return append(append(append(append([]byte(`,"session":`), sess...), `,"stream":`...), strm...), `,"t_ns":`...)
}

// logEvent is the production log line of event index of c at tNS:
// {"index":…,"session":…,"stream":…,"t_ns":…,"token":…}, built by hand
// in c's one buffer, which the next line reuses: it runs for every event.
func logEvent(c *call, index, tNS int64) []byte {
	line := append(c.logBuf[:0], `{"index":`...)
	line = strconv.AppendInt(line, index, 10)
	line = append(line, c.logHead...)
	line = strconv.AppendInt(line, tNS, 10)
	c.logBuf = append(line, c.logTail...)
	return c.logBuf
}

// logLine writes one line of the production log, if there is one.
func (s *Server) logLine(rec map[string]any) {
	if s.cfg.Log == nil {
		return
	}
	line, _ := json.Marshal(rec)
	s.logMu.Lock()
	s.cfg.Log.Write(append(line, '\n'))
	s.logMu.Unlock()
}

// subscribe returns the events produced after index so far, and a channel
// of the later ones (closed after the final event).
func (c *call) subscribe(after int64) ([]store.Event, chan store.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var past []store.Event
	for _, e := range c.events {
		if e.Index > after {
			past = append(past, e)
		}
	}
	ch := make(chan store.Event, c.total+2)
	if c.done {
		close(ch)
	} else {
		c.subs = append(c.subs, ch)
	}
	return past, ch
}

func (c *call) unsubscribe(ch chan store.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.subs {
		if x == ch {
			c.subs = append(c.subs[:i], c.subs[i+1:]...)
			return
		}
	}
}

// sse writes SSE frames and flushes each at once. Only the stream's own
// goroutine uses it.
type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	buf []byte // the frame being written, reused by the next one
}

func (s *Server) openSSE(w http.ResponseWriter, session string) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	if session != "" {
		w.Header().Set("Mcp-Session-Id", session)
	}
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, true
}

// event writes one frame: the id <stream>_<index> when stream is not
// empty, then the data.
func (o *sse) event(stream string, index int64, data []byte) error {
	b := o.buf[:0]
	if stream != "" {
		b = append(append(b, "id: "...), stream...)
		b = append(strconv.AppendInt(append(b, '_'), index, 10), '\n')
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	o.buf = b
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	o.f.Flush()
	return nil
}

// hint is the retry hint for one stream a drain or an exit closes.
func (s *Server) hint() time.Duration {
	s.admMu.Lock()
	defer s.admMu.Unlock()
	h := protocol.DrainHint(&s.cfg.Replica, s.drained, s.rng.Float64)
	s.drained++
	return h
}

func (o *sse) retry(d time.Duration) {
	io.WriteString(o.w, "retry: "+strconv.FormatInt(d.Milliseconds(), 10)+"\n\n")
	o.f.Flush()
}

// stream sends a call's events after index to the client until the result,
// the client going away, or a drain closing the stream with a retry hint.
// The caller has claimed the stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, c *call, after int64, fresh bool, closing <-chan struct{}) {
	out, ok := s.openSSE(w, r.Header.Get("Mcp-Session-Id"))
	if !ok {
		return
	}
	if fresh {
		after = -1 // the priming event, if any, goes first
	}
	past, ch := c.subscribe(after)
	defer c.unsubscribe(ch)
	last := after
	if fresh && s.caps.CancelOnClose {
		// The call's own response stream: when it closes before the
		// result, for whatever reason, the call is cancelled.
		defer func() {
			if last < int64(c.total) {
				c.cancel()
			}
		}()
	}
	send := func(e store.Event) bool {
		if e.Index <= last {
			return true
		}
		last = e.Index
		id := "" // no event id: nothing to resume from
		if s.hasStore() {
			id = c.stream
		}
		if e.Final && !s.countResult(c.stream) {
			return false // frozen: nothing more goes out
		}
		return out.event(id, e.Index, e.Data) == nil && !e.Final
	}
	for _, e := range past {
		if !send(e) {
			return
		}
	}
	for {
		select {
		case e, open := <-ch:
			if !open || !send(e) {
				return
			}
		case <-r.Context().Done():
			return // the client went away; the call goes on unless it cancels
		case <-closing:
			// Events already handed over go out first: a drain that ends
			// as the call's last event is produced must not drop it.
			for pending := true; pending; {
				select {
				case e, open := <-ch:
					if !open || !send(e) {
						return
					}
				default:
					pending = false
				}
			}
			if s.priming() && last >= 0 { // polling with retry is new in 2025-11-25
				out.retry(s.hint())
			}
			return
		}
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if !s.versionOK(w, r) {
		return
	}
	f := &facts{s: s, r: r}
	kind := clients.ReqStandalone
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		kind = clients.ReqResume
		var err error
		if f.stream, f.index, err = parseEventID(last); err != nil && s.hasStore() {
			http.Error(w, err.Error(), protocol.Malformed.Status)
			return
		}
	}
	ans := s.caps.Serve(protocol.Request{Kind: kind}, f)
	if f.release != nil {
		defer f.release()
	}
	if !ans.OK() {
		s.fail(w, ans)
		return
	}
	if kind == clients.ReqStandalone {
		s.standalone(w, r, f.session)
		return
	}
	s.mu.Lock()
	c := s.calls[f.stream]
	s.mu.Unlock()
	if c != nil && c.session == f.session {
		// The producer runs here: follow it live from its events.
		s.stream(w, r, c, f.index, false, f.closing)
		return
	}
	s.replayAndFollow(w, r, f)
}

// claim gives a session's stream its one connection: it returns the
// channel that closes on a drain and the release to defer, or false when
// the stream already has a connection (a resume then gets 409). The claim
// is the session's: another session presenting the same stream id never
// holds up the owner's resume.
func (s *Server) claim(session, stream string) (<-chan struct{}, func(), bool) {
	key := session + "\x00" + stream
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live[key] {
		return nil, nil, false
	}
	s.live[key] = true
	return s.closing, func() {
		s.mu.Lock()
		delete(s.live, key)
		s.mu.Unlock()
	}, true
}

// replayAndFollow serves a resume of a call this replica does not run:
// replay from the store, then, with shared sessions, follow the producer
// through Redis until its result or until its lease runs out (an orphan).
// The caller has claimed the stream and read its events (f).
func (s *Server) replayAndFollow(w http.ResponseWriter, r *http.Request, f *facts) {
	session, stream, index, closing, evs := f.session, f.stream, f.index, f.closing, f.evs
	out, ok := s.openSSE(w, session)
	if !ok {
		return
	}
	last := index
	for _, e := range evs {
		if s.sendStored(out, stream, e) {
			return
		}
		last = e.Index
	}
	rs := s.cfg.Shared
	if rs == nil || s.cfg.Sessions != topology.SessionsShared {
		return // nothing to follow: the producer is gone with its process
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-closing:
			out.retry(s.hint())
			return
		default:
		}
		more, err := rs.Follow(r.Context(), session, stream, last, 500*time.Millisecond)
		if err != nil {
			return
		}
		for _, e := range more {
			if s.sendStored(out, stream, e) {
				return
			}
			last = e.Index
		}
		if len(more) == 0 {
			if held, err := rs.Leased(r.Context(), session, stream); err == nil && !held {
				// The producer died and its lease ran out: end with an error
				// so that the client re-issues the call (docs/domain.md §4).
				// It answers the call's request id, so that a client can
				// match it to the call (null only when the store lost it).
				var id any
				if raw, err := rs.CallID(r.Context(), session, stream); err == nil && len(raw) > 0 && json.Valid(raw) {
					id = json.RawMessage(raw)
				}
				data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
					"error": map[string]any{"code": -32000, "message": "call orphaned: its replica died"}})
				out.event("", 0, data)
				return
			}
		}
	}
}

// sendStored sends one event read from the store, counting a result; it
// reports whether the stream ends (the result went out, or the write failed).
func (s *Server) sendStored(out *sse, stream string, e store.Event) bool {
	if e.Final && !s.countResult(stream) {
		return true // frozen: nothing more goes out
	}
	return out.event(stream, e.Index, e.Data) != nil || e.Final
}

// standalone is the GET stream for server-initiated messages; this server
// sends none, so it stays open until the client or a drain ends it.
func (s *Server) standalone(w http.ResponseWriter, r *http.Request, session string) {
	out, ok := s.openSSE(w, session)
	if !ok {
		return
	}
	_ = out
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	select {
	case <-r.Context().Done():
	case <-closing:
	}
}

func parseEventID(id string) (string, int64, error) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, fmt.Errorf("bad Last-Event-ID %q", id)
	}
	n, err := strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("bad Last-Event-ID %q", id)
	}
	return id[:i], n, nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	if !s.versionOK(w, r) {
		return
	}
	f := &facts{s: s, r: r}
	ans := s.caps.Serve(protocol.Request{Kind: clients.ReqDelete}, f)
	if !ans.OK() {
		s.fail(w, ans)
		return
	}
	s.mu.Lock()
	delete(s.sessions, f.session)
	s.mu.Unlock()
	if s.cfg.Store != nil {
		s.cfg.Store.SessionClosed(r.Context(), f.session) //nolint:errcheck // best effort: retention removes the rest
	}
	w.WriteHeader(ans.Status)
}

// Drain stops taking work, closes the open streams with a retry hint (at
// once when the streams can resume elsewhere, else when the calls end), lets
// running calls finish up to the drain limit, then kills what is left.
func (s *Server) Drain() {
	s.endListens()
	s.mu.Lock()
	s.draining = true
	if s.caps.CloseOnDrain(s.cfg.Replica.DrainClose) {
		close(s.closing)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	limit := s.cfg.Replica.DrainLimit
	if limit <= 0 {
		limit = time.Minute
	}
	select {
	case <-done:
	case <-time.After(limit):
	}
	s.Kill()
	// The streams Kill closed end first, with what their calls produced
	// (a call's result among it): the caller freezes the counters next,
	// and a frozen replica sends no result.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		n := len(s.live)
		s.mu.Unlock()
		if n == 0 {
			break
		}
	}
}

// Kill ends every running call at once, as a crash does, and closes every
// open stream.
func (s *Server) Kill() {
	s.kill()
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func writeError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}
