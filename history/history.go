// Package history is the record of a run that both engines write and one
// checker judges, the way Jepsen does: the clients record a complete
// history of what they sent and received, the replicas log every event they
// produced, and Judge computes the metrics of docs/domain.md §6 from those
// records afterwards, instead of trusting counters kept during the run. The
// live engine writes a history from its clients and replicas; the
// simulator's per-event oracle writes one from its virtual state.
//
// Delivered is counted from the receipts, lost from a per-event
// classification of the events a call never received, pending from the
// calls still open at the end. Each index of a call lands in exactly one of
// these, so
//
//	events_expected = events_delivered + events_lost + events_pending
//
// holds by construction, as do events_lost = the sum of lost_by_cause and
// calls = completed + failed + pending: sanity assertions, not evidence.
// The evidence is live/check's Reconcile, which holds a judged history to
// the replicas' own counters and to Redis, sources Judge does not read.
package history

import (
	"fmt"

	"github.com/stormsim/stormsim/clients"
)

// Call is one logical call of one client.
type Call struct {
	Client, Seq int32 // the client and its call number, from 0
	E           int32 // the call's logical length: progress events plus the result
	Start       int64 // ns since the start of the run
	End         int64 // when the call ended; -1 while pending
	Outcome     clients.Outcome
	Cause       clients.Cause
	Err         string `json:",omitempty"` // a go-sdk client's error for a failed call
}

// Request is one HTTP exchange. Times are ns since the start of the run.
type Request struct {
	Client, Seq int32 // Seq is -1 for a request outside a call (DELETE)
	Attempt     int32 // the call attempt a call or resume belongs to; -1 otherwise
	Kind        clients.Req
	Reconnect   bool   // sent because a stream broke or a request failed
	Reissue     bool   // a re-issue of the same logical call
	Session     bool   // carried Mcp-Session-Id
	SessionID   string // the id it carried, or the one an initialize was given
	Cursor      int32  // ReqResume: the Last-Event-ID index
	Sent        int64
	Answered    int64 // response headers arrived (or the request failed)
	Closed      int64 // the response body ended: for a stream, when the stream ended
	Status      int   // 0 when no response arrived
	Replica     int   // the slot the LB sent it to, -1 when unknown
	Purged      bool  // a 400 that said the events were purged
	Err         string
	BytesOut    int64
	BytesIn     int64
}

// Stream reports whether r opened an SSE stream that carries a call's events.
func (r *Request) Stream() bool {
	return (r.Kind == clients.ReqCall || r.Kind == clients.ReqResume) && r.Status == 200
}

// Receipt is one SSE event a client received for a call.
type Receipt struct {
	Client, Seq, Attempt int32
	Index                int32 // logical index: 0 is the priming event, E the result
	T                    int64
	Req                  int32 // the Request whose stream carried it
	// ID is the event's SSE id as the server wrote it, kept when the
	// history is judged by event ids (History.ByEventID); "" when none.
	ID string `json:",omitempty"`
}

// Drop is the end of a call's stream before its result arrived.
type Drop struct {
	Client, Seq int32
	T           int64
	Req         int32 // the Request whose stream ended
	Cause       DropCause
}

// DropCause says who ended a stream.
type DropCause uint8

const (
	DropServer  DropCause = iota // the server or the network ended it
	DropRandom                   // the client's own random drop (workload.drop_every)
	DropFault                    // a client-drop fault
	DropError                    // the stream ended with a JSON-RPC error
	DropTimeout                  // the client gave the call up at its call timeout
)

// Produced is one line of a replica's production log: an event of a call
// attempt was produced (Start: the attempt began running).
type Produced struct {
	Client, Seq, Attempt int32
	Index                int32
	T                    int64
	Start                bool
	// Cancelled: no event; the attempt's server cancelled it at T, as its
	// response stream closed before the result (2026-07-28). Its
	// production stopped there, and no process died.
	Cancelled bool   `json:",omitempty"`
	Replica   int    // the slot whose log it came from
	Session   string // the session the call ran in, "" when none
}

// Applied is a fault step as the live engine carried it out.
type Applied struct {
	At      int64 // ns since the start of the run, once the step was done
	Kind    string
	Step    int // index into faults.Timeline
	Replica int // the step's replica, where it has one
}

// Token names a call attempt in progress tokens and production logs.
func Token(client, seq, attempt int32) string {
	return fmt.Sprintf("c%d.k%d.a%d", client, seq, attempt)
}

// ParseToken reads a Token back; ok is false for any other string.
func ParseToken(s string) (client, seq, attempt int32, ok bool) {
	var c, k, a int32
	n, err := fmt.Sscanf(s, "c%d.k%d.a%d", &c, &k, &a)
	if err != nil || n != 3 || Token(c, k, a) != s {
		return 0, 0, 0, false
	}
	return c, k, a, true
}

// History is everything one design's run recorded.
type History struct {
	Horizon  int64 // ns: the run's duration plus its drain; the history ends here
	Step     int64 // ns per series step
	Interval int64 // ns between two events of a call
	Stored   bool  // the design appends events to a store (they count as store ops)
	NoStore  bool  // the design keeps no events: what nobody received is wasted
	// Produced is meaningful: the replicas' production logs were read. A
	// server that keeps none can only be judged from the client side.
	HaveProduction bool
	// ByEventID judges a server the user brings: the same event id
	// delivered twice, or the same index delivered twice on one stream, is
	// a duplicate; an index delivered again on a later stream (a resume
	// that restarted its progress, a re-issued attempt) is redone.
	ByEventID bool
	// Interrupted is when (ns) a signal stopped the run's load before its
	// horizon; 0 when the run went to its end. The calls open then are
	// pending, as at the end of a drain.
	Interrupted int64 `json:",omitempty"`

	Calls    []Call
	Requests []Request
	Receipts []Receipt
	Drops    []Drop
	Produced []Produced
	Faults   []Applied
}

// Join appends o's calls, requests, receipts and drops to h, renumbering
// o's references to its requests: the histories of several clients, or of
// several shards' clients, as one.
func (h *History) Join(o *History) {
	off := int32(len(h.Requests))
	h.Calls = append(h.Calls, o.Calls...)
	h.Requests = append(h.Requests, o.Requests...)
	for _, r := range o.Receipts {
		r.Req += off
		h.Receipts = append(h.Receipts, r)
	}
	for _, x := range o.Drops {
		x.Req += off
		h.Drops = append(h.Drops, x)
	}
}
