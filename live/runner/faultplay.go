package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/workload"
)

// faultPlay is a design's fault schedule carried out at its times by the
// live player (topo.Play): client drops by the clients themselves, on the
// clients the simulator picks; an own server's fault hooks; a stormsim
// up's faults through Options.ServerFault; the rest on stormsim's
// topology. The fields below the line are written while the schedule
// plays and read once play has returned (hookNotes once hooks is done).
type faultPlay struct {
	sc       *scenario.Scenario
	dr       *designRun
	opts     *Options
	t        *topo.Topology // nil for a server at a URL, or a stormsim up's
	cl       []liveClient
	timeline []faults.Step
	faultAt  map[int]time.Duration // each fault's first step
	hooked   map[int]bool          // the faults whose hook ran
	sent     map[int]bool          // the faults sent to ServerFault

	applied       []history.Applied
	neverReady    []neverReadySlot
	serverApplied []string // Options.ServerFault's steps and the hooks run
	hooks         sync.WaitGroup
	hookMu        sync.Mutex
	hookNotes     []string // guarded by hookMu
}

func newFaultPlay(dr *designRun, t *topo.Topology, cl []liveClient, opts *Options) *faultPlay {
	fp := &faultPlay{sc: dr.sc, dr: dr, opts: opts, t: t, cl: cl,
		timeline: faults.Timeline(dr.sc.Faults, dr.sc.FaultContext()),
		faultAt:  map[int]time.Duration{}, hooked: map[int]bool{}, sent: map[int]bool{}}
	for _, s := range fp.timeline {
		if at, ok := fp.faultAt[s.Fault]; !ok || s.At < at {
			fp.faultAt[s.Fault] = s.At
		}
	}
	return fp
}

// play carries the schedule out until ctx ends or stop closes; an error is
// a step that failed while the run went on.
func (fp *faultPlay) play(ctx context.Context, stop <-chan struct{}) error {
	return topo.Play(ctx, stop, fp.dr.t0, fp.timeline, func(si int, s faults.Step) error { return fp.step(ctx, si, s) })
}

// logf writes a line of the run's log about the design.
func (fp *faultPlay) logf(format string, args ...any) {
	if fp.opts.Log != nil {
		fmt.Fprintf(fp.opts.Log, "live %s: %s\n", fp.dr.d.Name, fmt.Sprintf(format, args...))
	}
}

// step carries out step si of the timeline.
func (fp *faultPlay) step(ctx context.Context, si int, s faults.Step) error {
	fp.dr.host.timer(fp.dr.now() - int64(s.At))
	own := fp.dr.own
	switch {
	case s.Kind == faults.StepClientDrop:
		fp.drop(si, s)
		return nil
	case own != nil && own.FaultHook[fp.sc.Faults[s.Fault].Kind()] != "":
		fp.hook(ctx, si, s)
		return nil
	case fp.t == nil && own == nil && fp.opts.Endpoint != "":
		return fp.viaUp(ctx, si, s)
	case fp.t == nil:
		return nil // refused when the scenario was loaded; nothing to act on
	}
	return fp.onTopology(ctx, si, s)
}

// drop cuts the streams of the clients the simulator picks for the step.
func (fp *faultPlay) drop(si int, s faults.Step) {
	n := 0
	for _, c := range fp.cl {
		if workload.Pick(fp.sc.Seed, uint64(s.Fault), uint64(c.ident())) < s.Fraction && c.cut(cutFault, s.Away, 0) {
			n++
		}
	}
	fp.applied = append(fp.applied, history.Applied{At: fp.dr.now(), Kind: "client-drop", Step: si})
	fp.logf("%v: client-drop: %d streams dropped", s.At, n)
}

