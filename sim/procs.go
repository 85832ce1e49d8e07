package sim

import (
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// dropConns breaks every connection of process p, with a retry hint if any.
func (e *engine) dropConns(p int32, hint time.Duration) {
	pr := &e.procs[p]
	for len(pr.conns) > 0 {
		id := pr.conns[len(pr.conns)-1]
		e.endStream(id, &e.clients[id], clients.Input{Kind: clients.InStreamEnd, RetryHint: hint})
		pr = &e.procs[p]
	}
}

func (e *engine) drain(p int32) {
	pr := &e.procs[p]
	pr.state = procDraining
	e.listenDropProc(p) // a listen stream never ends on its own: the drain ends it
	pr = &e.procs[p]
	if e.caps.CloseOnDrain(e.d.Replica.DrainClose) {
		e.closeWithHints(p)
	}
	pr = &e.procs[p]
	if len(pr.running) == 0 {
		e.exitProc(p, true)
		return
	}
	pr.exitTok++
	e.schedule(e.now+int64(e.d.Replica.DrainLimit), evProcExit, p, pr.exitTok)
}

// closeWithHints closes every stream of p with a retry hint: jittered when
// the design spreads hints, and with admission buckets each group of
// admit_bucket streams told to come back one interval after the previous.
func (e *engine) closeWithHints(p int32) {
	for i := 0; len(e.procs[p].conns) > 0; i++ {
		pr := &e.procs[p]
		id := pr.conns[len(pr.conns)-1]
		hint := protocol.DrainHint(&e.d.Replica, i, e.rng.Float64)
		e.endStream(id, &e.clients[id], clients.Input{Kind: clients.InStreamEnd, RetryHint: hint})
	}
}

// exitProc ends a process: its calls die, its connections close (with a
// retry hint when graceful), its memory and local sessions are gone.
func (e *engine) exitProc(p int32, graceful bool) {
	pr := &e.procs[p]
	if pr.state == procDead {
		return
	}
	pr.state = procDead
	e.listenDropProc(p)
	for i, sp := range e.slots {
		if sp == p {
			e.slots[i] = -1
		}
	}
	for len(pr.running) > 0 {
		e.endAttempt(pr.running[len(pr.running)-1].ai, true)
		pr = &e.procs[p]
	}
	if e.caps.CloseOnExit(graceful) {
		e.closeWithHints(p)
	} else {
		e.dropConns(p, 0)
	}
	pr = &e.procs[p]
	if e.events == topology.EventsMemory {
		for _, st := range pr.store.ms.s {
			e.attempts[st.ai].gone = true
			e.attempts[st.ai].memIdx = -1
		}
		pr.store = memStore{expect: pr.store.expect} // the same sizing, should it index again
		if e.memCheck != nil {
			e.memCheck(e, memOpExit, p, -1)
		}
	}
	pr.running, pr.conns = nil, nil // empty now, and no attempt or connection comes to a dead process
}
