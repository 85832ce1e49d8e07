package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stormsim/stormsim/topology"
)

// shadowStore is an in-memory store that evicts the way live/store's Memory
// does, append by append: each append, in time order (the attempts' start
// order at one instant), adds its event, then purge rounds drop the oldest
// event of every non-empty stream while the store is over its cap.
type shadowStore struct {
	at      int64
	held    int64
	streams map[int32]*shadowStream
	running map[int32]*shadowStream // the streams that may append again
}

type shadowStream struct {
	start  int64
	lo, hi int64 // events lo..hi are held; hi is the last appended
	limit  int64 // last index it will append
}

// shadowCheck follows every memory store of every engine it is given and
// records the first place where one differs from its shadow.
type shadowCheck struct {
	mu     sync.Mutex
	stores map[*engine]map[int32]*shadowStore
	rounds map[*engine]int64
	err    error
}

func (c *shadowCheck) op(e *engine, op memOp, p, ai int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	if c.stores[e] == nil {
		c.stores[e] = map[int32]*shadowStore{}
	}
	sh := c.stores[e][p]
	if sh == nil {
		sh = &shadowStore{streams: map[int32]*shadowStream{}, running: map[int32]*shadowStream{}}
		c.stores[e][p] = sh
	}
	first := int64(e.first())
	switch op {
	case memOpExit:
		delete(c.stores[e], p)
		return
	case memOpAdd:
		c.settle(e, sh, e.now)
		a := &e.attempts[ai]
		sh.streams[ai] = &shadowStream{start: a.start, lo: first, hi: first - 1, limit: int64(a.e)}
		sh.running[ai] = sh.streams[ai]
		if first == 0 {
			c.append(e, sh, ai)
		}
	case memOpEnd:
		c.settle(e, sh, e.now)
		sh.streams[ai].limit = int64(e.attempts[ai].endN)
		delete(sh.running, ai)
	case memOpDelete:
		c.settle(e, sh, e.now)
		st := sh.streams[ai]
		sh.held -= e.memBytes(st.lo, st.hi, int64(e.attempts[ai].e))
		delete(sh.streams, ai)
		delete(sh.running, ai)
	case memOpSettle:
		c.settle(e, sh, e.now)
	}
	if debugShadow && p == 0 && e.d.Name == "memory-sticky" {
		fmt.Println("op", op, "p", p, "ai", ai, "now", e.now, "held", e.procs[p].store.held, "shadow", sh.held, "at", e.procs[p].store.at, "run", e.procs[p].store.run)
	}
	c.compare(e, sh, p, op)
}

var debugShadow = false

func (c *shadowCheck) append(e *engine, sh *shadowStore, ai int32) {
	st := sh.streams[ai]
	st.hi++
	sh.held += e.memSize(st.hi, int64(e.attempts[ai].e))
	for sh.held > e.memCap() {
		c.rounds[e]++
		for id, o := range sh.streams {
			if o.hi >= o.lo {
				sh.held -= e.memSize(o.lo, int64(e.attempts[id].e))
				o.lo++
			} else if sh.running[id] == nil {
				delete(sh.streams, id) // ended and empty: it plays no part any more
			}
		}
	}
}

// settle applies every append up to t, one at a time.
func (c *shadowCheck) settle(e *engine, sh *shadowStore, t int64) {
	for {
		next, who := int64(-1), int32(-1)
		for id, st := range sh.running {
			if st.hi+1 > st.limit {
				continue
			}
			at := st.start + (st.hi+1)*e.iv
			if at <= sh.at || at > t {
				continue
			}
			if who < 0 || at < next || at == next && id < who {
				next, who = at, id
			}
		}
		if who < 0 {
			break
		}
		c.append(e, sh, who)
	}
	sh.at = t
}

func (c *shadowCheck) compare(e *engine, sh *shadowStore, p int32, op memOp) {
	s := &e.procs[p].store
	where := fmt.Sprintf("%s at %d ns, process %d, after op %d", e.d.Name, e.now, p, op)
	if s.held != sh.held {
		c.err = fmt.Errorf("%s: the store holds %d bytes, the append-by-append store %d%s", where, s.held, sh.held, c.dump(e, sh, p))
		return
	}
	in := map[int32]bool{}
	for i, ms := range s.ms.s {
		ai := ms.ai
		in[ai] = true
		st := sh.streams[ai]
		if st == nil {
			c.err = fmt.Errorf("%s: attempt %d is in the store, not in the append-by-append one", where, ai)
			return
		}
		if lo := s.lo(int32(i), e.iv); lo != st.lo {
			c.err = fmt.Errorf("%s: attempt %d's first held event is %d, append by append %d", where, ai, lo, st.lo)
			return
		}
	}
	for ai, st := range sh.streams {
		if !in[ai] && st.hi >= st.lo {
			c.err = fmt.Errorf("%s: attempt %d holds events %d..%d append by append, and was forgotten", where, ai, st.lo, st.hi)
			return
		}
	}
}

