package replica

import "time"

// ProduceGrid is the grid of the wall clock the reference replica produces
// on: a call's event i is due at its start plus i intervals (the schedule
// the simulator and the host check read, docs/model.md), put off to the
// next multiple of ProduceGrid since the Unix epoch. Events due within one
// grid step of each other, across the calls of a replica and across the
// replicas, then go out together: the replica, the LB and the clients wake
// once for the batch instead of once per event, and the Go scheduler's
// idle and wake round (epoll, futex, a spinning thread) is paid per batch.
// At 9,000 streams of 1 event/s that is about 45 events a step; the
// commit that added this file gives the runs that measured what the
// batching saves (docs/live.md, "Where the CPU goes"). The delay, at most
// one step, counts in the producers' lateness like any other. A call
// whose interval is shorter than the grid step is not put on it: the grid
// would merge its slots.
const ProduceGrid = 5 * time.Millisecond

// Pacer times one call's events on its schedule, as a time.Ticker of the
// call's interval would, on the ProduceGrid grid: receive from C, send the
// event, then call After. The reference replica's producers use it, and
// so does BenchmarkRelayFloor's bare replica, so that both keep one
// schedule.
type Pacer struct {
	start time.Time
	iv    time.Duration
	grid  time.Duration // ProduceGrid, or 0 for an interval shorter than it
	next  int64         // the schedule slot of the next event
	t     *time.Timer
}

// NewPacer starts the timer of slot 1, one interval after start.
func NewPacer(start time.Time, iv time.Duration) *Pacer {
	p := &Pacer{start: start, iv: iv, next: 1}
	if iv >= ProduceGrid {
		p.grid = ProduceGrid
	}
	p.t = time.NewTimer(time.Until(p.due(1)))
	return p
}

// due is when slot k's event goes out: on the grid, at or after start + k·iv.
func (p *Pacer) due(k int64) time.Time {
	at := p.start.Add(time.Duration(k) * p.iv)
	if p.grid == 0 {
		return at
	}
	if r := at.UnixNano() % int64(p.grid); r != 0 {
		at = at.Add(p.grid - time.Duration(r))
	}
	return at
}

// C delivers the instant each event is due, as a Ticker's channel does.
func (p *Pacer) C() <-chan time.Time { return p.t.C }

// After sets the timer for the next event, once one went out at now. A
// call that fell behind, its next slot already past, goes at once and
// skips the slots it missed, as a Ticker's one buffered tick does.
func (p *Pacer) After(now time.Time) {
	p.next++
	at := p.due(p.next)
	if at.After(now) {
		p.t.Reset(at.Sub(now))
		return
	}
	p.next += int64(now.Sub(p.start.Add(time.Duration(p.next)*p.iv)) / p.iv)
	p.t.Reset(0)
}

// Stop stops the timer.
func (p *Pacer) Stop() { p.t.Stop() }
