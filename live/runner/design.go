package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/internal/tmpdir"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// runDesign brings up the design's topology, storms it, tears it down and
// judges the history: the steps of liveRun, in order.
func runDesign(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, opts *Options) (designOut, error) {
	logDir, err := tmpdir.Make("stormsim-live-") // removed below; a SIGKILLed run's, by the next run
	if err != nil {
		return designOut{}, err
	}
	defer os.RemoveAll(logDir)
	r := &liveRun{sc: sc, d: d, opts: opts, logDir: logDir, horizon: sc.Duration + sc.Drain}
	defer r.close()
	if err := r.startTopology(ctx); err != nil {
		return designOut{}, err
	}
	if err := r.startClients(ctx); err != nil {
		return designOut{}, err
	}
	interrupted := int64(0)
	if err := r.storm(ctx); err != nil {
		if opts.Salvage == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return designOut{}, err
		}
		// A signal stopped the load: the histories until then are
		// collected and judged within what Salvage allows.
		interrupted, ctx = max(min(r.dr.now(), int64(r.horizon)), 1), opts.Salvage
	}
	notKept := func(err error) error {
		if interrupted == 0 {
			return err
		}
		return &notKeptError{err: err, cause: context.Cause(ctx)}
	}
	h, ev, err := r.collect(ctx)
	if err != nil {
		return designOut{}, notKept(err)
	}
	h.Interrupted = interrupted
	if opts.Judging != nil {
		opts.Judging(d.Name, len(h.Receipts))
	}
	row, res, err := judge(ctx, h, ev)
	if err != nil {
		return designOut{}, notKept(err)
	}
	return designOut{row: row, h: h, res: res, marks: r.marks, started: r.started, clients: len(r.cl), applied: r.fp.serverApplied, tool: r.dr.tool}, nil
}

// notKeptError is why the histories of a design's run that a signal
// interrupted could not be kept (Options.Salvage): err, and the end of
// Salvage (its cause), if it ended.
type notKeptError struct{ err, cause error }

func (e *notKeptError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%v (%v)", e.err, e.cause)
	}
	return e.err.Error()
}

func (e *notKeptError) Unwrap() error { return e.err }

// liveRun is one design's run. Each step sets the fields below its name,
// and reads only what the steps before it set.
type liveRun struct {
	sc      *scenario.Scenario
	d       *scenario.Design
	opts    *Options
	logDir  string
	horizon time.Duration

	// startTopology
	t        *topo.Topology // nil for a server at a URL, or a stormsim up's
	endpoint string
	closed   bool // t is closed

	// startClients
	tr       *http.Transport
	dr       *designRun
	arrivals []int64
	cl       []liveClient
	tsp      *tsProc
	started  time.Time // when the run's clock started, as this process saw it

	// storm
	ls      *listeners // the listening clients (listen.go); nil when none listen
	fp      *faultPlay
	sampler *storeSampler
	watch   *storeWatch

	// collect
	marks []report.Fault // the unscheduled marks: exits, replicas never ready, the store unreachable
}

// close lets go of whatever the steps started, if they have not.
func (r *liveRun) close() {
	if r.tsp != nil {
		r.tsp.close()
	}
	if r.tr != nil {
		r.tr.CloseIdleConnections()
	}
	if !r.closed && r.t != nil {
		r.t.Close()
	}
}

// startTopology starts stormsim's topology for the design, unless the
// clients aim at a server the user brings at a URL or at a stormsim up.
func (r *liveRun) startTopology(ctx context.Context) error {
	own, opts := r.d.Own, r.opts
	switch {
	case own != nil && own.URL != "":
		r.endpoint = own.URL
	case own == nil && opts.Endpoint != "":
		r.endpoint = opts.Endpoint // a stormsim up's
	default:
		t, err := topo.Start(ctx, r.sc, r.d, &topo.Options{Bin: opts.Bin, File: opts.File, LogDir: r.logDir, Set: opts.Set, RedisAddr: opts.RedisAddr, Counts: true})
		if err != nil {
			return fmt.Errorf("live: design %s: %w", r.d.Name, err)
		}
		r.t, r.endpoint = t, t.Endpoint()
	}
	return nil
}

