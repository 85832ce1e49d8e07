package sim

import (
	"container/heap"
	"fmt"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/topology"
)

// oracle is the per-event reference of the simulator's stream accounting.
// The engine counts a healthy stream's events arithmetically, between the
// state changes it queues; the oracle, riding on the same run, produces every
// stream event of every attempt as its own step, delivers it to the
// connection that follows the attempt (or holds it until a replay arrives),
// and records what happened as a history.History: calls, requests, receipts,
// drops and production lines, as the live engine's clients and replicas do.
// history.Judge then counts the history, so the oracle's totals come from
// per-event records and the checker's counting, not from the engine's
// arithmetic (engine.settle, endAttempt, endCall, resume).
//
// What the two share, and so cannot disagree on: the queue of state changes,
// the brain's decisions, the LB, the server's answers (which status a resume
// gets, purge decisions, store latency) and the fault steps. The engine's
// cursor (engine.reached) drives the brain; the oracle keeps its own cursor
// per connection, event by event, and records each disagreement in mismatch.
type oracle struct {
	h history.History

	prod    []int32 // per engine attempt: events produced so far, one by one
	attN    []int32 // per engine attempt: its number within its call
	aseq    []int32 // per engine attempt: its call's number
	missing []int32 // per engine attempt: first index produced while Redis was down, 0 none

	seq     []int32 // per client: the current call's number, -1 before any
	nAtt    []int32 // per client: attempts of the current call so far
	callIdx []int32 // per client: the current call in h.Calls, -1 none
	reqIdx  []int32 // per client: the request in flight, -1 none
	conn    []oconn // per client: the open stream, as the oracle follows it

	pq   oqueue
	seqN uint64

	// mismatch lists where the oracle's own cursor disagreed with the
	// engine's when a stream ended (the first few).
	mismatch []string
	nMis     int
}

// oconn is a client's stream as the oracle follows it.
type oconn struct {
	open    bool
	ai      int32 // the engine attempt it follows
	req     int32 // the request that opened it
	cur     int32 // the last index delivered on it (its base when it opened)
	from    int64 // when events start reaching the client
	cross   bool  // a Redis follower on another process: reads the store
	stalled bool  // it met an event whose append failed: nothing more arrives
	gen     uint32
}

const (
	oProduce uint8 = iota // attempt id produces event idx
	oReplay               // the replay of client id's stream (gen) arrives
)

type oitem struct {
	at   int64
	seq  uint64
	kind uint8
	id   int32
	idx  int32
	gen  uint32
}

type oqueue []oitem

