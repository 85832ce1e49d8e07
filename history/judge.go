package history

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/report"
)

// Judgment is what Judge found in one history.
type Judgment struct {
	Totals   report.Totals
	Replay   []float64 // replay latencies, ms
	Recovery []float64 // recovery latencies, ms
	Series   report.Series
	// Unproduced holds, per call {client, seq} whose producer died, the
	// events it counted unproduced: what Reconcile holds to the counters.
	Unproduced map[[2]int32]int64
}

type key struct{ c, k int32 }

type attemptState struct {
	n      int32
	start  int64
	lastT  int64
	maxIdx int32 // highest index produced, 0 when none past the priming event
	// cancelled: its server cancelled it when its response stream closed
	// (Produced.Cancelled): its production stopped, and no process died.
	cancelled bool
	prod      map[int32]int64 // index -> production time
	recv      map[int32]bool  // indices received on this attempt's streams
}

type callState struct {
	c        *Call
	recv     map[int32]bool
	receipts []int // into History.Receipts, in time order
	drops    []int64
	attempts []*attemptState // by attempt number
	reissued bool
	death    bool
}

func (cs *callState) attempt(a int32) *attemptState {
	for int(a) >= len(cs.attempts) {
		cs.attempts = append(cs.attempts, nil)
	}
	if cs.attempts[a] == nil {
		cs.attempts[a] = &attemptState{n: a, start: -1, prod: map[int32]int64{}, recv: map[int32]bool{}}
	}
	return cs.attempts[a]
}

// Judge computes the metrics of docs/domain.md §6 from a history.
func Judge(h *History) *Judgment { return judge(h, nil) }

// JudgeContext is Judge stopped when ctx ends: it returns ctx's error
// within a few thousand steps of any of its loops (the sort of the
// receipts among them), so that a signal while a large history is judged
// stops the judging at once.
func JudgeContext(ctx context.Context, h *History) (j *Judgment, err error) {
	if ctx.Done() == nil {
		return judge(h, nil), nil
	}
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(stopped)
			if !ok {
				panic(r)
			}
			j, err = nil, s.err
		}
	}()
	return judge(h, &stopper{ctx: ctx}), nil
}

// stopper checks its context every stopEvery ticks; a nil stopper never
// stops.
type stopper struct {
	ctx context.Context
	n   int
}

// stopped is the panic that unwinds a judging whose context ended, caught
// by JudgeContext.
type stopped struct{ err error }

const stopEvery = 1 << 12

func (s *stopper) tick() {
	if s == nil {
		return
	}
	s.n++
	if s.n%stopEvery == 0 {
		if err := s.ctx.Err(); err != nil {
			panic(stopped{err})
		}
	}
}

func judge(h *History, stop *stopper) *Judgment {
	step := max(h.Step, 1)
	n := int((h.Horizon + step - 1) / step)
	n = max(n, 1)
	j := &Judgment{Series: report.Series{
		StepS:         float64(step) / 1e9,
		ActiveStreams: make([]int64, n), Reconnects: make([]int64, n), SessionRequests: make([]int64, n),
		HTTP404: make([]int64, n), EventsLost: make([]int64, n), StoreOps: make([]int64, n), StoreBytes: make([]int64, n),
	}}
	jd := &judging{h: h, j: j, t: &j.Totals, s: &j.Series, step: step, n: n, calls: make(map[key]*callState, len(h.Calls)), stop: stop}
	for i := range h.Calls {
		c := &h.Calls[i]
		jd.calls[key{c.Client, c.Seq}] = &callState{c: c, recv: map[int32]bool{}}
	}
	jd.production()
	jd.requests()
	jd.dropsAndReceipts()
	jd.perCall()
	t, s := jd.t, jd.s
	if t.SessionRequests > 0 {
		t.Rate404 = float64(t.HTTP404) / float64(t.SessionRequests)
	}
	for i := range s.StoreOps {
		t.StorePeakOpsPerS = max(t.StorePeakOpsPerS, float64(s.StoreOps[i])/s.StepS)
	}
	return j
}

