// Package sdkreplica is the go-sdk replica flavour: the same "stream" tool
// as the reference replica, served by the official MCP Go SDK's
// StreamableHTTPHandler with the SDK's own session handling and an
// mcp.EventStore (the SDK's MemoryEventStore, or stormsim's Redis store
// behind the SDK's interface).
//
// What this flavour shows is the SDK's behaviour, not stormsim's: its session
// ids, its event ids, its 404 for a session it does not hold and its answer
// to a purged replay. The SDK cannot share sessions between processes, so it
// serves local sessions only.
//
// Under 2026-07-28 (Config.Revision) the SDK serves the revision only in its
// stateless mode (StreamableHTTPOptions.Stateless), so every design is
// stateless there, with no event store, as the revision has no resumption.
// The replica sets PropagateRequestCancellation too: without it a v1.8.0
// stateless server lets a call whose response stream closed run to its end
// (mcp/streamable.go, serveStateless: the handler's context is tied to the
// request only for subscriptions/listen or with that option; internal/
// jsonrpc2/conn.go, NewConnection: otherwise the context never ends), where
// the revision says closing the stream cancels the call.
package sdkreplica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/live/store"
)

// Config configures a go-sdk replica.
type Config struct {
	// Stateless serves without sessions: no Mcp-Session-Id, no GET, no
	// resume.
	Stateless bool
	// Events stores the events for resumption; nil for none.
	Events mcp.EventStore
	// Log is the production log, in the reference replica's format: a start
	// line per call and a line per event produced, each with the client's
	// progress token. nil for none.
	Log io.Writer
	// Era is the design's protocol version: the replica answers every
	// initialize with it, as the reference replica does, whatever version
	// the client asks for (the SDK would otherwise answer the client's, or
	// its own latest). "" lets the SDK negotiate.
	Era string
	// Revision serves Era as the 2026-07-28 revision (protocol.Caps.Discover):
	// the SDK's stateless mode whatever Stateless says, no event store,
	// server/discover answering Era alone, and a call cancelled when its
	// response stream closes.
	Revision bool
	// KeepRunning leaves PropagateRequestCancellation off under Revision: the
	// SDK's default, in which a call runs on after its stream closed (the
	// drift tests measure both).
	KeepRunning bool
}

// Server is one go-sdk replica: an http.Handler for the MCP endpoint.
type Server struct {
	cfg     Config
	handler *mcp.StreamableHTTPHandler
	logMu   sync.Mutex
	// stopping is set once the process closes its connections (Stop): a
	// call whose context ends after that was killed, not cancelled.
	stopping atomic.Bool
}

// New returns a replica serving the "stream" tool.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg}
	var opts *mcp.ServerOptions
	hopts := &mcp.StreamableHTTPOptions{Stateless: cfg.Stateless, EventStore: cfg.Events}
	if cfg.Revision {
		// The revision's server speaks its era alone, as the reference
		// replica does (protocol.Caps.SupportedVersions).
		opts = &mcp.ServerOptions{SupportedProtocolVersions: []string{cfg.Era}}
		hopts = &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: !cfg.KeepRunning}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "stormsim-go-sdk-replica", Version: "1"}, opts)
	srv.AddTool(&mcp.Tool{
		Name:        "stream",
		Description: "streams events progress notifications, interval_ms apart, each carrying bytes of padding, then a result",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"events":{"type":"integer"},"interval_ms":{"type":"integer"},"bytes":{"type":"integer"}},"required":["events"]}`),
	}, s.stream)
	s.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, hopts)
	return s
}

// Stop marks the process as closing its connections: the calls that end
// from then on were killed with it, and their production logs say nothing
// of a cancellation.
func (s *Server) Stop() { s.stopping.Store(true) }

// ServeHTTP serves the MCP endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Era != "" && !s.cfg.Revision && r.Method == http.MethodPost {
		if err := s.pinEra(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	s.handler.ServeHTTP(w, r)
}

// maxBody bounds the request body pinEra reads; a tools/call of the stream
// tool is a few hundred bytes.
const maxBody = 1 << 20

// pinEra rewrites an initialize request's protocolVersion to the design's
// era, so that the SDK, which answers a version it supports with that
// version, answers the era. Any other request passes unchanged.
func (s *Server) pinEra(r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return fmt.Errorf("sdkreplica: reading the request: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"initialize"`)) {
		return nil
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || string(msg["method"]) != `"initialize"` {
		return nil // not a single initialize: the SDK answers it as it is
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return nil
	}
	params["protocolVersion"], _ = json.Marshal(s.cfg.Era)
	msg["params"], _ = json.Marshal(params)
	body, _ = json.Marshal(msg)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return nil
}

