package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// The request workload's heap pops in (at, seq) order, ties in time
// included, with pushes and pops interleaved.
func TestReqHeapOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	var h reqHeap
	var ref []reqEv // sorted
	order := func(a, b reqEv) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) }
	var seq int64
	for i := range 60_000 {
		if len(h) > 0 && rng.IntN(3) == 0 {
			got := h.pop()
			want := ref[0]
			ref = ref[1:]
			if got.at != want.at || got.seq != want.seq {
				t.Fatalf("pop %d: got (%d,%d), want (%d,%d)", i, got.at, got.seq, want.at, want.seq)
			}
			continue
		}
		seq++
		ev := reqEv{at: rng.Int64N(40), seq: seq} // many ties in time
		h.push(ev)
		at, _ := slices.BinarySearchFunc(ref, ev, order)
		ref = slices.Insert(ref, at, ev)
	}
}

// appendOpsSparse puts each event in the step its production time falls
// in, the last step taking all that fall beyond it: against the
// definition, event by event, for intervals of one step and more and
// streams that run past the series.
func TestAppendOpsSparse(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 2000 {
		const steps = 50
		e := &engine{step: 100 + rng.Int64N(100), priming: rng.IntN(2) == 0}
		e.series.StoreOps = make([]int64, steps)
		e.series.Reconnects = make([]int64, steps) // bucket clamps to the series' length
		a := &attempt{stored: true, start: rng.Int64N(int64(steps) * e.step), iv: e.step + rng.Int64N(3*e.step), endN: int32(rng.IntN(80))}
		want := make([]int64, steps)
		for k := e.first(); k <= a.endN; k++ {
			want[min(e.prodTime(a, k)/e.step, steps-1)]++
		}
		e.appendOps(a)
		if !slices.Equal(e.series.StoreOps, want) {
			t.Fatalf("case %d (step %d, start %d, iv %d, endN %d, priming %v):\n got %v\nwant %v",
				i, e.step, a.start, a.iv, a.endN, e.priming, e.series.StoreOps, want)
		}
	}
}
