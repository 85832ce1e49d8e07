package runner

import (
	"math"
	"sync/atomic"

	"github.com/stormsim/stormsim/scenario"
)

// progressIndex turns the progress values of a server the user brings
// into the logical indices of one call's events (server.tool.progress):
//
//   - increasing: each distinct value is one event, numbered 1, 2, … in
//     the order the values first arrive in the call, so 0..N-1, 1..N of N
//     and 0.1..1.0 all read as events 1..N; a re-issued attempt or a
//     resumed stream that restarts its progress sends the same values
//     again and so the same indices (redone, not new events);
//   - index: the value, rounded, is the index (stormsim's own contract);
//   - opaque: every notification is the next event of its attempt.
//
// A call's length is what the server sent before its result: the result's
// index is one past the highest index any progress value reached, or the
// length the tool's arguments asked for, whichever is larger.
//
// An index value is bounded by what was received: it can be at most the
// length the call asked for plus the notifications received in it, so a
// value of 2,000,000,000 cannot make a call that long (and the judging of
// it endless); a value over the bound is clamped to it and counted in
// absurd.
//
// Only the goroutine that owns the call uses it.
type progressIndex struct {
	mode   string
	byVal  map[float64]int32
	next   map[int32]int32 // opaque: the next index of each attempt
	maxIdx int32           // the highest index given out in the call
	asked  int32           // the length the call's arguments asked for
	seen   int32           // notifications received in the call
	absurd *atomic.Int64   // index values over the bound; nil: not counted
}

func newProgressIndex(mode string) *progressIndex {
	return &progressIndex{mode: mode, byVal: map[float64]int32{}, next: map[int32]int32{}}
}

// reset starts a new call, whose arguments asked for asked events.
func (p *progressIndex) reset(asked int32) {
	clear(p.byVal)
	clear(p.next)
	p.maxIdx, p.asked, p.seen = 0, asked, 0
}

// index is the logical index of a progress notification with value v on
// attempt a.
func (p *progressIndex) index(v float64, a int32) int32 {
	var idx int32
	p.seen = min(p.seen+1, math.MaxInt32/2)
	switch p.mode {
	case scenario.ProgressIndex:
		idx = int32(max(min(math.Round(v), math.MaxInt32), math.MinInt32))
		if bound := p.asked + p.seen; idx > bound {
			idx = bound
			if p.absurd != nil {
				p.absurd.Add(1)
			}
		}
	case scenario.ProgressOpaque:
		p.next[a]++
		idx = p.next[a]
	default:
		if i, ok := p.byVal[v]; ok {
			return i
		}
		idx = int32(len(p.byVal)) + 1
		p.byVal[v] = idx
	}
	p.maxIdx = max(p.maxIdx, idx)
	return idx
}

// result is the index of the call's result for a call whose arguments
// asked for e events (0: they did not say).
func (p *progressIndex) result(e int32) int32 { return max(e, p.maxIdx+1) }