type streamArgs struct {
	Events     int `json:"events"`
	IntervalMS int `json:"interval_ms"`
	Bytes      int `json:"bytes"`
}

// stream is the tool: events-1 progress notifications, then the result,
// which is the call's last event. Each is logged before the SDK sends it.
func (s *Server) stream(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a streamArgs
	if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
		return nil, fmt.Errorf("bad arguments: %w", err)
	}
	if a.Events < 1 || a.Events > 1_000_000 || a.IntervalMS < 0 || a.Bytes < 0 || a.Bytes > 1<<20 {
		return nil, errors.New("events must be 1..1000000, interval_ms ≥ 0, bytes 0..1048576")
	}
	token := req.Params.GetProgressToken()
	tok := fmt.Sprint(token)
	session := ""
	if req.Session != nil {
		session = req.Session.ID()
	}
	s.log(map[string]any{"session": session, "token": tok, "start": true, "t_ns": time.Now().UnixNano()})
	pad := strings.Repeat("x", a.Bytes)
	tick := time.NewTicker(time.Duration(max(a.IntervalMS, 1)) * time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= a.Events; i++ {
		select {
		case <-ctx.Done():
			if s.cfg.Revision && !s.stopping.Load() {
				// The client closed the stream, which cancels the call
				// under the revision: the rest is never produced, and no
				// process died.
				s.log(map[string]any{"session": session, "token": tok, "cancelled": true, "t_ns": time.Now().UnixNano()})
			}
			return nil, ctx.Err()
		case <-tick.C:
		}
		s.log(map[string]any{"index": i, "session": session, "token": tok, "t_ns": time.Now().UnixNano()})
		if i == a.Events {
			break
		}
		if token != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ //nolint:errcheck // a lost notification is what the checker finds
				ProgressToken: token, Progress: float64(i), Total: float64(a.Events), Message: pad})
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "streamed " + strconv.Itoa(a.Events) + " events"}}}, nil
}

func (s *Server) log(rec map[string]any) {
	if s.cfg.Log == nil {
		return
	}
	line, _ := json.Marshal(rec)
	s.logMu.Lock()
	s.cfg.Log.Write(append(line, '\n')) //nolint:errcheck // a full disk loses log lines, not the run
	s.logMu.Unlock()
}

// EventStore adapts a stormsim store (Redis, in practice) to the SDK's
// mcp.EventStore: the SDK hands it data without an index, so it numbers
// each stream's events itself, from 0, as the SDK does. The numbering lives
// in this process, which is all a local session needs.
type EventStore struct {
	ev   store.Events
	mu   sync.Mutex
	next map[[2]string]int64
}

var _ mcp.EventStore = (*EventStore)(nil)

// NewEventStore returns ev behind the SDK's interface.
func NewEventStore(ev store.Events) *EventStore {
	return &EventStore{ev: ev, next: map[[2]string]int64{}}
}

// Open starts numbering a stream.
func (e *EventStore) Open(_ context.Context, session, stream string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.next[[2]string{session, stream}]; !ok {
		e.next[[2]string{session, stream}] = 0
	}
	return nil
}

// Append stores data as the stream's next event.
func (e *EventStore) Append(ctx context.Context, session, stream string, data []byte) error {
	e.mu.Lock()
	k := [2]string{session, stream}
	i := e.next[k]
	e.next[k] = i + 1
	e.mu.Unlock()
	// A copy: the store keeps what it is given, and the SDK's buffer is its own.
	return e.ev.Append(ctx, session, stream, store.Event{Index: i, Data: bytes.Clone(data)})
}

// After yields the stream's events after index, or mcp.ErrEventsPurged.
func (e *EventStore) After(ctx context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		evs, err := e.ev.After(ctx, session, stream, int64(index))
		if errors.Is(err, store.ErrPurged) {
			err = fmt.Errorf("%w: %w", mcp.ErrEventsPurged, err)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		for _, ev := range evs {
			if !yield(ev.Data, nil) {
				return
			}
		}
	}
}

// SessionClosed forgets the session's streams.
func (e *EventStore) SessionClosed(ctx context.Context, session string) error {
	e.mu.Lock()
	for k := range e.next {
		if k[0] == session {
			delete(e.next, k)
		}
	}
	e.mu.Unlock()
	return e.ev.SessionClosed(ctx, session)
}
