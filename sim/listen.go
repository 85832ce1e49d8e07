package sim

import (
	"math/rand/v2"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/topology"
)

// The notification workload (workload.notification_rate) at 2026-07-28:
// every client holds a subscriptions/listen stream from its arrival until
// it finishes or the scenario's duration ends, whichever comes first, and
// the server sends it notifications on the schedule protocol.NotifyDue
// numbers. A notification due while the client's stream is down reaches
// nobody: the stream has no replay. Streams drop when their replica stops
// (drains or dies), is cut off, or the client drops; the client re-opens
// under the profile's backoff, or never under listen_reopen = "none"
// (clients.Listener decides; a listener that stopped keeps its schedule,
// so what is due to it until it finishes is lost). A listen request goes
// through the LB's pick, the replica's admission and accept queue and
// protocol's decision, as any new stream does. What a stream received is
// counted arithmetically from its open intervals, as call events are.
//
// The hooks into the engine: newListen at the engine's start, listenArrive
// when a client arrives, listenStop when it finishes, listenDropProc when a
// process stops or is cut off, listenDropClient at a client drop, and the
// evListen events.

// listenState is a design's listeners; nil when the workload is off or the
// design's era has no listen stream.
type listenState struct {
	iv  int64 // between two notifications of one listener
	rng *rand.Rand
	ls  []listener
	// onProc holds the listeners with an open stream, by process.
	onProc map[int32][]int32
	// reopens counts the re-open requests per series step, for the peak.
	reopens []int64
	r       report.Listen
}

// listener is one client's listen stream.
type listener struct {
	brain   clients.Listener
	started bool
	anchor  int64 // when the client began to listen: its schedule's start
	until   int64 // when it stops listening (-1: not yet)
	proc    int32 // the process holding its open stream, -1 none
	openAt  int64 // when that stream opened
	tok     uint32
	recv    int64 // notifications received on streams that closed
	reopen  bool  // the request in flight re-opens a dropped stream
}

// Listen event phases (event.aux).
const (
	lsSend   uint8 = iota // the backoff is over: send the listen request
	lsArrive              // the request reaches the LB
	lsServe               // it leaves the replica's accept queue
)

// newListen sets up the listeners of an engine whose design listens.
func newListen(e *engine) *listenState {
	rate := e.sc.Workload.NotificationRate
	if rate <= 0 || !e.caps.Listen {
		return nil
	}
	s1, s2 := e.rng.Uint64(), e.rng.Uint64()
	n := int((e.horizon + e.step - 1) / e.step)
	return &listenState{iv: protocol.NotifyInterval(rate), rng: rand.New(rand.NewPCG(s1, s2)),
		ls: make([]listener, len(e.arrivals)), onProc: map[int32][]int32{}, reopens: make([]int64, n)}
}

// listenArrive starts client id's listening.
func (e *engine) listenArrive(id int32) {
	s := e.ls
	l := &s.ls[id]
	l.brain.Init(&e.cc, s.rng)
	l.started, l.anchor, l.until, l.proc = true, e.now, -1, -1
	e.listenDo(id, l.brain.Open())
}

// listenStop ends client id's listening: its stream closes.
func (e *engine) listenStop(id int32) {
	l := &e.ls.ls[id]
	if !l.started || l.until >= 0 {
		return
	}
	l.until = min(e.now, e.duration)
	e.listenClose(id, l)
	l.brain.Stop()
}

// listenDo carries out a listener's decision.
func (e *engine) listenDo(id int32, a clients.ListenAction) {
	if !a.Send {
		return
	}
	l := &e.ls.ls[id]
	l.tok++
	l.reopen = a.Reopen
	at := max(e.now+int64(a.Delay), e.clients[id].awayUntil)
	e.q.push(event{at: at, kind: evListen, id: id, tok: l.tok, aux: lsSend})
}

// listenEvent is an evListen event: a send, an arrival at the LB, or the
// end of a wait in a replica's accept queue.
func (e *engine) listenEvent(ev event) {
	s := e.ls
	l := &s.ls[ev.id]
	if ev.tok != l.tok || !l.brain.Due() {
		return
	}
	switch ev.aux {
	case lsSend:
		s.r.Opens++
		if l.reopen {
			s.r.Reopens++
			s.reopens[e.bucket(e.now)]++
		}
		e.q.push(event{at: e.now + e.rtt(), kind: evListen, id: ev.id, tok: l.tok, aux: lsArrive})
	case lsArrive:
		e.listenArriveLB(ev.id, l)
	case lsServe:
		e.listenServe(ev.id, l, l.proc) // proc: where it waited
	}
}

