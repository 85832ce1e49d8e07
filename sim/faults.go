package sim

import (
	"math"
	"slices"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

func (e *engine) fault(s faults.Step) {
	switch s.Kind {
	case faults.StepStop:
		if s.Replica < len(e.slots) {
			e.stopSlot(s.Replica, s.Graceful, "stop")
		}
	case faults.StepStart:
		if s.Replica < len(e.slots) && e.slots[s.Replica] < 0 {
			e.slots[s.Replica] = e.newProc(int32(s.Replica))
			e.lbOut[s.Replica] = false
		}
	case faults.StepClientDrop:
		e.clientDrop(s)
	case faults.StepScale:
		e.scale(s)
	case faults.StepPartition:
		if r := s.Replica; r < len(e.slots) && !e.partitioned[r] {
			e.partitioned[r] = true
			if p := e.slots[r]; p >= 0 {
				e.dropConns(p, 0) // the LB's connections to it break
				e.listenDropProc(p)
			}
			e.slotFailed(r)
		}
	case faults.StepHeal:
		if r := s.Replica; r < len(e.slots) && e.partitioned[r] {
			e.partitioned[r] = false
			if e.slots[r] >= 0 {
				e.lbOut[r] = false
			}
		}
	case faults.StepLatency:
		e.extraRTT += int64(s.Extra)
	case faults.StepStoreDown:
		e.storeOutage()
	case faults.StepStoreUp:
		e.storeDown = false
		if n := len(e.gaps); n > 0 {
			e.gaps[n-1].until = e.now
		}
	case faults.StepStoreRestart:
		e.storeRestart(s.Persistent || e.d.Store.Persistent)
	case faults.StepHealthDelay:
		e.healthDelay = int64(s.Extra)
	}
}

// stopSlot stops the serving process of a slot: a graceful drain, or a kill.
func (e *engine) stopSlot(slot int, graceful bool, why string) {
	p := e.slots[slot]
	if p < 0 {
		return
	}
	e.slots[slot] = -1
	if graceful {
		e.lbOut[slot] = true // a draining replica leaves the pool at once
		e.drain(p)
		return
	}
	e.recordProbe(why, func(c *client) bool { return c.sessProc == p })
	e.exitProc(p, false)
	e.slotFailed(slot)
}

// scale sets the number of slots. Under hash routing, sessions whose key now
// hashes elsewhere land on a replica that does not know them.
func (e *engine) scale(s faults.Step) {
	n := s.Replicas
	if !e.shared {
		e.recordProbe("scale", func(c *client) bool { return c.sessProc >= 0 })
	}
	for len(e.slots) < n {
		slot := len(e.slots)
		e.slots = append(e.slots, e.newProc(int32(slot)))
		e.lbOut = append(e.lbOut, false)
		e.partitioned = append(e.partitioned, false)
	}
	for slot := len(e.slots) - 1; slot >= n; slot-- {
		e.stopSlot(slot, s.Graceful, "scale")
	}
	e.slots, e.lbOut, e.partitioned = e.slots[:n], e.lbOut[:n], e.partitioned[:n]
}

// storeOutage makes Redis unreachable: appends fail from now on (a gap), and
// streams that follow a call by reading Redis fail once the read times out.
func (e *engine) storeOutage() {
	if e.storeDown {
		return
	}
	e.storeDown = true
	e.gaps = append(e.gaps, gap{from: e.now, until: math.MaxInt64})
	if e.events != topology.EventsRedis {
		return
	}
	at := e.now + int64(e.d.Store.Timeout)
	for p := range e.procs {
		for _, id := range e.procs[p].conns {
			c := &e.clients[id]
			if c.conn.kind == connResume && e.attempts[c.conn.attempt].proc != int32(p) {
				e.schedule(at, evStoreDrop, id, c.tok)
			}
		}
	}
}

// storeRestart restarts Redis. Without persistence every stream and shared
// session is gone; running calls append to fresh, gapped streams.
func (e *engine) storeRestart(persistent bool) {
	if persistent || e.events != topology.EventsRedis && !e.shared {
		return
	}
	e.storeEpoch++
	for ai := range e.attempts {
		a := &e.attempts[ai]
		if !a.stored || a.gone {
			continue
		}
		if a.ended {
			e.dropStream(int32(ai))
			continue
		}
		a.restartLo = e.produced(a, e.now) + 1
		pr := &e.procs[a.proc]
		pr.running[a.runIdx].lo = a.restartLo
	}
}

func (e *engine) clientDrop(s faults.Step) {
	var victims []int32
	for p := range e.procs {
		for _, id := range e.procs[p].conns {
			c := &e.clients[id]
			if c.conn.kind != connCall && c.conn.kind != connResume {
				continue
			}
			if workload.Pick(e.sc.Seed, uint64(s.Fault), uint64(id)) < s.Fraction {
				victims = append(victims, id)
			}
		}
	}
	slices.Sort(victims)
	for _, id := range victims {
		c := &e.clients[id]
		c.awayUntil = e.now + int64(s.Away)
		e.listenDropClient(id)
		e.endStream(id, c, clients.Input{Kind: clients.InStreamEnd})
	}
}

// recordProbe notes the live local sessions that match, to check what each
// one's next session request gets (a hard stop, a scale).
func (e *engine) recordProbe(why string, match func(*client) bool) {
	if !e.hasSessions || e.shared {
		return
	}
	hs := Probe{Why: why, At: time.Duration(e.now), waiting: map[int32]bool{}}
	for id := range e.clients {
		c := &e.clients[id]
		if c.sessOK && c.brain.HasSession() && match(c) {
			hs.waiting[int32(id)] = true
			hs.keys = append(hs.keys, c.sess)
			hs.ids = append(hs.ids, int32(id))
		}
	}
	hs.Sessions = len(hs.waiting)
	e.audit.Probes = append(e.audit.Probes, hs)
}

// noteProbe records the first session request of each waiting session.
func (e *engine) noteProbe(id int32, carried bool, key uint64, status int) {
	for i := range e.audit.Probes {
		hs := &e.audit.Probes[i]
		if !hs.waiting[id] {
			continue
		}
		k := hs.keys[slices.Index(hs.ids, id)]
		switch {
		case carried && key == k:
			hs.First = append(hs.First, status)
			delete(hs.waiting, id)
		case e.clients[id].sess != k || !e.clients[id].brain.HasSession():
			hs.Dropped++ // the client let the session go without using it again
			delete(hs.waiting, id)
		}
	}
}