// startClients makes the design's clients (native, go-sdk or ts-sdk ones,
// the shard's alone) and waits for the start: the clock starts then.
func (r *liveRun) startClients(ctx context.Context) error {
	sc, d, own := r.sc, r.d, r.d.Own
	r.tr = &http.Transport{
		Proxy:               nil,
		DialContext:         r.opts.host.dial(&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}),
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	dr, err := newDesignRun(sc, d, r.endpoint, r.tr, r.opts)
	if err != nil {
		return err
	}
	r.dr = dr
	if d.Server == topology.ServerTSSDK {
		dr.opaqueIDs, dr.resultOnly = true, 1
	}
	if own != nil {
		dr.tool = own.Tool.Name
		if dr.tool == "" {
			if dr.tool, err = discoverTool(ctx, dr.http, r.endpoint, d.Era); err != nil {
				return fmt.Errorf("live: design %s: %w", d.Name, err)
			}
		}
	}
	if n := d.Client.MaxConcurrentReconnects; n > 0 {
		dr.reconnSem = make(chan struct{}, n)
	}
	if sc.ProbesFor(d) && !r.opts.sharded() {
		dr.iso = newIsolation(dr, r.t)
	}
	if d.Client.Impl == clients.ImplTSSDK {
		if r.tsp, err = startTSProc(dr); err != nil {
			return fmt.Errorf("live: design %s: %w", d.Name, err)
		}
	}
	r.makeClients()
	return r.waitStart(ctx)
}

// makeClients makes a client per arrival of the shard: go-sdk or ts-sdk
// ones for client.impl_share of them when the design says so, native ones
// for the rest.
func (r *liveRun) makeClients() {
	sc, d := r.sc, r.d
	r.arrivals = workload.Arrivals(sc)
	r.cl = make([]liveClient, 0, len(r.arrivals))
	share := d.Client.ImplShare
	if share == 0 {
		share = 1
	}
	for i := range r.arrivals {
		if !r.opts.inShard(i) {
			continue // another shard's client
		}
		if d.Client.Impl == clients.ImplGoSDK && workload.Pick(sc.Seed, implPick, uint64(i)) < share {
			r.cl = append(r.cl, newSDKClient(r.dr, int32(i), r.tr))
		} else if r.tsp != nil && workload.Pick(sc.Seed, implPick, uint64(i)) < share {
			r.cl = append(r.cl, newTSClient(r.dr, int32(i), r.tr, r.tsp))
		} else {
			r.cl = append(r.cl, newClient(r.dr, int32(i)))
		}
	}
}

// waitStart starts the run's clock: now, or at the barrier every shard
// waits for (and a run with admission windows on a window boundary).
func (r *liveRun) waitStart(ctx context.Context) error {
	dr := r.dr
	dr.t0 = time.Now()
	r.started = dr.t0
	if startAt := startOf(r.opts.StartAt, dr.t0, &r.d.Replica); !startAt.IsZero() {
		tm := time.NewTimer(time.Until(startAt))
		select {
		case <-ctx.Done():
			tm.Stop()
			return fmt.Errorf("live: design %s: waiting for the start at %s: %w", r.d.Name, startAt.Format(time.RFC3339Nano), ctx.Err())
		case <-tm.C:
		}
		r.started = time.Now()
		dr.t0 = startAt
	}
	return nil
}

// storm runs the clients, the isolation probes, the store's sampler and
// watch and the fault schedule until the horizon, reporting progress, and
// waits for all of them to end.
func (r *liveRun) storm(ctx context.Context) error {
	dr, t := r.dr, r.t
	runCtx, cancel := context.WithDeadline(ctx, dr.t0.Add(r.horizon))
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range r.cl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(runCtx, r.arrivals[c.ident()])
		}()
	}
	if dr.iso != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dr.iso.run(runCtx)
		}()
	}
	r.startListeners(runCtx, &wg)
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	if t != nil {
		r.sampler = sampleStore(runCtx, t, dr.t0, r.sc.Step, r.horizon)
		if t.RedisAddr() != "" {
			var err error
			if r.watch, err = watchStore(runCtx, t, dr.t0); err != nil {
				cancel()
				<-allDone
				<-r.sampler.done
				return fmt.Errorf("live: design %s: %w", r.d.Name, err)
			}
		}
	}
	// The fault schedule, carried out at its times.
	r.fp = newFaultPlay(dr, t, r.cl, r.opts)
	faultErr := make(chan error, 1)
	go func() {
		err := r.fp.play(runCtx, allDone)
		if err != nil {
			cancel()
		}
		faultErr <- err
	}()
	reported := r.progress(runCtx, allDone)
	cancel()
	r.fp.hooks.Wait() // every hook is killed when runCtx ends
	if r.sampler != nil {
		<-r.sampler.done
	}
	if r.watch != nil {
		<-r.watch.done
	}
	if err := <-faultErr; err != nil {
		return err
	}
	if r.opts.Progress != nil {
		r.opts.Progress(r.horizon - reported)
	}
	return ctx.Err()
}

// progress reports the wall time once a second until every client is done
// (or the run ends, and then they are); it returns the time reported.
func (r *liveRun) progress(runCtx context.Context, allDone <-chan struct{}) time.Duration {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	reported := time.Duration(0)
	for {
		select {
		case <-allDone:
			return reported
		case <-runCtx.Done():
			<-allDone
			return reported
		case <-tick.C:
			if r.opts.Progress != nil {
				el := min(time.Since(r.dr.t0), r.horizon)
				r.opts.Progress(el - reported)
				reported = el
			}
		}
	}
}

