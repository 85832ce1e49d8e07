package sim

import (
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// facts answers protocol's questions about one request from the engine's
// virtual state (protocol.Facts).
type facts struct {
	e     *engine
	c     *client
	id, p int32
}

var _ protocol.Facts = (*facts)(nil)

// Session checks (or, for an initialize, creates) the session; a shared
// session costs a store operation, and fails while the store is down.
func (f *facts) Session() protocol.Session {
	e, c := f.e, f.c
	initialize := c.req == clients.ReqInitialize
	if !initialize && !c.brain.HasSession() {
		return protocol.SessionMissing
	}
	if e.shared {
		if e.storeUnavailable() {
			return protocol.SessionUnavailable
		}
		e.storeOp(1)
	}
	if !initialize && !e.sessionAt(c, f.p) {
		return protocol.SessionUnknown
	}
	return protocol.SessionKnown
}

// Claim reports whether the stream has no other follower.
func (f *facts) Claim() bool {
	ai := f.c.call.attempt
	if ai < 0 {
		return true
	}
	a := &f.e.attempts[ai]
	return a.follower < 0 || a.follower == f.id
}

// Read finds whether the events after the client's cursor are in the
// store, counting the events a purged stream lost.
func (f *facts) Read() protocol.Read {
	e, c := f.e, f.c
	if e.events == topology.EventsRedis && e.storeUnavailable() {
		return protocol.ReadUnavailable
	}
	ai := c.call.attempt
	if ai < 0 {
		return protocol.ReadUnknown
	}
	a := &e.attempts[ai]
	cursor := c.reqCursor
	if e.events == topology.EventsMemory && a.proc != f.p {
		return protocol.ReadUnknown // the stream lives in another process's memory
	}
	hi := e.produced(a, e.now)
	lo := e.storedLo(a, hi)
	if a.gone || e.expired(a) || lo > cursor+1 || (e.events == topology.EventsRedis && e.inGap(a, cursor, hi)) {
		// All or nothing, as go-sdk's After: the events that are missing
		// are only part of what the client loses if it gives up.
		missing := int64(hi - cursor)
		if !a.gone && !e.expired(a) && lo > cursor+1 {
			missing = int64(min(lo, hi+1) - cursor - 1)
		}
		e.audit.PurgedMissing += max(missing, 0)
		return protocol.ReadPurged
	}
	return protocol.ReadOK
}

// resumeOn carries out a resume protocol allowed: the replay from the
// store, then the stream follows the call.
func (e *engine) resumeOn(id int32, c *client, p int32) {
	ai := c.call.attempt
	a := &e.attempts[ai]
	cursor := c.reqCursor
	hi := e.produced(a, e.now)
	n := max(hi-cursor, 0)
	e.t.Resumes++
	if c.call.waitResume {
		e.audit.DropsWithIDResumed++
		c.call.waitResume = false
	}
	e.storeOp(1)
	lat := e.storeRead(int(n))
	if c.call.dropped {
		// Replay latency runs from the drop of this stream, the one resumed.
		c.call.resumeLat = true
		c.call.replayFrom = c.call.lastDrop
	}
	e.connect(c, id, connResume, ai, p, e.now+lat, cursor)
	c.conn.replayN = n // counted as replayed when the replay reaches the client
}

func (e *engine) storedLo(a *attempt, hi int32) int32 {
	first := e.first()
	switch e.events {
	case topology.EventsMemory:
		return e.memLo(a, hi)
	case topology.EventsRedis:
		lo := max(first, a.restartLo)
		if m := int32(e.d.Store.RedisMaxLen); m > 0 && hi-m+1 > lo {
			return hi - m + 1
		}
		return lo
	}
	return first
}

func (e *engine) expired(a *attempt) bool {
	ttl := int64(e.d.Store.RedisTTL)
	return e.events == topology.EventsRedis && ttl > 0 && a.ended && e.now >= a.end+ttl
}

// storeOp counts store operations in the current step.
func (e *engine) storeOp(n int64) {
	if e.events == topology.EventsNone && !e.shared {
		return
	}
	e.series.StoreOps[e.bucket(e.now)] += n
}

// appendOps spreads an attempt's appends over the steps they happened in.
func (e *engine) appendOps(a *attempt) {
	if !a.stored {
		return
	}
	k := e.first()
	if a.iv >= e.step {
		e.appendOpsSparse(a, k)
		return
	}
	n := len(e.series.StoreOps)
	for k <= a.endN {
		t := e.prodTime(a, k)
		b := e.bucket(t)
		bEnd := int64(b+1) * e.step
		if e.perStep > 0 && b+1 < n-1 {
			// Every whole step holds exactly perStep events: add the run of
			// whole steps in O(1) to a difference array, summed in finish.
			firstWhole := b + 1
			lastT := e.prodTime(a, a.endN)
			lastWhole := min(int(lastT/e.step)-1, n-2)
			if lastWhole >= firstWhole {
				// events k.. before the first whole step
				head := int32((bEnd-1-a.start)/a.iv) - k + 1
				e.series.StoreOps[b] += int64(head)
				e.opsDiff[firstWhole] += e.perStep
				e.opsDiff[lastWhole+1] -= e.perStep
				k += head + int32(int64(lastWhole-firstWhole+1)*e.perStep)
				continue
			}
		}
		// events k.. that fall in bucket b
		last := min(max(int32((bEnd-1-a.start)/a.iv), k), a.endN)
		e.series.StoreOps[b] += int64(last - k + 1)
		k = last + 1
	}
}

// appendOpsSparse is appendOps from index k when a step holds at most one
// of a's events (an interval of at least a step): each event is one append
// in the step its time falls in, found by stepping from the last one
// instead of by two divisions, the last step taking all that fall beyond
// it, as bucket does. A 100 ms series of 5-a-second streams
// (thundering-herd) spent a third of its run dividing here.
func (e *engine) appendOpsSparse(a *attempt, k int32) {
	ops := e.series.StoreOps
	last := len(ops) - 1
	t := e.prodTime(a, k)
	b := e.bucket(t)
	bEnd := int64(b+1) * e.step
	for ; k <= a.endN; k++ {
		for t >= bEnd && b < last {
			b++
			bEnd += e.step
		}
		ops[b]++
		t += a.iv
	}
}