// listenArriveLB routes a listen request and admits it, as front does for
// a client's request.
func (e *engine) listenArriveLB(id int32, l *listener) {
	slot := e.lb.Pick(topology.Request{}, e.view())
	if slot < 0 {
		e.listenAnswered(id, l, protocol.Unreachable)
		return
	}
	p := e.slots[slot]
	if p < 0 || e.partitioned[slot] || e.procs[p].state != procUp {
		e.listenAnswered(id, l, protocol.Unreachable)
		return
	}
	adm := &e.procs[p].adm
	if ans := adm.Admit(&e.d.Replica, e.now, clients.ReqListen, e.rng.Float64); !ans.OK() {
		e.listenAnswered(id, l, ans)
		return
	}
	w, ans := adm.Enqueue(&e.d.Replica, e.now, e.rng.Float64)
	if !ans.OK() {
		e.listenAnswered(id, l, ans)
		return
	}
	if w > 0 {
		l.proc = p // where it waits; not open yet
		e.q.push(event{at: e.now + int64(w), kind: evListen, id: id, tok: l.tok, aux: lsServe})
		return
	}
	e.listenServe(id, l, p)
}

// listenServe has process p decide on a listen request.
func (e *engine) listenServe(id int32, l *listener, p int32) {
	pr := &e.procs[p]
	if pr.state == procDead || e.partitioned[pr.slot] {
		l.proc = -1
		e.listenAnswered(id, l, protocol.Unreachable)
		return
	}
	ans := e.caps.Serve(protocol.Request{Kind: clients.ReqListen, Draining: pr.state == procDraining}, nil)
	if !ans.OK() {
		l.proc = -1
		e.listenAnswered(id, l, ans)
		return
	}
	l.proc, l.openAt = p, e.now
	e.ls.onProc[p] = append(e.ls.onProc[p], id)
	if l.reopen {
		e.ls.r.Reopened++
	}
	e.listenAnswered(id, l, ans)
}

// listenAnswered gives the listener its answer.
func (e *engine) listenAnswered(id int32, l *listener, ans protocol.Answer) {
	e.listenDo(id, l.brain.Answered(ans.Status, ans.RetryHint))
}

// listenClose closes a listener's open stream, counting what it received.
func (e *engine) listenClose(id int32, l *listener) bool {
	if l.proc < 0 || !l.brain.IsOpen() {
		return false
	}
	end := e.now
	if l.until >= 0 {
		end = min(end, l.until)
	}
	l.recv += protocol.NotifyDue(l.anchor, l.openAt, min(end, e.duration), e.ls.iv)
	list := e.ls.onProc[l.proc]
	for i, x := range list {
		if x == id {
			list[i] = list[len(list)-1]
			e.ls.onProc[l.proc] = list[:len(list)-1]
			break
		}
	}
	l.proc = -1
	return true
}

// listenDropProc drops every listen stream on process p: it stopped or
// was cut off. Each client re-opens after its backoff.
func (e *engine) listenDropProc(p int32) {
	if e.ls == nil {
		return
	}
	ids := append([]int32(nil), e.ls.onProc[p]...)
	for _, id := range ids {
		e.listenDrop(id)
	}
}

// listenDropClient drops client id's listen stream (a client drop).
func (e *engine) listenDropClient(id int32) {
	if e.ls != nil {
		e.listenDrop(id)
	}
}

func (e *engine) listenDrop(id int32) {
	l := &e.ls.ls[id]
	if e.listenClose(id, l) {
		e.ls.r.Drops++
		e.listenDo(id, l.brain.Dropped(0))
	}
}

// listenBlock is the report's listen block at the end of the run.
func (e *engine) listenBlock() *report.Listen {
	s := e.ls
	r := s.r
	for id := range s.ls {
		l := &s.ls[id]
		if !l.started {
			continue
		}
		until := e.duration
		if l.until >= 0 {
			until = min(until, l.until)
		}
		e.listenClose(int32(id), l)
		r.Sent += protocol.NotifyDue(l.anchor, l.anchor, until, s.iv)
		r.Received += l.recv
	}
	r.Lost = r.Sent - r.Received
	var peak int64
	for _, n := range s.reopens {
		peak = max(peak, n)
	}
	r.ReopenPeakPerS = float64(peak) / e.sc.Step.Seconds()
	return &r
}

// listenNote says, for a design of an era before 2026-07-28 under the
// notification workload, that its notification channel is not modelled.
func listenNote(e *engine) string {
	if e.sc.Workload.NotificationRate <= 0 || e.caps.Listen {
		return ""
	}
	return "the notification workload is not modelled before 2026-07-28 (the standalone GET stream is not held open), so this design has no listen block"
}