// collect reads the server side's counts, stops the topology, and joins
// the clients' histories with the production logs and the faults applied:
// the history, and the evidence the judge reads beside it.
func (r *liveRun) collect(ctx context.Context) (*history.History, *evidence, error) {
	sc, d, dr, t, own := r.sc, r.d, r.dr, r.t, r.d.Own
	var exits []topo.Exit
	// The server side's own counts, read before the replicas go.
	counts, noCounts := serverCounts(ctx, t, sc, d, dr.t0)
	if t != nil {
		if f, err := t.LBFiles(ctx); err == nil && f.Short() {
			r.opts.host.noteShort("design " + d.Name + ": " + f.String())
		}
	}
	if noCounts == "no topology" && own == nil {
		noCounts = "the replicas are a stormsim up's: stormsim merge --up-logs reconciles a run with up's counters once up has stopped"
	}
	if t != nil {
		t.Close() // every replica is gone: the production logs are complete
		exits = t.Exits()
	}
	r.closed = true
	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
	h := &history.History{
		Horizon: int64(r.horizon), Step: int64(sc.Step), Interval: int64(time.Duration(dr.intervalMS) * time.Millisecond),
		Stored:         own == nil && caps.HasStore(),
		NoStore:        own == nil && !caps.HasStore(),
		HaveProduction: own == nil && t != nil,
		ByEventID:      own != nil,
	}
	for _, c := range r.cl {
		h.Join(c.history())
	}
	prod, redisLines, err := readLogs(r.logDir, dr.t0)
	if err != nil {
		return nil, nil, fmt.Errorf("live: design %s: %w", d.Name, err)
	}
	h.Produced = prod
	if own == nil {
		r.opts.host.addProduced(h, storeFaultAt(sc))
	}
	for _, l := range redisLines {
		r.fp.logf("%.1fs: replica %d: go-redis: %s", l.at.Seconds(), l.slot, l.msg)
	}
	ev := &evidence{d: d, t0: dr.t0, endpoint: r.endpoint, tool: dr.tool, faults: scenario.Header(sc, "live").Faults, steadyS: workload.SteadyFromS(sc),
		counts: counts, noCounts: noCounts, exits: exits, neverReady: r.fp.neverReady, hookNotes: r.fp.hookNotes,
		guardNotes: dr.guard.notes(), iso: dr.iso, sampler: r.sampler,
		sharedRedis: r.opts.RedisAddr != "" && t != nil && t.RedisAddr() != "" && d.Events == topology.EventsRedis,
	}
	if own == nil && t == nil {
		ev.up = upNote(r.endpoint, false)
	}
	ev.listen, ev.listenNote = listenRow(r.ls, counts, sc.Step)
	h.Faults = r.unscheduled(ev, r.fp.applied)
	return h, ev, nil
}

// unscheduled marks what happened that no fault asked for (a replica that
// exited, one a fault started that never became ready, the store
// unreachable) in r.marks, adds them to the faults applied, and notes the
// store's outages in ev.
func (r *liveRun) unscheduled(ev *evidence, applied []history.Applied) []history.Applied {
	d, dr := r.d, r.dr
	for _, x := range ev.exits {
		at := x.At.Sub(dr.t0)
		applied = append(applied, history.Applied{At: int64(at), Kind: "exit: " + x.String(), Step: -1, Replica: x.Slot})
		label := fmt.Sprintf("%s: replica %d exited", d.Name, x.Slot)
		if x.Slot < 0 {
			label = d.Name + ": the load balancer exited"
		}
		r.marks = append(r.marks, report.Fault{Kind: report.KindExit, Label: label, AtS: at.Seconds(), UntilS: at.Seconds(), Unscheduled: true})
		r.fp.logf("%.1fs: %s", at.Seconds(), x)
	}
	for _, nr := range ev.neverReady {
		r.marks = append(r.marks, report.Fault{Kind: report.KindNeverReady, Label: fmt.Sprintf("%s: replica %d never ready again", d.Name, nr.err.Slot),
			AtS: nr.from.Seconds(), UntilS: r.horizon.Seconds(), Unscheduled: true})
	}
	if r.watch == nil {
		return applied
	}
	end := min(time.Since(dr.t0), r.horizon)
	ev.storeNotes = r.watch.notes(end)
	for i, o := range r.watch.outages {
		until := o.until
		if until == 0 {
			until = end
		}
		applied = append(applied, history.Applied{At: int64(o.from), Kind: "store unreachable: " + o.why, Step: -1, Replica: -1})
		r.marks = append(r.marks, report.Fault{Kind: report.KindStoreUnreachable, Label: fmt.Sprintf("%s: redis unreachable", d.Name),
			AtS: ms(o.from), UntilS: ms(until), Unscheduled: true})
		if i < len(ev.storeNotes) {
			r.fp.logf("%.1fs: %s", o.from.Seconds(), ev.storeNotes[i])
		}
	}
	return applied
}
