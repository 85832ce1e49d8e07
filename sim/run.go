package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// ErrNoDesigns is returned when the design subset matches nothing.
var ErrNoDesigns = errors.New("sim: no designs to run")

// Options tunes a run. A nil *Options means the defaults.
type Options struct {
	// Designs runs only these designs, in the scenario's order. Nil runs all.
	Designs []string
	// Parallel is how many designs run at once; 0 means GOMAXPROCS.
	Parallel int
	// Progress, if set, is called with increments of virtual time done,
	// summed over designs; the total is Horizon(sc) × designs. It may be
	// called from several goroutines at once.
	Progress func(delta time.Duration)

	// memCheck, in tests, is called after every change to an in-memory
	// store (memOp), to hold it to a store that evicts append by append.
	memCheck func(e *engine, op memOp, p, ai int32)
	// oracle, in tests, runs the per-event oracle (oracle.go) on every
	// design; mutReplay adds a deliberate error to the engine's replay count.
	oracle    bool
	mutReplay int32
}

// Output is a run's report plus what the report does not carry.
type Output struct {
	Report *report.Report
	Audit  map[string]*Audit
	Stats  map[string]Stats

	oracles map[string]*oracle // with Options.oracle, by design
}

// Horizon is the virtual time a run covers: the scenario plus its drain.
func Horizon(sc *scenario.Scenario) time.Duration { return sc.Duration + sc.Drain }

// Arrivals is workload.Arrivals: the clients' arrival times in nanoseconds.
func Arrivals(sc *scenario.Scenario) []int64 { return workload.Arrivals(sc) }

// DesignSeed derives a design's RNG seed from the run seed and its name, so
// a design's row does not depend on which other designs run.
func DesignSeed(seed uint64, design string) (uint64, uint64) {
	h := sha256.Sum256([]byte(design))
	return seed ^ binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])
}

// Hash is the scenario's fingerprint: a hash of its resolved settings.
func Hash(sc *scenario.Scenario) string {
	b, err := json.Marshal(sc)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
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
		return nil, ErrNoDesigns
	}
	arrivals := Arrivals(sc)
	steps := faults.Timeline(sc.Faults, sc.FaultContext())

	// Each design's row is made as soon as it finishes, and its engine (the
	// clients, attempts and stores) let go, so that a run holds the state of
	// only the designs running at once.
	r := Header(sc, "sim")
	done := make([]designDone, len(designs))
	par := opts.Parallel
	if par <= 0 {
		par = parallelism()
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i, d := range designs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			e, err := newEngine(ctx, sc, d, arrivals, steps, opts.Progress)
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
				return
			}
			e.memCheck = opts.memCheck
			e.mutReplay = opts.mutReplay
			if opts.oracle {
				e.or = newOracle(e)
			}
			start := time.Now() // for the benchmark's cost per event only
			e.run()
			e.stats.Busy = time.Since(start)
			done[i] = designDone{row: row(d, e, r.Faults), audit: e.audit, stats: e.stats, or: e.or}
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

// row is design d's row of the report, from its finished engine.
func row(d *scenario.Design, e *engine, fs []report.Fault) report.Design {
	rd := report.Design{
		Name: d.Name, Mode: d.Mode, Sessions: d.Sessions, Events: d.Events, LB: d.LB,
		Profile: d.Client.Profile, Era: d.Era, Totals: e.t, Series: e.series,
		ReplayLatencyMS:   report.Summarise(e.replay),
		RecoveryLatencyMS: report.Summarise(e.recov),
	}
	rd.Server, rd.Notes = report.ServerNotes(d.Server, "sim")
	rd.Unknown = []string{"events_leaked"} // only the live engine's isolation probes can see a leak
	rd.Notes = append(rd.Notes, rd.UnknownNote())
	rd.RecoveryAfterFaultS = report.RecoveryAfterFaults(&rd.Series, fs)
	return rd
}

// Header is a report for sc with no designs yet: what every engine writes
// first, the fault schedule included.
func Header(sc *scenario.Scenario, engine string) *report.Report {
	r := &report.Report{
		Schema: report.Schema, StormsimVersion: report.Version, Scenario: sc.Name,
		Description: sc.Description, ScenarioHash: Hash(sc), Engine: engine, Seed: sc.Seed,
		DurationS: sc.Duration.Seconds(), Faults: []report.Fault{}, Designs: []report.Design{},
		Notes: sc.WarningTexts(nil),
	}
	ctxF := sc.FaultContext()
	for _, f := range sc.Faults {
		sp := f.Span(ctxF)
		r.Faults = append(r.Faults, report.Fault{Kind: f.Kind(), Label: sp.Label, AtS: sp.At.Seconds(), UntilS: sp.Until.Seconds()})
	}
	return r
}

// stopper is polled by the engine's loop to honour cancellation.
type stopper interface{ Err() error }

func newEngine(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, arrivals []int64, steps []faults.Step, progress func(time.Duration)) (*engine, error) {
	s1, s2 := DesignSeed(sc.Seed, d.Name)
	rng := rand.New(rand.NewPCG(s1, s2))
	lb, err := topology.NewPolicy(d.LB, &topology.Options{Rand: rng})
	if err != nil {
		return nil, fmt.Errorf("sim: design %s: %w", d.Name, err)
	}
	era2026 := d.Era == "2026-07-28"
	e := &engine{
		sc: sc, d: d, rng: rng, lb: lb, arrivals: arrivals, steps: steps, ctx: ctx,
		hasSessions: d.Sessions != topology.SessionsNone && !era2026,
		shared:      d.Sessions == topology.SessionsShared && !era2026,
		events:      d.Events,
		noResume:    era2026,
		iv:          int64(float64(time.Second) / sc.Workload.EventRate),
	}
	if era2026 {
		e.events = topology.EventsNone
	}
	e.priming = e.events != topology.EventsNone && d.Era != "2025-06-18"
	e.pollClose = e.events != topology.EventsNone && d.Era == "2025-11-25"
	e.evBytes = max(d.Store.MemoryEventBytes(sc.Workload.EventBytes), 1)
	e.redisCost = d.Store.RedisStreamCost(sc.Workload.EventBytes)
	if e.iv < 1 {
		e.iv = 1
	}
	if progress != nil {
		e.progress = func(ns int64) { progress(time.Duration(ns)) }
	}
	return e, nil
}

// parallelism is how many designs run at once by default.
func parallelism() int { return runtime.GOMAXPROCS(0) }