// judging is one Judge: the history, the judgment it fills, and the state
// of each call.
type judging struct {
	h     *History
	j     *Judgment
	t     *report.Totals
	s     *report.Series
	step  int64
	n     int
	calls map[key]*callState
	stop  *stopper // nil: never stops
}

// bucket is the step instant t falls in.
func (jd *judging) bucket(t int64) int { return min(max(int(t/jd.step), 0), jd.n-1) }

// get is call (c, k)'s state; nil for a call the history does not hold.
func (jd *judging) get(c, k int32) *callState { return jd.calls[key{c, k}] }

// production reads the production logs into each attempt's events.
func (jd *judging) production() {
	// Production logs.
	for _, p := range jd.h.Produced {
		jd.stop.tick()
		cs := jd.get(p.Client, p.Seq)
		if cs == nil {
			continue // a call the history does not know: not one of ours
		}
		a := cs.attempt(p.Attempt)
		if p.Cancelled {
			a.cancelled = true
			continue
		}
		if a.start < 0 || p.T < a.start {
			a.start = p.T
		}
		a.lastT = max(a.lastT, p.T)
		if p.Start {
			continue
		}
		if _, dup := a.prod[p.Index]; !dup {
			a.prod[p.Index] = p.T
		}
		a.maxIdx = max(a.maxIdx, p.Index)
		if jd.h.Stored {
			jd.s.StoreOps[jd.bucket(p.T)]++
		}
	}
}

// requests counts the requests, the statuses, the resumes and the streams
// open at the end of each step.
func (jd *judging) requests() {
	// Requests.
	for i := range jd.h.Requests {
		jd.stop.tick()
		r := &jd.h.Requests[i]
		jd.t.Requests++
		b := jd.bucket(r.Sent)
		if r.Session {
			jd.t.SessionRequests++
			jd.s.SessionRequests[b]++
		}
		if r.Reconnect {
			jd.t.Reconnects++
			jd.s.Reconnects[b]++
		}
		switch r.Status {
		case 404:
			jd.t.HTTP404++
			jd.s.HTTP404[jd.bucket(r.Answered)]++
		case 400:
			jd.t.HTTP400++
		case 409:
			jd.t.HTTP409++
		case 503:
			jd.t.HTTP503++
		}
		if r.Reissue {
			if cs := jd.get(r.Client, r.Seq); cs != nil {
				cs.reissued = true
			}
		}
		if r.Kind == clients.ReqResume && r.Status == 200 {
			jd.t.Resumes++
			if jd.h.Stored {
				jd.s.StoreOps[jd.bucket(r.Answered)]++
			}
		}
		if r.Stream() {
			// Open at the end of step i when Answered <= (i+1)·step < Closed.
			// A stream answered exactly at (i+1)·step is open at the end of
			// step i, the step before the one Answered falls in.
			for i := max(jd.bucket(r.Answered)-1, 0); i < jd.n; i++ {
				at := int64(i+1) * jd.step
				if at >= r.Closed {
					break
				}
				if at >= r.Answered {
					jd.s.ActiveStreams[i]++
				}
			}
		}
	}
}

// dropsAndReceipts files each drop and each receipt (in time order) under
// its call.
func (jd *judging) dropsAndReceipts() {
	// Drops.
	for _, d := range jd.h.Drops {
		jd.t.Drops++
		if cs := jd.get(d.Client, d.Seq); cs != nil {
			cs.drops = append(cs.drops, d.T)
		}
	}

	// Receipts, in time order.
	order := make([]int, len(jd.h.Receipts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		jd.stop.tick()
		return cmp.Compare(jd.h.Receipts[a].T, jd.h.Receipts[b].T)
	})
	for _, i := range order {
		jd.stop.tick()
		r := &jd.h.Receipts[i]
		if cs := jd.get(r.Client, r.Seq); cs != nil {
			cs.receipts = append(cs.receipts, i)
		}
	}
}

