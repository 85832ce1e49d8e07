package sim

import (
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// gap is a window in which appends to Redis failed; until is open (MaxInt64)
// while the outage lasts.
type gap struct{ from, until int64 }

// arrive handles a request reaching the load balancer: routing, the replica's
// admission and accept queue, then the handler.
func (e *engine) arrive(id int32, c *client) {
	p, wait, refused := e.front(c)
	switch {
	case p < 0:
		e.answer(id, c, response(refused))
	case wait > 0:
		c.admitProc = p
		e.q.push(event{at: e.now + wait, kind: evResponse, id: id, tok: c.tok, aux: atHandler})
	default:
		e.handle(id, c, p)
	}
}

// front takes a request to a replica: the LB's pick, then the replica's
// admission and accept queue. It returns the process and how long the
// request waits in its queue, or -1 and the answer of a refusal. The answer
// is a value, not a pointer, so that a request costs no allocation.
func (e *engine) front(c *client) (p int32, wait int64, refused protocol.Answer) {
	withSession := c.req != clients.ReqInitialize && c.brain.HasSession()
	slot := e.lb.Pick(topology.Request{HasSession: withSession, Session: c.sess, Pin: &c.pin}, e.view())
	if slot < 0 {
		return -1, 0, protocol.Unreachable // no replica in the pool
	}
	p = e.slots[slot]
	if p < 0 || e.partitioned[slot] || e.procs[p].state != procUp {
		// The LB has not noticed yet: the connection is refused or times out.
		return -1, 0, protocol.Unreachable
	}
	adm := &e.procs[p].adm
	if ans := adm.Admit(&e.d.Replica, e.now, c.req, e.rng.Float64); !ans.OK() {
		return -1, 0, ans
	}
	w, ans := adm.Enqueue(&e.d.Replica, e.now, e.rng.Float64)
	if !ans.OK() {
		return -1, 0, ans
	}
	return p, int64(w), protocol.Answer{}
}

// response is a replica's answer as the client's brain reads it.
func response(a protocol.Answer) clients.Input {
	return clients.Input{Kind: clients.InResponse, Status: a.Status, Purged: a.Purged, RetryHint: a.RetryHint, Session: a.Session}
}

// handleQueued serves a request that waited in a replica's accept queue.
func (e *engine) handleQueued(id int32, c *client) {
	p := c.admitProc
	if e.procs[p].state != procUp || e.partitioned[e.procs[p].slot] {
		e.answer(id, c, response(protocol.Unreachable))
		return
	}
	e.handle(id, c, p)
}

// handle runs the request on process p and sends the answer back, late when
// it had to wait for the store.
func (e *engine) handle(id int32, c *client, p int32) {
	in, delay := e.serveOn(id, c, p)
	if delay > 0 {
		e.stash[id] = in
		e.q.push(event{at: e.now + delay, kind: evResponse, id: id, tok: c.tok, aux: atClient})
		return
	}
	e.answer(id, c, in)
}

// storeUnavailable reports whether a call to Redis fails now: during an
// outage, or when appends alone keep it saturated.
func (e *engine) storeUnavailable() bool {
	return e.storeDown || e.appendLoad() >= 1
}

// appendLoad is the fraction of the store's capacity the running appends use.
func (e *engine) appendLoad() float64 {
	ceiling := e.d.Store.AppendCeiling()
	if ceiling == 0 || e.producing == 0 {
		return 0
	}
	return float64(e.producing) * e.sc.Workload.EventRate / ceiling
}

// storeRead queues a Redis operation of n events and returns its latency:
// the network, the wait for a free server, and the service time stretched
// by the share of the store that appends take.
func (e *engine) storeRead(n int) int64 {
	sc := &e.d.Store
	lat := int64(sc.ReplayLatency(e.events, n))
	if e.events != topology.EventsRedis || sc.Concurrency <= 0 {
		return lat
	}
	if len(e.storeFree) != sc.Concurrency {
		e.storeFree = make([]int64, sc.Concurrency)
	}
	k := 0
	for i, f := range e.storeFree {
		if f < e.storeFree[k] {
			k = i
		}
	}
	service := float64(sc.ServiceBase) + float64(n)*float64(sc.ServicePerEvent)
	if load := e.appendLoad(); load < 1 {
		service /= 1 - load
	}
	start := max(e.now, e.storeFree[k])
	e.storeFree[k] = start + int64(service)
	return lat + (start - e.now) + int64(service)
}

// sessionAt reports whether the process p knows the client's session.
func (e *engine) sessionAt(c *client, p int32) bool {
	if !c.brain.HasSession() {
		return false
	}
	if e.shared {
		return c.sessOK && c.sessEpoch == e.storeEpoch
	}
	if memorySurvivesRestart && c.sessProc >= 0 && e.events == topology.EventsMemory {
		return e.procs[c.sessProc].slot == e.procs[p].slot // the deliberate fault
	}
	return c.sessProc == p && e.procs[p].state != procDead
}

// serveOn runs a request on process p: protocol decides, from the facts
// the engine's state gives, and the engine carries out what it allows. The
// second result delays the answer (a store call that times out).
func (e *engine) serveOn(id int32, c *client, p int32) (clients.Input, int64) {
	e.fx = facts{e: e, c: c, id: id, p: p} // held by the engine: a request allocates nothing
	ans := e.caps.Serve(protocol.Request{Kind: c.req}, &e.fx)
	if e.mutate != nil {
		ans = e.mutate(c.req, ans)
	}
	in := response(ans)
	if ans.Unavailable {
		return in, int64(e.d.Store.Timeout)
	}
	if !ans.OK() {
		return in, 0
	}
	switch c.req {
	case clients.ReqInitialize:
		if ans.Session {
			// The old session's streams stay in the store until retention
			// removes them: the server never learns the client moved on.
			c.streams = c.streams[:0]
			slot := e.procs[p].slot
			c.sess = topology.MintSession(e.rng, int(slot), len(e.slots), protocol.HashIDs(e.d.LB))
			c.sessProc, c.sessOK, c.sessEpoch = p, true, e.storeEpoch
			topology.BindSession(e.lb, c.sess, &c.pin, int(slot))
		}
	case clients.ReqCall:
		e.startAttempt(id, c, p)
	case clients.ReqResume:
		e.resumeOn(id, c, p)
	case clients.ReqStandalone:
		e.connect(c, id, connStandalone, -1, p, e.now, 0)
	case clients.ReqDelete:
		e.dropSessionStreams(c)
		c.sessOK, c.sessProc = false, -1
	}
	return in, 0
}

// answer delivers a response to the client: counts it, frees its reconnect
// slot, and feeds it to the brain.
func (e *engine) answer(id int32, c *client, in clients.Input) {
	e.releaseSlot(c)
	if e.or != nil {
		e.or.answer(id, in, e.now)
	}
	carried, key := c.req != clients.ReqInitialize && c.brain.HasSession(), c.sess
	if in.Status >= 300 {
		e.armTimeout(id, c)
	}
	switch in.Status {
	case 404:
		e.t.HTTP404++
		e.series.HTTP404[e.bucket(e.now)]++
	case 400:
		e.t.HTTP400++
	case 409:
		e.t.HTTP409++
	case 503:
		e.t.HTTP503++
	}
	if st := in.Status; st >= 0 && st < len(e.audit.ResumeStatus) {
		switch c.req {
		case clients.ReqResume:
			e.audit.ResumeStatus[st]++
		case clients.ReqStandalone:
			e.audit.StandaloneStatus[st]++
		}
	}
	if len(e.audit.Probes) > 0 {
		e.noteProbe(id, carried, key, in.Status)
	}
	act := c.brain.Step(in)
	e.act(id, c, act)
	// A resumed stream whose call already ended delivers its replay and ends.
	if c.conn.kind == connResume && act.Kind == clients.ActAwait {
		a := &e.attempts[c.conn.attempt]
		if a.ended {
			at := c.conn.from
			if a.dead {
				at = protocol.OrphanEnd(&e.d.Replica, a.end, at)
			}
			c.tok++
			e.schedule(at, evStreamEnd, id, c.tok)
		}
	}
}

// releaseSlot gives back the client's reconnect slot and lets the next
// waiting client send.
func (e *engine) releaseSlot(c *client) {
	if !c.holdsSlot {
		return
	}
	c.holdsSlot = false
	e.reconnInflight--
	for len(e.reconnWait) > 0 && e.reconnInflight < e.reconnCap {
		id := e.reconnWait[0]
		e.reconnWait = e.reconnWait[1:]
		w := &e.clients[id]
		if !w.waitSlot {
			continue
		}
		a := e.deferred[id]
		delete(e.deferred, id)
		w.waitSlot = false
		e.send(id, w, a)
	}
}

// inGap reports whether any event in (cursor, hi] of a was produced while
// appends to Redis failed.
func (e *engine) inGap(a *attempt, cursor, hi int32) bool {
	if hi <= cursor || len(e.gaps) == 0 {
		return false
	}
	from, until := e.prodTime(a, cursor+1), e.prodTime(a, hi)
	for _, g := range e.gaps {
		if from < g.until && until >= g.from {
			return true
		}
	}
	return false
}

// lbNotice is the LB's health check catching up with a slot.
func (e *engine) lbNotice(slot int) {
	if slot >= len(e.slots) {
		return
	}
	if p := e.slots[slot]; p < 0 || e.partitioned[slot] || e.procs[p].state != procUp {
		e.lbOut[slot] = true
	}
}

// slotFailed tells the LB that a slot died or was cut off, after its
// health-check delay.
func (e *engine) slotFailed(slot int) {
	if e.healthDelay <= 0 {
		e.lbOut[slot] = true
		return
	}
	e.schedule(e.now+e.healthDelay, evLBNotice, int32(slot), 0)
}
