package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stormsim/stormsim/scenario"
)

// refStore is a plain per-event reference for one memory store: every
// append is applied on its own, in time order (attempt order at one
// instant), and each append that takes the store over its cap is followed
// by purge rounds that visit every stream and drop the oldest event of each
// non-empty one; an ended stream found empty is forgotten.
type refStore struct {
	e       *engine
	held    int64
	streams map[int32]*refStream
	next    refQueue // running streams by their next append
}

type refStream struct {
	start  int64
	lo, hi int64 // events lo..hi are held; hi is the last appended
	limit  int64 // the last index it appends
	final  int64
	ended  bool
}

type refAppend struct {
	at int64
	ai int32
}

type refQueue []refAppend

func (q refQueue) Len() int { return len(q) }
func (q refQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].ai < q[j].ai
}
func (q refQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *refQueue) Push(x any)   { *q = append(*q, x.(refAppend)) }
func (q *refQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func (r *refStore) schedule(ai int32, st *refStream) {
	if !st.ended && st.hi+1 <= st.limit {
		heap.Push(&r.next, refAppend{at: st.start + (st.hi+1)*r.e.iv, ai: ai})
	}
}

// settle applies every append up to and including t.
func (r *refStore) settle(t int64) {
	for len(r.next) > 0 && r.next[0].at <= t {
		x := heap.Pop(&r.next).(refAppend)
		st := r.streams[x.ai]
		if st == nil || st.ended || st.start+(st.hi+1)*r.e.iv != x.at {
			continue // deleted, ended, or a stale entry
		}
		r.append(st)
		r.schedule(x.ai, st)
	}
}

func (r *refStore) append(st *refStream) {
	st.hi++
	r.held += r.e.memSize(st.hi, st.final)
	for r.held > r.e.memCap() {
		var removed int64
		for id, o := range r.streams {
			if o.hi >= o.lo {
				removed += r.e.memSize(o.lo, o.final)
				o.lo++
			} else if o.ended {
				delete(r.streams, id)
			}
		}
		if removed == 0 {
			break
		}
		r.held -= removed
	}
}

func (r *refStore) add(ai int32, start, final int64) {
	r.settle(start)
	first := int64(r.e.first())
	st := &refStream{start: start, lo: first, hi: first - 1, limit: final, final: final}
	r.streams[ai] = st
	if first == 0 {
		r.append(st)
	}
	r.schedule(ai, st)
}

func (r *refStore) end(ai int32, t, endN int64) {
	r.settle(t)
	if st := r.streams[ai]; st != nil {
		st.ended, st.limit = true, endN
	}
}

func (r *refStore) remove(ai int32, t int64) {
	r.settle(t)
	if st := r.streams[ai]; st != nil {
		r.held -= r.e.memBytes(st.lo, st.hi, st.final)
		delete(r.streams, ai)
	}
}

// lo is the first index of the stream still held, hi+1 when it was forgotten.
func (r *refStore) lo(ai int32, t, hi int64) int64 {
	r.settle(t)
	if st := r.streams[ai]; st != nil {
		return st.lo
	}
	return hi + 1
}

// seqEngine is an engine reduced to one process and its memory store.
func seqEngine(priming bool, capBytes, iv int64) *engine {
	d := &scenario.Design{Name: "seq"}
	d.Store.MemoryCapBytes = capBytes
	d.Store.MemoryOverheadBytes = 40
	return &engine{d: d, priming: priming, iv: iv, evBytes: 300, procs: make([]proc, 1)}
}

// seqTime is how a sequence's clock moves: iv, and steps of grain × 0..span-1;
// expect is the running streams the store is told to expect, which sets its
// phase buckets (0: the fewest).
type seqTime struct {
	iv, grain, span int64
	expect          int
}

// seqPhases has 20 phases an interval, so that appends meet at one instant;
// each lies in a phase bucket of its own.
var seqPhases = seqTime{iv: 1000, grain: 50, span: 30}

// seqRun drives a store and its reference through random operations; storm
// streams start together at 0 first. It fails at the first difference.
func seqRun(t *testing.T, seed uint64, priming bool, capBytes int64, storm, ops int) {
	seqRunAt(t, seed, priming, capBytes, storm, ops, seqPhases)
}

func seqRunAt(t *testing.T, seed uint64, priming bool, capBytes int64, storm, ops int, tm seqTime) {
	e := seqEngine(priming, capBytes, tm.iv)
	e.procs[0].store.expect = tm.expect
	ref := &refStore{e: e, streams: map[int32]*refStream{}}
	rng := rand.New(rand.NewPCG(seed, 7))
	var live []int32   // attempts whose stream was not deleted
	var pos []int      // each attempt's index in live, -1 once deleted
	var dones refQueue // the running calls by when they complete
	drop := func(ai int32) {
		j, n := pos[ai], len(live)-1
		live[j] = live[n]
		pos[live[j]] = j
		live, pos[ai] = live[:n], -1
	}
	fail := func(op string, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, %s at %d: %s", seed, op, e.now, fmt.Sprintf(format, args...))
	}
	hiOf := func(a *attempt) int64 { return int64(e.produced(a, e.now)) }
	check := func(op string, full bool, ai int32) {
		t.Helper()
		e.memSettle(0) // an operation on a forgotten stream leaves the store as it was
		ref.settle(e.now)
		if s := &e.procs[0].store; s.held != ref.held {
			fail(op, "the store holds %d bytes, the reference %d", s.held, ref.held)
		}
		ids := []int32{ai}
		if full {
			ids = live
		}
		for _, id := range ids {
			if id < 0 {
				continue
			}
			a := &e.attempts[id]
			hi := hiOf(a)
			if got, want := int64(e.memLo(a, int32(hi))), ref.lo(id, e.now, hi); got != want {
				fail(op, "attempt %d's first held event is %d, the reference's %d", id, got, want)
			}
		}
	}
	add := func(final int32) int32 {
		ai := int32(len(e.attempts))
		e.attempts = append(e.attempts, attempt{start: e.now, iv: e.iv, e: final, endN: -1, memIdx: -1, stored: true})
		e.memAdd(0, ai)
		ref.add(ai, e.now, int64(final))
		pos = append(pos, len(live))
		live = append(live, ai)
		heap.Push(&dones, refAppend{at: e.now + int64(final)*e.iv, ai: ai})
		return ai
	}
	end := func(ai int32) {
		a := &e.attempts[ai]
		a.endN = e.produced(a, e.now)
		a.ended, a.end = true, e.now
		e.memEnd(ai)
		ref.end(ai, e.now, int64(a.endN))
	}
	for i := 0; i < storm; i++ {
		ai := add(int32(3 + rng.IntN(20)))
		check("storm add", false, ai)
	}
	if storm > 0 && priming && e.stats.PurgeRounds == 0 {
		t.Fatalf("seed %d: %d streams started at 0 and no purge round came of it", seed, storm)
	}
	check("storm", true, -1)
	for n := 0; n < ops; n++ {
		// Time moves on (see seqTime); the calls that complete by then end
		// at their own instants, in attempt order.
		if rng.IntN(3) == 0 {
			next := e.now + tm.grain*rng.Int64N(tm.span)
			for len(dones) > 0 && dones[0].at <= next {
				x := heap.Pop(&dones).(refAppend)
				if pos[x.ai] < 0 || e.attempts[x.ai].ended {
					continue
				}
				e.now = max(e.now, x.at)
				end(x.ai)
				check("complete", false, x.ai)
			}
			e.now = next
		}
		pick := int32(-1)
		if len(live) > 0 {
			pick = live[rng.IntN(len(live))]
		}
		op := "settle"
		switch k := rng.IntN(100); {
		case k < 35 || pick < 0:
			op = "add"
			pick = add(int32(rng.IntN(16)))
		case k < 45 && !e.attempts[pick].ended:
			op = "end"
			end(pick)
		case k < 60:
			op = "delete"
			e.memDelete(pick)
			ref.remove(pick, e.now)
			drop(pick)
		case k < 85:
			op = "read"
		case k < 86 && storm == 0:
			op = "exit"
			for _, st := range e.procs[0].store.ms.s {
				e.attempts[st.ai].memIdx = -1
			}
			e.procs[0].store = memStore{expect: tm.expect}
			ref.settle(e.now)
			ref.held, ref.streams, ref.next = 0, map[int32]*refStream{}, nil
			for _, ai := range live {
				if a := &e.attempts[ai]; !a.ended {
					a.endN, a.ended, a.end = e.produced(a, e.now), true, e.now
				}
			}
			for len(live) > 0 {
				drop(live[0])
			}
			pick = -1
		default:
			e.memSettle(0)
			ref.settle(e.now)
		}
		check(op, storm == 0 || n%500 == 0, pick)
	}
	check("last", true, -1)
	if e.stats.PurgeRounds == 0 {
		t.Fatalf("seed %d: no purge round: the sequence tests nothing", seed)
	}
}

// memStoreSequences holds the memory store to the per-event reference
// after every operation of random sequences of starts, appends, reads, ends,
// deletes and purges, with and without a priming event, with phase buckets
// of one phase and of many, and through a storm
// in which 25,000 streams start at the same instant
// (TestMemoryStoreEvictsPerAppend runs it).
func memStoreSequences(t *testing.T) {
	t.Run("random", func(t *testing.T) {
		t.Parallel()
		for seed := uint64(1); seed <= 40; seed++ {
			priming := seed%2 == 0
			capBytes := int64(300 * (5 + seed*7%60))
			seqRun(t, seed, priming, capBytes, 0, 3000)
		}
	})
	// A long interval and uneven steps: a phase bucket (iv/4096 wide) holds
	// streams of several phases, so a round's own bucket has streams on both
	// sides of its phase, and rounds fall at every phase.
	t.Run("phases", func(t *testing.T) {
		t.Parallel()
		for seed := uint64(1); seed <= 16; seed++ {
			priming := seed%2 == 1
			capBytes := int64(300 * (5 + seed*11%60))
			seqRunAt(t, seed, priming, capBytes, 0, 3000, seqTime{iv: 1 << 20, grain: 61, span: 30000})
		}
	})
	// The same with the most phase buckets (2^18), as a store that expects
	// millions of streams has: the bucket count changes no result.
	t.Run("phases-many-buckets", func(t *testing.T) {
		t.Parallel()
		for seed := uint64(1); seed <= 8; seed++ {
			priming := seed%2 == 1
			capBytes := int64(300 * (5 + seed*13%60))
			seqRunAt(t, seed, priming, capBytes, 0, 3000, seqTime{iv: 1 << 20, grain: 61, span: 30000, expect: perBucket << maxPhaseDepth})
		}
	})
	t.Run("storm", func(t *testing.T) {
		t.Parallel()
		seqRun(t, 99, true, 20000*40, 25000, 4000) // the storm instant itself overflows
	})
	t.Run("storm-no-priming", func(t *testing.T) {
		t.Parallel()
		seqRun(t, 98, false, 2000*300, 25000, 4000)
	})
}