// perCall judges each call, and counts its lost events, with their cause,
// at its end, or its pending ones.
func (jd *judging) perCall() {
	replayDone := map[int32]bool{}
	openEnd := openStreams(jd.h)
	for _, c := range jd.h.Calls {
		cs := jd.calls[key{c.Client, c.Seq}]
		judgeCall(jd.h, cs, jd.t, jd.j, replayDone, openEnd, jd.stop)
		if cs.c.End >= 0 {
			// Loss is counted at the end of the call, event by event.
			var lost int64
			for idx := int32(1); idx <= c.E; idx++ {
				jd.stop.tick()
				if cs.recv[idx] {
					continue
				}
				lost++
				produced := false
				for _, a := range cs.attempts {
					if a != nil {
						if _, ok := a.prod[idx]; ok {
							produced = true
						}
					}
				}
				switch {
				case jd.h.HaveProduction && !produced && cs.death:
					jd.t.LostByCause.Unproduced++
				case c.Outcome == clients.Completed:
					jd.t.LostByCause.Other++
				case c.Cause == clients.CausePurged:
					jd.t.LostByCause.Purged++
				default:
					jd.t.LostByCause.Abandoned++
				}
			}
			jd.t.EventsLost += lost
			jd.s.EventsLost[jd.bucket(c.End)] += lost
		} else {
			for idx := int32(1); idx <= c.E; idx++ {
				jd.stop.tick()
				if !cs.recv[idx] {
					jd.t.EventsPending++
				}
			}
		}
	}
}

// judgeCall counts one call's calls, deliveries, duplicates, reorderings,
// replays, latencies and production terms.
func judgeCall(h *History, cs *callState, t *report.Totals, j *Judgment, replayDone map[int32]bool, openEnd map[[3]int32]bool, stop *stopper) {
	c := cs.c
	t.Calls++
	t.EventsExpected += int64(c.E)
	switch {
	case c.End < 0:
		t.CallsPending++
	case c.Outcome == clients.Completed:
		t.CallsCompleted++
	default:
		t.CallsFailed++
	}
	if cs.reissued {
		t.CallsReissued++
	}
	deliveries(h, cs, t, j, replayDone, stop)
	unproduced(h, cs, t, j)
	redoneAndWasted(h, cs, t, openEnd, stop)
}

// deliveries counts a call's deliveries, duplicates, reorderings and
// replays, with the recovery latency (from the first drop not yet
// recovered to the first new event of the call) and the replay latency.
func deliveries(h *History, cs *callState, t *report.Totals, j *Judgment, replayDone map[int32]bool, stop *stopper) {
	c := cs.c
	// Deliveries, with recovery latency: from the first drop not yet
	// recovered to the first new event of the call.
	seen := map[[2]int32]bool{} // (attempt, index), or (stream, index) by event id
	ids := map[string]bool{}    // event ids delivered, by event id
	var hw int32
	dropAt := int64(-1)
	di := 0
	for _, ri := range cs.receipts {
		stop.tick()
		r := &h.Receipts[ri]
		for di < len(cs.drops) && cs.drops[di] <= r.T {
			if dropAt < 0 {
				dropAt = cs.drops[di]
			}
			di++
		}
		if r.Index < 1 || r.Index > c.E {
			continue // the priming event carries no data
		}
		if h.ByEventID {
			if r.ID != "" {
				if ids[r.ID] {
					t.EventsDuplicated++
					continue
				}
				ids[r.ID] = true
			}
			k := [2]int32{r.Req, r.Index}
			if seen[k] {
				t.EventsDuplicated++
				continue
			}
			seen[k] = true
			if cs.recv[r.Index] {
				// Delivered before on another stream: the server produced
				// it again, work redone as the client sees it.
				t.EventsRedone++
			}
		} else {
			k := [2]int32{r.Attempt, r.Index}
			if seen[k] {
				t.EventsDuplicated++
				continue
			}
			seen[k] = true
		}
		a := cs.attempt(r.Attempt)
		a.recv[r.Index] = true
		req := &h.Requests[r.Req]
		if req.Kind == clients.ReqResume {
			pt, known := a.prod[r.Index]
			if !known || pt <= req.Answered {
				t.EventsReplayed++
			}
			if !replayDone[r.Req] && r.Index > req.Cursor {
				replayDone[r.Req] = true
				if d := lastBefore(cs.drops, req.Sent); d >= 0 {
					j.Replay = append(j.Replay, float64(r.T-d)/1e6)
				}
			}
		}
		if cs.recv[r.Index] {
			continue // redone by a later attempt, already delivered
		}
		cs.recv[r.Index] = true
		t.EventsDelivered++
		if r.Index < hw {
			t.EventsOutOfOrder++
		}
		if r.Index > hw {
			if dropAt >= 0 {
				j.Recovery = append(j.Recovery, float64(r.T-dropAt)/1e6)
				dropAt = -1
			}
			hw = r.Index
		}
	}
}

