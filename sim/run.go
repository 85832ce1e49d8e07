package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// Options tunes a run. A nil *Options means the defaults.
type Options struct {
	// Designs runs only these designs, in the scenario's order. Nil runs all.
	Designs []string
	// Parallel is how many designs run at once; 0 means GOMAXPROCS.
	Parallel int
	// Progress, if set, is called with increments of virtual time done,
	// summed over designs; the total is scenario.Horizon(sc) × designs. It may be
	// called from several goroutines at once.
	Progress func(delta time.Duration)

	// memCheck, in tests, is called after every change to an in-memory
	// store (memOp), to hold it to a store that evicts append by append.
	memCheck func(e *engine, op memOp, p, ai int32)
	// oracle, in tests, runs the per-event oracle (oracle.go) on every
	// design; mutReplay adds a deliberate error to the engine's replay count.
	oracle    bool
	mutReplay int32
	// cpuClock, in benchmarks, has each design's loop run on a thread of
	// its own and read that thread's CPU clock (Stats.CPU).
	cpuClock bool
}

// Output is a run's report plus what the report does not carry.
type Output struct {
	Report *report.Report
	Audit  map[string]*Audit
	Stats  map[string]Stats

	oracles map[string]*oracle // with Options.oracle, by design
}

// Run simulates every selected design of sc and returns the report.
func Run(ctx context.Context, sc *scenario.Scenario, opts *Options) (*Output, error) {
	if opts == nil {
		opts = &Options{}
	}
	designs, err := sc.Select(opts.Designs)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if len(designs) == 0 {
		return nil, scenario.ErrNoDesigns
	}
	var arrivals []int64
	if !sc.Requests() { // the request workload draws its own arrivals (requests.go)
		arrivals = workload.Arrivals(sc)
	}
	steadyS := workload.SteadyFromS(sc)
	steps := faults.Timeline(sc.Faults, sc.FaultContext())

	// Each design's row is made as soon as it finishes, and its engine (the
	// clients, attempts and stores) let go, so that a run holds the state of
	// only the designs running at once.
	r := scenario.Header(sc, "sim")
	done := make([]designDone, len(designs))
	par := opts.Parallel
	if par <= 0 {
		par = parallelism()
	}
	next := make(chan int, len(designs))
	for _, i := range runOrder(designs) {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range min(par, len(designs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					return
				}
				if err := runDesign(ctx, sc, designs[i], arrivals, steps, steadyS, r.Faults, opts, &done[i]); err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if firstErr != nil {
		return nil, firstErr
	}

	out := &Output{Audit: map[string]*Audit{}, Stats: map[string]Stats{}, oracles: map[string]*oracle{}}
	for i, dd := range done {
		name := designs[i].Name
		r.Designs = append(r.Designs, dd.row)
		out.Audit[name] = &dd.audit
		out.Stats[name] = dd.stats
		if dd.or != nil {
			out.oracles[name] = dd.or
		}
	}
	out.Report = r
	return out, nil
}

// designDone is what a run keeps of a design once it has finished.
type designDone struct {
	row   report.Design
	audit Audit
	stats Stats
	or    *oracle
}

// runDesign runs design d into dd: its row, audit and stats, the engine
// let go of as soon as its row is made.
func runDesign(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, arrivals []int64, steps []faults.Step, steadyS float64, fs []report.Fault, opts *Options, dd *designDone) error {
	if sc.Requests() {
		*dd = designDone{row: runRequests(ctx, sc, d, steps, fs)}
		if opts.Progress != nil {
			opts.Progress(scenario.Horizon(sc))
		}
		return nil
	}
	e, err := newEngine(ctx, sc, d, arrivals, steps, opts.Progress)
	if err != nil {
		return err
	}
	e.memCheck = opts.memCheck
	e.mutReplay = opts.mutReplay
	if opts.oracle {
		e.or = newOracle(e)
	}
	e.timedRun(opts.cpuClock)
	*dd = designDone{row: row(d, e, fs, steadyS), audit: e.audit, stats: e.stats, or: e.or}
	size := e.stateBytes()
	for _, b := range e.huge {
		unadviseHuge(b)
	}
	e = nil
	release(size)
	return nil
}

// runOrder is the order in which Run starts the designs: the costliest
// first, so that the last to finish is a cheap one and the cores are not
// left waiting on one long design at the end (longest processing time
// first). The cost is guessed from what a design keeps per stream event:
// an in-memory store (its eviction trees) above Redis (the shared heaps
// its model keeps) above none, shared sessions above the rest, and the
// scenario's order among equals. make bench-1m reports each design's loop
// time at 1M (loop-s-1m-<design>) and the run's wall time over its loops'
// time shared out over the cores (wall/loops-1m). The order changes no
// result: each design's engine is its own, and its row goes to its place
// in the report.
func runOrder(designs []*scenario.Design) []int {
	rank := func(d *scenario.Design) int {
		r := 0
		switch d.Events {
		case topology.EventsMemory:
			r = 4
		case topology.EventsRedis:
			r = 2
		}
		if d.Sessions == topology.SessionsShared {
			r++
		}
		return r
	}
	order := make([]int, len(designs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(designs[b]) - rank(designs[a]) })
	return order
}

// row is design d's row of the report, from its finished engine; steadyS
// is when the load reached its level (workload.SteadyFromS).
func row(d *scenario.Design, e *engine, fs []report.Fault, steadyS float64) report.Design {
	rd := report.Design{
		Name: d.Name, Mode: d.Mode, Sessions: d.Sessions, Events: d.Events, LB: d.LB,
		Profile: d.Client.Profile, Era: d.Era, Totals: e.t, Series: e.series,
		ReplayLatencyMS:   report.Summarise(e.replay),
		RecoveryLatencyMS: report.Summarise(e.recov),
	}
	if e.caps.CancelOnClose {
		c := e.cancelled
		rd.Cancelled = &c
	}
	if e.ls != nil {
		rd.Listen = e.listenBlock()
	}
	rd.Server, rd.Notes = report.ServerNotes(d.Server, "sim")
	if n := listenNote(e); n != "" {
		rd.Notes = append(rd.Notes, n)
	}
	rd.Unknown = []string{"events_leaked"} // only the live engine's isolation probes can see a leak
	rd.Notes = append(rd.Notes, rd.UnknownNote())
	rd.RecoveryAfterFaultS = report.RecoveryAfterFaults(&rd.Series, fs, steadyS)
	return rd
}

// stopper is polled by the engine's loop to honour cancellation.
type stopper interface{ Err() error }

func newEngine(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, arrivals []int64, steps []faults.Step, progress func(time.Duration)) (*engine, error) {
	s1, s2 := scenario.DesignSeed(sc.Seed, d.Name)
	rng := rand.New(rand.NewPCG(s1, s2))
	lb, err := topology.NewPolicy(d.LB, &topology.Options{Rand: rng})
	if err != nil {
		return nil, fmt.Errorf("sim: design %s: %w", d.Name, err)
	}
	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
	cc := d.Client
	cc.Discover = caps.Discover
	e := &engine{
		sc: sc, d: d, cc: cc, rng: rng, lb: lb, arrivals: arrivals, steps: steps, ctx: ctx, caps: caps,
		hasSessions: caps.Sessions,
		shared:      caps.Shared,
		events:      caps.Events,
		noResume:    caps.NoResume,
		priming:     caps.Priming,
		pollClose:   caps.PollClose,
		iv:          int64(float64(time.Second) / sc.Workload.EventRate),
	}
	e.evBytes = max(d.Store.MemoryEventBytes(sc.Workload.EventBytes), 1)
	e.redisCost = d.Store.RedisStreamCost(sc.Workload.EventBytes)
	if caps.Events == topology.EventsRedis {
		// Calls longer than the table (a long-tailed length, a large
		// events_max) work their bytes out.
		e.redisMemo = redisStreamMemo(&e.redisCost, min(max(sc.Workload.EventsMax, 0)+2, 1<<12))
	}
	if e.iv < 1 {
		e.iv = 1
	}
	if progress != nil {
		e.progress = func(ns int64) { progress(time.Duration(ns)) }
	}
	e.duration, e.horizon, e.step = int64(sc.Duration), int64(sc.Duration+sc.Drain), int64(sc.Step)
	e.ls = newListen(e)
	return e, nil
}

// timedRun runs the engine, timing its loop for the benchmark's cost per
// event: wall time, and with cpu the CPU time of the thread it ran on.
func (e *engine) timedRun(cpu bool) {
	if cpu {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	var cpu0 time.Duration
	ok := false
	if cpu {
		cpu0, ok = threadCPU()
	}
	start := time.Now()
	e.run()
	e.stats.Busy = time.Since(start)
	if cpu1, ok1 := threadCPU(); ok && ok1 {
		e.stats.CPU = cpu1 - cpu0
	}
}

// stateBytes is about what e's clients, attempts and queue take.
func (e *engine) stateBytes() int64 {
	return int64(len(e.clients))*int64(unsafe.Sizeof(client{})) +
		int64(cap(e.attempts))*int64(unsafe.Sizeof(attempt{})) +
		int64(cap(e.q.h))*int64(unsafe.Sizeof(event{}))
}

// releaseBytes is the size of a finished design's state from which its
// memory is collected at once: a run that large would otherwise start its
// next design on fresh pages while the finished one's wait for a collection
// that the heap's growth (GOGC: up to twice the live heap) puts off, and its
// peak RSS would approach twice what it holds (make bench-1m measures it).
// Below it the peak is small, and a collection per design is not worth its
// time to a plan sweep's thousands of small runs.
const releaseBytes = 64 << 20

// release collects a finished design's memory, once it is no longer
// referenced, if it held at least releaseBytes.
func release(size int64) {
	if size >= releaseBytes {
		runtime.GC()
	}
}

// parallelism is how many designs run at once by default.
func parallelism() int { return runtime.GOMAXPROCS(0) }