// TestMemoryStoreEvictsPerAppend holds the simulated memory store, after
// every change, to one that evicts append by append, on small runs of the
// scenarios that purge (tight caps, a client outage, kills and restarts,
// no priming event, appends at the same instant), and on random sequences
// of store operations (memStoreSequences).
func TestMemoryStoreEvictsPerAppend(t *testing.T) {
	t.Parallel()
	t.Run("sequences", memStoreSequences)
	small := []string{"workload.clients=60", "workload.arrival_rate=20", "drain=30s",
		"workload.think=1s", "workload.drop_every=20s"}
	cases := []struct {
		name string
		set  []string
	}{
		{"long-outage-eviction", []string{"store.memory_cap_bytes=20000", "workload.events_min=5", "workload.events_max=60"}},
		{"crash", []string{"store.memory_cap_bytes=8000", "workload.events_min=5", "workload.events_max=60"}},
		{"deploy-restart", []string{"store.memory_cap_bytes=30000", "workload.events_min=30", "workload.events_max=200"}},
		{"deploy-restart", []string{"store.memory_cap_bytes=300", `era="2025-06-18"`, "workload.events_min=30", "workload.events_max=200"}},
		{"network-blip", []string{"store.memory_cap_bytes=100000", "workload.event_rate=50", "workload.events_min=5", "workload.events_max=60"}},
	}
	for i, tc := range cases {
		steps := []string{"1s"}
		if i == 0 {
			steps = append(steps, "100ms")
		}
		for _, step := range steps {
			t.Run(fmt.Sprintf("%d-%s/%s", i, tc.name, step), func(t *testing.T) {
				t.Parallel()
				sc := load(t, tc.name, append(append(slices.Clone(small), tc.set...), "step="+step)...)
				var designs []string
				for _, d := range sc.Designs {
					if d.Events == topology.EventsMemory {
						designs = append(designs, d.Name)
					}
				}
				chk := &shadowCheck{stores: map[*engine]map[int32]*shadowStore{}, rounds: map[*engine]int64{}}
				_, err := Run(context.Background(), sc, &Options{Designs: designs, memCheck: chk.op})
				if err != nil {
					t.Fatal(err)
				}
				if chk.err != nil {
					t.Fatal(chk.err)
				}
				var rounds int64
				for _, n := range chk.rounds {
					rounds += n
				}
				if rounds == 0 {
					t.Fatalf("no purge round in %v: the case tests nothing", designs)
				}
			})
		}
	}
}

func (c *shadowCheck) dump(e *engine, sh *shadowStore, p int32) string {
	s := &e.procs[p].store
	out := fmt.Sprintf("\nstore at %d, run %d:", s.at, s.run)
	for i, ms := range s.ms.s {
		out += fmt.Sprintf("\n  ai %d start %d e %d endN %d lo %d", ms.ai, ms.start, ms.e, ms.endN, s.lo(int32(i), e.iv))
	}
	out += "\nshadow:"
	for ai, st := range sh.streams {
		out += fmt.Sprintf("\n  ai %d start %d lo %d hi %d limit %d", ai, st.start, st.lo, st.hi, st.limit)
	}
	return out
}

// The series step changes the series and the metrics read from them (storm
// height, recovery after a fault, the store peaks sampled at each step),
// never the simulation: every other total, and the latencies, are the same
// at steps of 1 s, 250 ms and 100 ms.
func TestStepChangesOnlyTheSeries(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"long-outage-eviction", "store-outage", "deploy-restart"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := shared(t, load(t, name, "step=1s"))
			for _, step := range []string{"250ms", "100ms"} {
				out := run(t, load(t, name, "step="+step))
				for _, want := range base.Report.Designs {
					got := design(t, out, want.Name)
					w, g := want.Totals, got.Totals
					w.StorePeakBytes, w.StorePeakOpsPerS = 0, 0
					g.StorePeakBytes, g.StorePeakOpsPerS = 0, 0
					if diff := cmp.Diff(w, g); diff != "" {
						t.Errorf("%s/%s: totals at step %s differ from step 1s (-1s +%s):\n%s", name, want.Name, step, step, diff)
					}
					if diff := cmp.Diff(want.ReplayLatencyMS, got.ReplayLatencyMS); diff != "" {
						t.Errorf("%s/%s: replay latency at step %s differs from step 1s:\n%s", name, want.Name, step, diff)
					}
					if diff := cmp.Diff(want.RecoveryLatencyMS, got.RecoveryLatencyMS); diff != "" {
						t.Errorf("%s/%s: recovery latency at step %s differs from step 1s:\n%s", name, want.Name, step, diff)
					}
				}
			}
		})
	}
}