// unproduced finds the death of the process that ran one of the call's
// attempts, if one died, and counts the events never produced because of
// it.
func unproduced(h *History, cs *callState, t *report.Totals, j *Judgment) {
	c := cs.c
	// Production: deaths (unproduced), re-done work, waste.
	death := int64(-1)
	for _, a := range cs.attempts {
		if a == nil || a.cancelled || a.start < 0 || a.maxIdx >= c.E || a.lastT+3*h.Interval >= h.Horizon {
			continue
		}
		at := a.lastT + h.Interval
		later := false
		for _, b := range cs.attempts {
			if b != nil && b.n > a.n && b.start >= 0 && b.start <= at {
				later = true
			}
		}
		// The death lies in (lastT, at]: a call that ended after the last
		// event may have ended because of it (a client that fails the
		// moment its stream breaks ends before at), one that ended by then
		// did not.
		if later || at < c.Start || (c.End >= 0 && c.End <= a.lastT) {
			continue
		}
		if death < 0 || at < death {
			death = at
		}
	}
	if death >= 0 {
		cs.death = true
		var maxP int32
		for _, a := range cs.attempts {
			if a == nil {
				continue
			}
			for idx, pt := range a.prod {
				if pt <= death && idx > maxP {
					maxP = idx
				}
			}
		}
		t.EventsUnproduced += int64(c.E - maxP)
		if j.Unproduced == nil {
			j.Unproduced = map[[2]int32]int64{}
		}
		j.Unproduced[[2]int32{c.Client, c.Seq}] = int64(c.E - maxP)
	}
}

// redoneAndWasted counts the events an attempt produced again that an
// earlier one had produced, and, without an event store, those produced
// for a client that had gone.
func redoneAndWasted(h *History, cs *callState, t *report.Totals, openEnd map[[3]int32]bool, stop *stopper) {
	c := cs.c
	for i, a := range cs.attempts {
		if a == nil {
			continue
		}
		var earlier int32
		for _, b := range cs.attempts[:i] {
			if b == nil {
				continue
			}
			for idx, pt := range b.prod {
				stop.tick()
				if pt <= a.lastT && idx > earlier {
					earlier = idx
				}
			}
		}
		t.EventsRedone += int64(min(a.maxIdx, earlier))
		// What a pending call's attempt produced while its client was still
		// connected at the end of the run is not waste: it was on its way.
		if h.NoStore && !(c.End < 0 && openEnd[[3]int32{c.Client, c.Seq, int32(i)}]) {
			for idx := range a.prod {
				stop.tick()
				if idx >= 1 && !a.recv[idx] {
					t.EventsWasted++
				}
			}
		}
	}
}

// openStreams lists the attempts with a stream still open when the run
// ended (the runner closes open streams at the horizon).
func openStreams(h *History) map[[3]int32]bool {
	out := map[[3]int32]bool{}
	for i := range h.Requests {
		r := &h.Requests[i]
		if r.Stream() && r.Closed >= h.Horizon-int64(100*time.Millisecond) {
			out[[3]int32{r.Client, r.Seq, r.Attempt}] = true
		}
	}
	return out
}

// lastBefore is the last drop at or before t, or -1.
func lastBefore(drops []int64, t int64) int64 {
	d := int64(-1)
	for _, x := range drops {
		if x <= t {
			d = x
		}
	}
	return d
}
