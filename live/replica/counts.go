package replica

import (
	"os"
	"time"

	"github.com/stormsim/stormsim/live/store"
)

// Counts are a replica's own counters, kept in memory apart from its
// production log: what it produced per call, the results it sent, the
// calls it killed. The live checker reconciles the clients' histories with
// them (live/check.Reconcile), so they must not be derived from the log.
type Counts struct {
	PID    int  `json:"pid"`
	Frozen bool `json:"frozen"` // production was stopped for the snapshot (Freeze)
	// Gone is set by whoever read the counters when the process ended
	// right after (a hard stop, a planned stop): its in-memory store went
	// with it, whatever StoreFirst says.
	Gone bool `json:"gone"`
	// Calls holds every call this replica ran, by progress token.
	Calls map[string]*CallCount `json:"calls"`
	// ResultsByStream counts the results this replica sent on streams it
	// replayed from the store for a call another replica ran.
	ResultsByStream map[string]int `json:"results_by_stream,omitempty"`
	Produced        int64          `json:"produced"`     // events 1..E produced, over every call
	ResultsSent     int64          `json:"results_sent"` // results sent (or whose write failed) to a client, on any stream
	Killed          int64          `json:"killed"`       // calls whose producer stopped before the result
	// Cancelled counts the killed calls that stopped because their
	// client's response stream closed (protocol.Caps.CancelOnClose), and
	// EventsSaved the events 1..E they never produced: the work the
	// server saved.
	Cancelled   int64 `json:"cancelled,omitempty"`
	EventsSaved int64 `json:"events_saved,omitempty"`
	// Listeners holds every listener whose subscriptions/listen streams
	// this replica served, by name (listen.go), and NotificationsWritten
	// the notifications it wrote on them.
	Listeners            map[string]*ListenCount `json:"listeners,omitempty"`
	NotificationsWritten int64                   `json:"notifications_written,omitempty"`
}

// CallCount is one call attempt as its replica counted it.
type CallCount struct {
	Session     string `json:"session"`
	Stream      string `json:"stream"`
	Events      int    `json:"events"`              // the call's length E
	Produced    int    `json:"produced"`            // events 1..E produced
	ResultsSent int    `json:"results_sent"`        // times its result went out on one of its streams
	Killed      bool   `json:"killed"`              // its producer stopped before the result
	KilledNS    int64  `json:"killed_ns"`           // when (Unix ns); 0 when not killed
	Cancelled   bool   `json:"cancelled,omitempty"` // killed because its response stream closed
	// StoreFirst is, for an in-memory store, the first index the store
	// still held for the call's stream at the snapshot (later than the last
	// index when it holds none), or -1 when it held no such stream; 0 for
	// other stores.
	StoreFirst int64 `json:"store_first"`
}

// underReport names a progress token whose produced count Snapshot reports
// one short. It is set only in a build with the stormsim_test_underreport
// tag (counts_underreport.go), from STORMSIM_UNDERREPORT_TOKEN: the test of
// the reconciliation's power runs such a build. It is empty otherwise.
var underReport string

// countStart registers a call that begins producing; false when frozen:
// the counters were read for a hard stop, so the call must not begin (a
// start logged then would be one the counters lack).
func (s *Server) countStart(c *call) bool {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.frozen {
		return false
	}
	s.counts.Calls[c.token] = &CallCount{Session: c.session, Stream: c.stream, Events: c.total}
	s.byStream[c.stream] = c.token
	return true
}

// countProduced counts one event of c produced (index ≥ 1).
func (s *Server) countProduced(c *call) {
	s.cmu.Lock()
	if cc := s.counts.Calls[c.token]; cc != nil {
		cc.Produced++
		s.counts.Produced++
	}
	s.cmu.Unlock()
}

// countKilled records that c's producer stopped before its result;
// cancelled when its response stream closed rather than the process died.
func (s *Server) countKilled(c *call, cancelled bool) {
	s.cmu.Lock()
	if cc := s.counts.Calls[c.token]; cc != nil && !cc.Killed {
		cc.Killed, cc.KilledNS = true, time.Now().UnixNano()
		s.counts.Killed++
		if cancelled {
			cc.Cancelled = true
			s.counts.Cancelled++
			s.counts.EventsSaved += int64(cc.Events - cc.Produced)
		}
	}
	s.cmu.Unlock()
}

// countResult counts a result about to be written to a client on a stream
// of stream, before the write, so that no client can hold a result the
// counters lack; false when frozen: the result must not go out.
func (s *Server) countResult(stream string) bool {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.frozen {
		return false
	}
	s.counts.ResultsSent++
	if tok, ok := s.byStream[stream]; ok {
		s.counts.Calls[tok].ResultsSent++
	} else {
		s.counts.ResultsByStream[stream]++
	}
	return true
}

// Snapshot returns a copy of the counters.
func (s *Server) Snapshot() *Counts {
	s.cmu.Lock()
	out := &Counts{PID: os.Getpid(), Frozen: s.frozen, Calls: make(map[string]*CallCount, len(s.counts.Calls)),
		ResultsByStream: map[string]int{}, Produced: s.counts.Produced, ResultsSent: s.counts.ResultsSent, Killed: s.counts.Killed,
		Cancelled: s.counts.Cancelled, EventsSaved: s.counts.EventsSaved}
	for k, v := range s.counts.Calls {
		cc := *v
		out.Calls[k] = &cc
	}
	for k, v := range s.counts.ResultsByStream {
		out.ResultsByStream[k] = v
	}
	if len(s.counts.Listeners) > 0 {
		s.snapshotListeners(out)
	}
	s.cmu.Unlock()
	if mem, ok := s.cfg.Store.(*store.Memory); ok && s.hasStore() {
		for _, cc := range out.Calls {
			cc.StoreFirst = -1
			if first, ok := mem.First(cc.Session, cc.Stream); ok {
				cc.StoreFirst = first
			}
		}
	}
	if cc := out.Calls[underReport]; underReport != "" && cc != nil && cc.Produced > 0 {
		cc.Produced--
		out.Produced--
	}
	return out
}

// Freeze stops every call's production, as a crash does, lets no result
// out any more, waits for the producers to return (up to wait) and returns
// the counters: what a hard stop would leave, read just before it.
func (s *Server) Freeze(wait time.Duration) *Counts {
	s.cmu.Lock()
	s.frozen = true
	s.cmu.Unlock()
	s.kill()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
	}
	return s.Snapshot()
}