func (q oqueue) Len() int { return len(q) }
func (q oqueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q oqueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *oqueue) Push(x any)   { *q = append(*q, x.(oitem)) }
func (q *oqueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func newOracle(e *engine) *oracle {
	n := len(e.arrivals)
	o := &oracle{
		seq: make([]int32, n), nAtt: make([]int32, n), callIdx: make([]int32, n),
		reqIdx: make([]int32, n), conn: make([]oconn, n),
	}
	for i := range n {
		o.seq[i], o.callIdx[i], o.reqIdx[i] = -1, -1, -1
	}
	o.h = history.History{
		Horizon: int64(e.sc.Duration + e.sc.Drain), Step: int64(e.sc.Step), Interval: e.iv,
		Stored: e.events != topology.EventsNone, NoStore: e.events == topology.EventsNone,
		HaveProduction: true,
	}
	return o
}

func (o *oracle) push(it oitem) {
	it.seq = o.seqN
	o.seqN++
	heap.Push(&o.pq, it)
}

// catchUp steps every stream event due at or before t, in time order: the
// engine's event at t sees them produced, as its arithmetic does.
func (o *oracle) catchUp(e *engine, t int64) {
	for len(o.pq) > 0 && o.pq[0].at <= t {
		it := heap.Pop(&o.pq).(oitem)
		switch it.kind {
		case oProduce:
			o.produce(e, it.id, it.idx, it.at)
		case oReplay:
			if oc := &o.conn[it.id]; oc.open && oc.gen == it.gen {
				o.replay(e, it.id, it.at)
			}
		}
	}
}

// produce is one event of attempt ai, made at t.
func (o *oracle) produce(e *engine, ai, idx int32, t int64) {
	a := &e.attempts[ai]
	if a.ended && t > a.end {
		return // its process died first: this event and the rest never exist
	}
	o.prod[ai] = idx
	if e.storeDown && e.events == topology.EventsRedis && o.missing[ai] == 0 {
		o.missing[ai] = idx // the append failed: the stream has a gap
	}
	o.h.Produced = append(o.h.Produced, history.Produced{Client: a.client, Seq: o.aseq[ai], Attempt: o.attN[ai],
		Index: idx, T: t, Replica: int(e.procs[a.proc].slot)})
	if idx < a.e {
		o.push(oitem{at: a.start + int64(idx+1)*a.iv, kind: oProduce, id: ai, idx: idx + 1})
	}
	if f := a.follower; f >= 0 {
		oc := &o.conn[f]
		if oc.open && oc.ai == ai && t >= oc.from && oc.cur == idx-1 {
			o.deliver(e, f, oc, idx, t)
		}
	}
}

// deliver hands event idx of the stream's attempt to client id at t, unless
// the stream reads Redis and the event's append failed.
func (o *oracle) deliver(e *engine, id int32, oc *oconn, idx int32, t int64) {
	if oc.stalled {
		return
	}
	if oc.cross && o.missing[oc.ai] != 0 && idx >= o.missing[oc.ai] {
		oc.stalled = true
		return
	}
	o.h.Receipts = append(o.h.Receipts, history.Receipt{Client: id, Seq: o.aseq[oc.ai], Attempt: o.attN[oc.ai], Index: idx, T: t, Req: oc.req})
	oc.cur = idx
}

// replay delivers, at t, every event of the stream's attempt produced so far
// past the stream's cursor.
func (o *oracle) replay(e *engine, id int32, t int64) {
	oc := &o.conn[id]
	for oc.cur < o.prod[oc.ai] && !oc.stalled {
		o.deliver(e, id, oc, oc.cur+1, t)
	}
}

// startCall records a new logical call.
func (o *oracle) startCall(id int32, c *client, now int64) {
	o.seq[id] = int32(c.calls - 1)
	o.nAtt[id] = 0
	o.callIdx[id] = int32(len(o.h.Calls))
	o.h.Calls = append(o.h.Calls, history.Call{Client: id, Seq: o.seq[id], E: c.call.e, Start: now, End: -1})
}

// endCall records how a call ended.
func (o *oracle) endCall(id int32, a clients.Action, now int64) {
	if i := o.callIdx[id]; i >= 0 {
		k := &o.h.Calls[i]
		k.End, k.Outcome, k.Cause = now, a.Outcome, a.Cause
		o.callIdx[id] = -1
	}
}

// send records a request as the client sends it.
func (o *oracle) send(id int32, c *client, a clients.Action, now int64) {
	seq := int32(-1)
	if c.call.active {
		seq = o.seq[id]
	}
	o.reqIdx[id] = int32(len(o.h.Requests))
	o.h.Requests = append(o.h.Requests, history.Request{
		Client: id, Seq: seq, Attempt: -1, Kind: a.Req, Reconnect: a.Reconnect,
		Reissue: a.Reissue && c.call.active, Session: a.Req != clients.ReqInitialize && c.brain.HasSession(),
		Cursor: int32(a.Cursor), Sent: now, Replica: -1,
	})
}

// answer records the answer to the request in flight.
func (o *oracle) answer(id int32, in clients.Input, now int64) {
	if i := o.reqIdx[id]; i >= 0 {
		r := &o.h.Requests[i]
		r.Answered, r.Closed, r.Status, r.Purged = now, now, in.Status, in.Purged
		o.reqIdx[id] = -1
	}
}

// startAttempt records an attempt that begins running now.
func (o *oracle) startAttempt(e *engine, id, ai int32, now int64) {
	for int(ai) >= len(o.prod) {
		o.prod, o.attN, o.aseq, o.missing = append(o.prod, 0), append(o.attN, 0), append(o.aseq, 0), append(o.missing, 0)
	}
	o.attN[ai], o.aseq[ai] = o.nAtt[id], o.seq[id]
	o.nAtt[id]++
	if i := o.reqIdx[id]; i >= 0 {
		o.h.Requests[i].Attempt = o.attN[ai]
	}
	a := &e.attempts[ai]
	o.h.Produced = append(o.h.Produced, history.Produced{Client: id, Seq: o.seq[id], Attempt: o.attN[ai], T: now, Start: true,
		Replica: int(e.procs[a.proc].slot)})
	if a.e > 0 {
		o.push(oitem{at: a.start + a.iv, kind: oProduce, id: ai, idx: 1})
	}
}

// cancel records that attempt ai was cancelled now, as its response
// stream closed: its production stops, and no process died.
func (o *oracle) cancel(e *engine, ai int32, now int64) {
	a := &e.attempts[ai]
	o.h.Produced = append(o.h.Produced, history.Produced{Client: a.client, Seq: o.aseq[ai], Attempt: o.attN[ai], T: now, Cancelled: true,
		Replica: int(e.procs[a.proc].slot)})
}

// connect records a stream that opens now; a replay that arrives now is
// delivered at once, a later one when it arrives.
func (o *oracle) connect(e *engine, id int32, c *client, now int64) {
	k := &c.conn
	if k.kind != connCall && k.kind != connResume {
		return
	}
	oc := &o.conn[id]
	*oc = oconn{open: true, ai: k.attempt, req: o.reqIdx[id], cur: k.base, from: k.from, gen: oc.gen + 1,
		cross: k.kind == connResume && e.events == topology.EventsRedis && k.proc != e.attempts[k.attempt].proc}
	if oc.req >= 0 && k.kind == connResume {
		o.h.Requests[oc.req].Attempt = o.attN[k.attempt]
	}
	if k.from <= now {
		o.replay(e, id, now)
	} else {
		o.push(oitem{at: k.from, kind: oReplay, id: id, gen: oc.gen})
	}
}

// streamEnd checks the oracle's cursor against the engine's when a stream
// ends, and closes the stream's request.
func (o *oracle) streamEnd(e *engine, id int32, c *client, now int64) {
	oc := &o.conn[id]
	k := &c.conn
	if !oc.open || (k.kind != connCall && k.kind != connResume) {
		return
	}
	cur := k.base
	if k.kind != connResume || now >= k.from {
		cur = e.reached(c, &e.attempts[k.attempt])
	}
	if oc.cur != cur {
		o.nMis++
		if len(o.mismatch) < 10 {
			o.mismatch = append(o.mismatch, fmt.Sprintf("client %d call %d: stream ended at %d ns with the engine's cursor at %d, the oracle's at %d",
				id, o.seq[id], now, cur, oc.cur))
		}
	}
	if oc.req >= 0 {
		o.h.Requests[oc.req].Closed = now
	}
	oc.open = false
}

// drop records the end of a call's stream before its result.
func (o *oracle) drop(id int32, now int64, req int32, cause history.DropCause) {
	o.h.Drops = append(o.h.Drops, history.Drop{Client: id, Seq: o.seq[id], T: now, Req: max(req, 0), Cause: cause})
}