// hook runs an own server's fault hook, which replaces stormsim's own
// action: once, at the fault's first step; in a sharded run, by shard 0
// alone.
func (fp *faultPlay) hook(ctx context.Context, si int, s faults.Step) {
	kind := fp.sc.Faults[s.Fault].Kind()
	cmd := fp.dr.own.FaultHook[kind]
	if fp.hooked[s.Fault] {
		return
	}
	fp.hooked[s.Fault] = true
	if fp.opts.sharded() && fp.opts.ShardIndex != 0 {
		fp.applied = append(fp.applied, history.Applied{At: int64(s.At), Kind: kind + " (fault_hook; run by shard 0)", Step: si, Replica: s.Replica})
		return
	}
	dr := fp.dr
	fp.applied = append(fp.applied, history.Applied{At: dr.now(), Kind: kind + " (fault_hook)", Step: si, Replica: s.Replica})
	fp.serverApplied = append(fp.serverApplied, fmt.Sprintf("%s: fault_hook %q", kind, cmd))
	fp.logf("%v: %s: running fault_hook %q", s.At, kind, cmd)
	fp.hooks.Add(1)
	go func() {
		defer fp.hooks.Done()
		at := dr.now()
		out, err := topo.RunHook(ctx, filepath.Dir(fp.opts.fileOr()), cmd, hookEnv(kind, s.Fault, s.Replica, s.At))
		res := "exit status 0"
		if err != nil {
			res = err.Error()
		}
		note := fmt.Sprintf("fault_hook for %s (faults[%d]) ran at %.1f s for %.1f s: %s", kind, s.Fault, float64(at)/1e9, float64(dr.now()-at)/1e9, res)
		if out != "" {
			note += "; its last output: " + out
		}
		fp.hookMu.Lock()
		fp.hookNotes = append(fp.hookNotes, note)
		fp.hookMu.Unlock()
		fp.logf("%s", note)
	}()
}

// viaUp is a step on a stormsim up's topology: shard 0 has up apply the
// whole fault at its first step (the later steps at their own times, by
// up); the other shards record it.
func (fp *faultPlay) viaUp(ctx context.Context, si int, s faults.Step) error {
	switch {
	case fp.opts.ServerFault == nil:
		fp.applied = append(fp.applied, history.Applied{At: int64(s.At), Kind: s.Describe() + " (scheduled; applied by shard 0)", Step: si, Replica: s.Replica})
	case !fp.sent[s.Fault]:
		fp.sent[s.Fault] = true
		f, err := atZero(fp.sc.Faults[s.Fault])
		var done []string
		if err == nil {
			done, err = fp.opts.ServerFault(ctx, f)
		}
		if err != nil {
			return fmt.Errorf("live: design %s: fault %s at %v through stormsim up: %w", fp.dr.d.Name, fp.sc.Faults[s.Fault].Kind(), s.At, err)
		}
		fp.serverApplied = append(fp.serverApplied, done...)
		fp.applied = append(fp.applied, history.Applied{At: fp.dr.now(), Kind: s.Describe() + " (stormsim up)", Step: si, Replica: s.Replica})
		fp.logf("%v: %s: sent to stormsim up: %s", s.At, s.Describe(), strings.Join(done, "; "))
	default:
		fp.applied = append(fp.applied, history.Applied{At: int64(s.At), Kind: s.Describe() + " (by stormsim up, at its time)", Step: si, Replica: s.Replica})
	}
	return nil
}

// onTopology carries a step out on stormsim's topology. A replica a fault
// started that never became ready is reported, and the run goes on
// without it.
func (fp *faultPlay) onTopology(ctx context.Context, si int, s faults.Step) error {
	dr := fp.dr
	if err := fp.t.Apply(ctx, s); err != nil {
		var nr *topo.NotReadyError
		if errors.As(err, &nr) && (s.Kind == faults.StepStart || s.Kind == faults.StepScale) {
			from := fp.faultAt[s.Fault]
			if s.Kind == faults.StepScale {
				from = s.At
			}
			fp.neverReady = append(fp.neverReady, neverReadySlot{from: from, err: nr})
			fp.applied = append(fp.applied, history.Applied{At: dr.now(), Kind: fmt.Sprintf("never ready: replica %d", nr.Slot), Step: si, Replica: nr.Slot})
			fp.logf("%v: %v", s.At, nr)
			return nil
		}
		return fmt.Errorf("live: design %s: fault step at %v: %w", dr.d.Name, s.At, err)
	}
	fp.applied = append(fp.applied, history.Applied{At: dr.now(), Kind: s.Describe(), Step: si, Replica: s.Replica})
	fp.logf("%v: %s", s.At, s.Describe())
	return nil
}
