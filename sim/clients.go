package sim

import (
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

func (e *engine) initClient(id int32) {
	c := &e.clients[id]
	c.brain.Init(&e.cc, e.rng)
	workload.Seed(&c.work, &c.drops, e.sc.Seed, int(id))
	c.sessProc, c.dropSched, c.nextDrop, c.renewAt = -1, -1, 0, -1
	c.call.attempt, c.call.dropAt = -1, -1
	if e.sc.Workload.DropEvery > 0 {
		c.nextDrop = e.now + workload.Exp(&c.drops, int64(e.sc.Workload.DropEvery))
	}
	if e.ls != nil {
		e.listenArrive(id)
	}
}

func (e *engine) startCall(id int32, c *client) {
	w := &e.sc.Workload
	if e.now >= e.duration || (w.CallsPerClient > 0 && c.calls >= w.CallsPerClient) {
		e.finishClient(id, c)
		return
	}
	c.calls++
	n, think := workload.Draw(&e.sc.Workload, &c.work)
	c.think = think
	c.call = call{active: true, e: n, unprodMark: n, attempt: -1, dropAt: -1}
	e.t.Calls++
	e.t.EventsExpected += int64(n)
	c.ctok++
	c.call.start = e.now
	if e.or != nil {
		e.or.startCall(id, c, e.now)
	}
	// A call that streams without trouble ends long before its timeout, so
	// the timeout is queued only when something goes wrong (armTimeout), or
	// now when the call could not finish in time anyway.
	if int64(n)*e.iv+8*int64(e.sc.RTT) >= int64(e.d.Client.CallTimeout) {
		e.armTimeout(id, c)
	}
	renew := c.renewAt >= 0 && e.now >= c.renewAt
	if renew {
		c.renewAt = -1
	}
	e.act(id, c, c.brain.Step(clients.Input{Kind: clients.InStartCall, Renew: renew}))
}

func (e *engine) finishClient(id int32, c *client) {
	if c.finished {
		return
	}
	c.finished = true
	if e.ls != nil {
		e.listenStop(id)
	}
	e.act(id, c, c.brain.Step(clients.Input{Kind: clients.InFinish}))
}

// act carries out one decision of the brain.
func (e *engine) act(id int32, c *client, a clients.Action) {
	switch a.Kind {
	case clients.ActSend:
		if e.now < c.awayUntil {
			e.deferred[id] = a
			c.tok++
			e.schedule(c.awayUntil, evTimer, id, c.tok)
			e.armTimeout(id, c) // the call may not outlast its timeout while away
			return
		}
		e.send(id, c, a)
	case clients.ActWait:
		c.tok++
		e.schedule(max(e.now+int64(a.Delay), c.awayUntil), evTimer, id, c.tok)
	case clients.ActEndCall:
		e.endCall(id, c, a)
	}
}

func (e *engine) send(id int32, c *client, a clients.Action) {
	// A cap on concurrent reconnects: wait for a slot, in arrival order.
	if a.Reconnect && e.reconnCap > 0 && !c.holdsSlot {
		if e.reconnInflight >= e.reconnCap {
			e.deferred[id], c.waitSlot = a, true
			c.tok++
			e.reconnWait = append(e.reconnWait, id)
			e.armTimeout(id, c)
			return
		}
		e.reconnInflight++
		c.holdsSlot = true
	}
	b := e.bucket(e.now)
	e.t.Requests++
	if e.or != nil {
		e.or.send(id, c, a, e.now)
	}
	if a.Req != clients.ReqInitialize && c.brain.HasSession() {
		e.t.SessionRequests++
		e.series.SessionRequests[b]++
	}
	if a.Reconnect {
		e.t.Reconnects++
		e.series.Reconnects[b]++
	}
	if a.Reissue && c.call.active && !c.call.reissued {
		c.call.reissued = true
		e.t.CallsReissued++
	}
	c.req, c.reqCursor = a.Req, int32(a.Cursor)
	c.tok++
	e.schedule(e.now+e.rtt(), evResponse, id, c.tok)
}

// rtt is the current network round trip, with any latency fault added.
func (e *engine) rtt() int64 { return int64(e.sc.RTT) + e.extraRTT }

// dropSessionStreams deletes the streams of the client's current session.
func (e *engine) dropSessionStreams(c *client) {
	for _, ai := range c.streams {
		e.dropStream(ai)
	}
	c.streams = c.streams[:0]
}

// dropStream deletes one stream from its store.
func (e *engine) dropStream(ai int32) {
	a := &e.attempts[ai]
	if a.gone {
		return
	}
	a.gone = true
	e.redisFixed -= a.fixedB
	a.fixedB = 0
	e.memDelete(ai)
}

func (e *engine) startAttempt(id int32, c *client, p int32) {
	cl := &c.call
	prev := cl.maxProduced
	cl.waitResume = false // a re-issue: the broken stream was never resumed
	if cl.attempt >= 0 {
		old := &e.attempts[cl.attempt]
		old.isCur = false
		prev = max(prev, e.produced(old, e.now))
		cl.maxProduced = prev
	}
	a := attempt{
		client: id, proc: p, follower: id, e: cl.e, prevMax: prev, prev: cl.attempt,
		start: e.now, iv: e.iv, stored: e.events != topology.EventsNone, isCur: true,
	}
	ai := int32(len(e.attempts))
	pr := &e.procs[p]
	if a.stored {
		c.streams = append(c.streams, ai)
	}
	a.memIdx = -1
	if a.stored && e.events == topology.EventsRedis {
		e.producing++
	}
	e.attempts = append(e.attempts, a)
	e.attempts[ai].runIdx = int32(len(pr.running))
	pr.running = append(pr.running, runEntry{start: a.start, ai: ai, e: a.e})
	cl.attempt = ai
	if a.stored && e.events == topology.EventsMemory {
		e.memAdd(p, ai)
	}
	if e.or != nil {
		e.or.startAttempt(e, id, ai, e.now)
	}
	e.schedule(a.start+int64(a.e)*a.iv, evAttemptDone, ai, 0)
	e.connect(c, id, connCall, ai, p, e.now, 0)
}

// connect opens a connection; events reach the client from `from` on.
func (e *engine) connect(c *client, id int32, kind uint8, ai, p int32, from int64, base int32) {
	pr := &e.procs[p]
	c.conn = conn{kind: kind, attempt: ai, proc: p, slot: int32(len(pr.conns)), from: from, base: base}
	pr.conns = append(pr.conns, id)
	if ai >= 0 {
		e.attempts[ai].follower = id
	}
	if kind != connStandalone {
		e.open++
		e.scheduleDrop(id, c)
	}
	if e.or != nil {
		e.or.connect(e, id, c, e.now)
	}
}

func (e *engine) scheduleDrop(id int32, c *client) {
	if e.sc.Workload.DropEvery <= 0 {
		return
	}
	for c.nextDrop <= e.now {
		c.nextDrop += workload.Exp(&c.drops, int64(e.sc.Workload.DropEvery))
	}
	// A drop instant after the attempt's last event cannot touch this
	// stream; the next connection will look again.
	if k := c.conn; k.attempt >= 0 {
		if a := &e.attempts[k.attempt]; !a.ended && c.nextDrop > a.start+int64(a.e)*a.iv {
			return
		}
	}
	if c.dropSched != c.nextDrop {
		c.dropSched = c.nextDrop
		e.schedule(c.nextDrop, evDropTick, id, 0)
	}
}

func (e *engine) dropTick(id int32) {
	c := &e.clients[id]
	if c.dropSched != e.now {
		return
	}
	c.dropSched = -1
	if c.conn.kind == connCall || c.conn.kind == connResume {
		e.endStream(id, c, clients.Input{Kind: clients.InStreamEnd})
	}
}

// disconnect detaches the client's connection without telling the brain.
func (e *engine) disconnect(id int32, c *client) {
	k := c.conn
	if k.kind == connNone {
		return
	}
	if e.or != nil {
		e.or.streamEnd(e, id, c, e.now)
	}
	pr := &e.procs[k.proc]
	last := pr.conns[len(pr.conns)-1]
	pr.conns[k.slot] = last
	e.clients[last].conn.slot = k.slot
	pr.conns = pr.conns[:len(pr.conns)-1]
	if k.attempt >= 0 {
		a := &e.attempts[k.attempt]
		if a.follower == id {
			a.follower = -1
		}
	}
	if k.kind != connStandalone {
		e.open--
	}
	c.conn = conn{}
	if k.kind == connCall && e.caps.CancelOnClose && !e.attempts[k.attempt].ended {
		e.cancelAttempt(k.attempt)
	}
}

// cancelAttempt ends an attempt whose response stream closed before its
// result, in an era where closing the stream cancels the call: the events
// it had not produced never are (the work the server saved). A draining
// process that has nothing left to run exits.
func (e *engine) cancelAttempt(ai int32) {
	if e.or != nil {
		e.or.cancel(e, ai, e.now)
	}
	e.endAttempt(ai, false)
	a := &e.attempts[ai]
	e.cancelled.Calls++
	e.cancelled.EventsSaved += int64(a.e - a.endN)
	if p := a.proc; e.procs[p].state == procDraining && len(e.procs[p].running) == 0 {
		e.exitProc(p, true)
	}
}

// settle counts what the client's connection delivered up to now.
func (e *engine) settle(c *client) {
	k := &c.conn
	if k.kind != connCall && k.kind != connResume {
		return
	}
	if e.now < k.from {
		return
	}
	a := &e.attempts[k.attempt]
	if !a.isCur {
		return
	}
	upto := e.reached(c, a)
	if k.replayN > 0 {
		e.t.EventsReplayed += int64(k.replayN + e.mutReplay) // the replay arrived
		k.replayN = 0
	}
	if upto > a.live {
		e.stats.ArithmeticEvents += int64(upto - a.live)
		a.live = upto
	}
	cl := &c.call
	if k.kind == connResume && cl.resumeLat && upto > k.base {
		t1 := max(k.from, e.prodTime(a, k.base+1))
		e.replay = append(e.replay, float64(t1-cl.replayFrom)/1e6)
		cl.resumeLat = false
	}
	if upto > cl.hw {
		if cl.dropAt >= 0 {
			t1 := max(k.from, e.prodTime(a, cl.hw+1))
			e.recov = append(e.recov, float64(t1-cl.dropAt)/1e6)
			cl.dropAt = -1
		}
		e.t.EventsDelivered += int64(upto - cl.hw)
		cl.hw = upto
	}
}

// endStream ends the client's call stream and tells the brain.
func (e *engine) endStream(id int32, c *client, in clients.Input) {
	e.settle(c)
	k := c.conn
	if k.kind == connNone {
		return
	}
	var cursor int32 = -1
	if k.kind != connStandalone && k.attempt >= 0 {
		cursor = e.reached(c, &e.attempts[k.attempt])
		if k.kind == connResume && e.now < k.from {
			cursor = k.base
		}
		if cursor == 0 && !e.priming {
			cursor = -1
		}
	}
	e.disconnect(id, c)
	if in.Result {
		c.tok++
		e.act(id, c, c.brain.Step(in))
		return
	}
	in.Cursor = int(cursor)
	in.HasID = e.events != topology.EventsNone && !e.noResume && cursor >= 0
	if k.kind != connStandalone {
		e.t.Drops++
		if e.or != nil {
			e.or.drop(id, e.now, e.or.conn[id].req, history.DropServer)
		}
		c.call.dropped = true
		c.call.lastDrop = e.now
		e.armTimeout(id, c)
		if c.call.dropAt < 0 {
			c.call.dropAt = e.now
		}
		if in.HasID && !c.call.waitResume {
			e.audit.DropsWithID++
			c.call.waitResume = true
		}
	}
	in.NoResume = e.noResume
	c.tok++ // nothing in flight survives the end of the stream
	e.act(id, c, c.brain.Step(in))
}

// endAttempt records an attempt's end: done (all events) or dead (killed).
func (e *engine) endAttempt(ai int32, dead bool) {
	a := &e.attempts[ai]
	if a.ended {
		return
	}
	a.endN = e.produced(a, e.now)
	a.ended, a.dead, a.end = true, dead, e.now
	pr := &e.procs[a.proc]
	n := len(pr.running) - 1
	last := pr.running[n]
	pr.running[a.runIdx] = last
	e.attempts[last.ai].runIdx = a.runIdx
	pr.running = pr.running[:n]
	e.memEnd(ai)
	e.appendOps(a)
	if a.stored && e.events == topology.EventsRedis {
		e.producing--
	}
	if a.stored && !a.gone && e.events == topology.EventsRedis {
		a.fixedB = e.streamBytes(int64(e.storedLo(a, a.endN)), int64(a.endN), int64(a.e))
		e.redisFixed += a.fixedB
		e.redisEnded = append(e.redisEnded, ai)
	}
	c := &e.clients[a.client]
	// The follower gets what was produced before the end.
	if a.follower >= 0 {
		e.settle(&e.clients[a.follower])
	}
	if e.events == topology.EventsNone && a.endN > a.live {
		e.t.EventsWasted += int64(a.endN - a.live)
	}
	// Earlier attempts may still be running: a disconnect cancels nothing.
	earlier := max(a.prevMax, e.chainMax(a.prev))
	if earlier > 0 {
		e.t.EventsRedone += int64(min(a.endN, earlier))
	}
	if a.isCur && c.call.active {
		cl := &c.call
		cl.maxProduced = max(cl.maxProduced, a.endN, earlier)
		if dead && cl.maxProduced < cl.unprodMark {
			e.t.EventsUnproduced += int64(cl.unprodMark - cl.maxProduced)
			cl.unprodMark = cl.maxProduced
		}
	}
	// A follower on another process resumes live from the store; when the
	// producer dies it ends the stream with an error once the call's lease
	// runs out (docs/domain.md §4).
	if dead && a.follower >= 0 {
		f := &e.clients[a.follower]
		if f.conn.kind == connResume && f.conn.proc != a.proc {
			e.schedule(protocol.OrphanEnd(&e.d.Replica, e.now, f.conn.from), evStreamEnd, a.follower, f.tok)
		}
	}
}

func (e *engine) attemptDone(ai int32, _ uint32) {
	a := &e.attempts[ai]
	if a.ended {
		return
	}
	e.endAttempt(ai, false)
	a = &e.attempts[ai]
	if f := a.follower; f >= 0 {
		c := &e.clients[f]
		if c.conn.attempt == ai {
			if e.now >= c.conn.from {
				e.endStream(f, c, clients.Input{Kind: clients.InStreamEnd, Result: true})
			} else {
				e.schedule(c.conn.from, evStreamEnd, f, c.tok)
			}
		}
	}
	if p := a.proc; e.procs[p].state == procDraining && len(e.procs[p].running) == 0 {
		e.exitProc(p, true)
	}
}

// endCall does the accounting of a logical call that ended.
func (e *engine) endCall(id int32, c *client, a clients.Action) {
	e.settle(c)
	e.disconnect(id, c)
	c.tok++
	c.ctok++
	delete(e.deferred, id)
	c.waitSlot = false
	e.releaseSlot(c)
	cl := &c.call
	if !cl.active {
		return
	}
	if e.or != nil {
		e.or.endCall(id, a, e.now)
	}
	maxP := cl.maxProduced
	if cl.attempt >= 0 {
		maxP = max(maxP, e.produced(&e.attempts[cl.attempt], e.now), e.chainMax(e.attempts[cl.attempt].prev))
		e.attempts[cl.attempt].isCur = false
	}
	if cl.unprodMark < cl.e {
		e.audit.UnproducedRecovered += int64(maxP - cl.unprodMark)
	}
	undelivered := int64(cl.e - cl.hw)
	if cl.dropped {
		e.audit.DroppedCalls++
		switch {
		case a.Outcome == clients.Failed:
			e.audit.DroppedFailed++
		case cl.reissued:
			e.audit.DroppedReissued++
		default:
			e.audit.DroppedResumedOnly++
		}
	}
	cl.waitResume = false
	if a.Outcome == clients.Completed {
		e.t.CallsCompleted++
		if undelivered > 0 {
			e.t.LostByCause.Other += undelivered
		}
	} else {
		e.t.CallsFailed++
		var unprod int64
		if cl.unprodMark < cl.e {
			unprod = int64(cl.e - max(cl.hw, maxP))
		}
		rest := undelivered - unprod
		e.t.LostByCause.Unproduced += unprod
		if a.Cause == clients.CausePurged {
			e.t.LostByCause.Purged += rest
		} else {
			e.t.LostByCause.Abandoned += rest
		}
	}
	if undelivered > 0 {
		e.t.EventsLost += undelivered
		e.series.EventsLost[e.bucket(e.now)] += undelivered
	}
	cl.active = false
	cl.attempt = -1
	if a.Renew && c.renewAt < 0 {
		c.renewAt = e.now + int64(a.RenewAfter)
	}
	if a.Outcome == clients.Failed && !e.sc.Workload.ContinueAfterFailure {
		e.finishClient(id, c)
		return
	}
	c.tok++
	e.schedule(e.now+c.think, evThink, id, c.tok)
}

// armTimeout queues the call's timeout, once.
func (e *engine) armTimeout(id int32, c *client) {
	if c.call.active && !c.call.armed {
		c.call.armed = true
		e.schedule(max(c.call.start+int64(e.d.Client.CallTimeout), e.now), evCallTimeout, id, c.ctok)
	}
}

// reached is the last event of a that has reached the client on its
// connection by now. A follower on another replica reads the stream from
// Redis, so it never gets past an event whose append failed in an outage.
func (e *engine) reached(c *client, a *attempt) int32 {
	upto := e.produced(a, e.now)
	if k := &c.conn; k.kind == connResume && k.proc != a.proc && e.events == topology.EventsRedis {
		for _, g := range e.gaps {
			if g.from > e.now {
				continue
			}
			// The first event produced at or after the gap began is missing.
			last := int32((g.from - 1 - a.start) / a.iv)
			if g.from <= a.start {
				last = -1
			}
			if last >= k.base && last < upto && e.prodTime(a, last+1) < g.until {
				upto = max(last, k.base)
			}
		}
	}
	return upto
}

// chainMax is the highest index any attempt from ai back through its
// predecessors has produced by now.
func (e *engine) chainMax(ai int32) int32 {
	var m int32
	for ; ai >= 0; ai = e.attempts[ai].prev {
		m = max(m, e.produced(&e.attempts[ai], e.now))
	}
	return m
}
