// Package runner is the live engine: it runs a scenario from scenarios.toml
// for real, one design at a time, on the live topology (replica processes, a
// private redis-server, the load balancer), with one goroutine per virtual
// client driving the same clients.Brain as the simulator over net/http. The
// clients arrive on the same vegeta-paced schedule as in the simulator, make
// the same calls and drop at the same instants for the same seed; the fault
// steps are carried out for real at their times.
//
// Nothing is counted during the run. Every client records its history, every
// replica logs what it produced, and package check judges the joined
// history afterwards into the same report.Report the simulator writes, with
// engine "live". Every HTTP exchange is also a vegeta Result, for results.bin
// and for the vegeta Metrics summary under each design's "http".
//
//	out, err := runner.Run(ctx, sc, &runner.Options{Bin: "bin/stormsim", File: "scenarios.toml"})
package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/internal/tmpdir"
	"github.com/stormsim/stormsim/live/redislog"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// Options tunes a live run. A nil *Options means the defaults.
type Options struct {
	Bin  string // the stormsim binary the replicas run; the running executable by default
	File string // the scenarios file the replicas load; scenarios.toml by default
	// Designs runs only these designs, in the scenario's order. Nil runs all.
	Designs []string
	// Parallel is how many designs run at once; 0 means 1: one after
	// another, so that the designs do not compete for the CPU.
	Parallel int
	// Progress, if set, is called with increments of wall time done, summed
	// over designs; the total is the horizon times the number of designs.
	Progress func(delta time.Duration)
	// Results, if set, receives every HTTP exchange as a vegeta Result, in
	// vegeta's binary format (results.bin), Attack set to the design.
	Results io.Writer
	// Log, if set, is the run's log: one line per fault step applied, per
	// unexpected exit and per store outage, and go-redis's own log lines,
	// the runner's and the replicas', which would otherwise go to stderr
	// (the first maxRedisLogLines of each). Without it they are dropped.
	Log io.Writer
	// Set are the --set overrides the scenario was loaded with; the
	// replicas load it with the same ones.
	Set []string
	// RedisAddr uses an existing Redis (a redis:// URL or host:port) for
	// the designs that need one instead of a private redis-server per
	// design. stormsim never stops or restarts it: a scenario with store
	// faults is refused.
	RedisAddr string
	// InjectLateness is added to every lateness sample of the run (client
	// timers, drops, fault steps, producers): a test hook that makes the
	// host read as saturated, deterministically. 0 in a real run.
	InjectLateness time.Duration

	// ShardIndex and ShardCount run one shard of a run split ShardCount
	// ways: only the clients whose id % ShardCount == ShardIndex. Every
	// draw of a client is keyed by its id, so a client behaves the same
	// in any shard. ShardCount 0 runs every client.
	ShardIndex, ShardCount int
	// StartAt, if set, is the barrier every shard waits for: the run's
	// clock starts there, not when this process is ready, so that the
	// shards' histories share one time base. A shard that reaches it late
	// starts at once, its clients' arrivals already due.
	StartAt time.Time
	// Endpoint aims the clients at a topology stormsim did not start here
	// (a stormsim up): no topology, no production logs, no counters.
	Endpoint string
	// ServerFault, with Endpoint, applies a server-side fault of the
	// schedule (at its first step, its own times from there) to the
	// target, as shard 0 does through up's control endpoint; it returns
	// the steps done. Nil with Endpoint records the schedule and applies
	// nothing: the other shards.
	ServerFault func(ctx context.Context, f faults.Fault) ([]string, error)

	host *hostWatch // set by Run: the lateness of this run
}

// sharded reports whether the run is a shard (of one or more): its
// clients are judged with the others by stormsim merge.
func (o *Options) sharded() bool { return o.ShardCount > 0 }

// inShard reports whether client id belongs to the run's shard.
func (o *Options) inShard(id int) bool {
	return o.ShardCount <= 1 || id%o.ShardCount == o.ShardIndex
}

// maxRedisLogLines is how many of go-redis's own log lines a run's log
// keeps from the runner, and from each replica.
const maxRedisLogLines = 1000

// Output is a live run's report plus the histories it was judged from.
type Output struct {
	Report    *report.Report
	Histories map[string]*history.History
	// Results counts the vegeta Results written per design.
	Results map[string]int
	// Started is when the run's clock started (the last design's): with
	// Options.StartAt, when this process read the barrier passed.
	Started time.Time
	// Clients is how many clients ran, summed over the designs.
	Clients int
	// FaultsApplied are the server-side fault steps ServerFault carried
	// out and the fault hooks run.
	FaultsApplied []string
	// Tool is the tool an own server's clients called (the last design's).
	Tool string
}

// liveClient is a virtual client: a native one (vclient) or one of the
// go-sdk's (sdkClient).
type liveClient interface {
	// run lives the client's life from its arrival until the run ends.
	run(ctx context.Context, arrival int64)
	// cut drops the client's open stream, if it has one of generation gen
	// (0: any); away keeps it off the network that long (cutFault).
	cut(why int, away time.Duration, gen uint64) bool
	// history is what the client recorded, read once the run is over.
	history() *history.History
	ident() int32
}

// implPick is the workload.Pick stream that chooses which clients use the
// design's client.impl (fault streams are numbered from 0).
const implPick = 1 << 40

// designRun is the shared state of one design's run.
type designRun struct {
	sc         *scenario.Scenario
	d          *scenario.Design
	t0         time.Time
	endpoint   string
	http       *http.Client
	intervalMS int
	noResume   bool
	reconnSem  chan struct{}       // client.max_concurrent_reconnects, shared by the design's clients; nil for none
	own        *scenario.OwnServer // a server the user brings; nil for stormsim's replicas
	tool       string              // the own server's tool
	// opaqueIDs: the server's event ids name no index (the ts-sdk
	// server's); resumes send the last id received. resultOnly is what a
	// call's events count beyond its progress notifications: the ts-sdk
	// server's tool sends progress 1..N of N and then the result, so a
	// call of e events asks it for e-1.
	opaqueIDs  bool
	resultOnly int32
	host       *hostWatch // the run's lateness
	iso        *isolation // the isolation probes; nil when off
	target     *url.URL   // endpoint, parsed: the origin no redirect leaves
	guard      *guard     // what the clients refused from the server
}

func (d *designRun) now() int64 { return int64(time.Since(d.t0)) }

// ownLength is the expected length of a call the workload draws e events
// long: e, unless the design's own server is not told the length (its
// tool's arguments have no {events}); then only the result is expected
// until the server sends more, and the length is unknown (report.LengthUnknown).
func (d *designRun) ownLength(e int32) int32 {
	if d.own != nil && !d.own.HonoursEvents() {
		return 1
	}
	return e
}

func (d *designRun) seed() (uint64, uint64) { return scenario.DesignSeed(d.sc.Seed, d.d.Name) }

// Run runs every selected design of sc live and returns the report.
func Run(ctx context.Context, sc *scenario.Scenario, opts *Options) (*Output, error) {
	if opts == nil {
		opts = &Options{}
	}
	if sc.Requests() {
		return nil, fmt.Errorf("live: scenario %s: workload.kind = %q runs in the simulator only (--engine sim)", sc.Name, scenario.KindRequests)
	}
	designs, err := sc.Select(opts.Designs)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if len(designs) == 0 {
		return nil, scenario.ErrNoDesigns
	}
	if opts.RedisAddr != "" {
		if err := storeFaultsRefused(sc, designs); err != nil {
			return nil, err
		}
	}
	o := *opts
	opts = &o
	opts.host = newHostWatch(opts.InjectLateness)
	if opts.Log != nil {
		opts.Log = &lockedWriter{w: opts.Log} // the designs write to it side by side
	}
	logTo := io.Discard
	if opts.Log != nil {
		logTo = opts.Log
	}
	defer redislog.To(redislog.Capped(maxRedisLogLines, func(msg string) {
		fmt.Fprintf(logTo, "live: go-redis: %s\n", msg)
	}))()
	par := max(opts.Parallel, 1)
	outs := make([]designOut, len(designs))
	errs := make([]error, len(designs))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, d := range designs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			outs[i], errs[i] = runDesign(ctx, sc, d, opts)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := scenario.Header(sc, "live")
	requests := 0
	for _, o := range outs {
		requests += len(o.h.Requests)
	}
	r.Host = opts.host.verdict(requests)
	hooked := hookedKinds(designs)
	for i := range r.Faults {
		if slices.Contains(hooked, r.Faults[i].Kind) {
			r.Faults[i].Label += " (fault_hook)"
		}
	}
	for _, o := range outs {
		r.Faults = append(r.Faults, o.marks...)
	}
	out := &Output{Report: r, Histories: map[string]*history.History{}, Results: map[string]int{}}
	var enc vegeta.Encoder
	if opts.Results != nil {
		enc = vegeta.NewEncoder(opts.Results)
	}
	for i, d := range designs {
		o := &outs[i]
		o.row.RecoveryAfterFaultS = report.RecoveryAfterFaults(&o.row.Series, r.Faults)
		r.Designs = append(r.Designs, o.row)
		out.Histories[d.Name] = o.h
		out.Results[d.Name] = len(o.res)
		out.Started = o.started
		out.Clients += o.clients
		out.FaultsApplied = append(out.FaultsApplied, o.applied...)
		out.Tool = o.tool
		if enc != nil {
			for j := range o.res {
				if err := enc.Encode(&o.res[j]); err != nil {
					return nil, fmt.Errorf("live: writing results: %w", err)
				}
			}
		}
	}
	return out, nil
}

// designOut is what one design's run gives back.
type designOut struct {
	row     report.Design
	h       *history.History
	res     []vegeta.Result
	marks   []report.Fault
	started time.Time // when its clock started
	clients int       // how many clients it ran
	applied []string  // the server-side fault steps Options.ServerFault did
	tool    string    // an own server's tool
}

// newDesignRun is the shared state of design d's run against endpoint,
// over transport tr.
func newDesignRun(sc *scenario.Scenario, d *scenario.Design, endpoint string, tr http.RoundTripper, opts *Options) (*designRun, error) {
	target, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("live: design %s: endpoint %q: %w", d.Name, endpoint, err)
	}
	return &designRun{
		// The native clients and the probes follow no redirect by
		// themselves: guard.follow decides.
		sc: sc, d: d, endpoint: endpoint, target: target, guard: &guard{lim: sc.Limits},
		http:       &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		intervalMS: max(int(1000/sc.Workload.EventRate+0.5), 1), noResume: protocol.CapsOf(d.Era, d.Sessions, d.Events).NoResume, own: d.Own, host: opts.host,
	}, nil
}

// runDesign brings up the design's topology, storms it, tears it down and
// judges the history.
func runDesign(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, opts *Options) (designOut, error) {
	logDir, err := tmpdir.Make("stormsim-live-") // removed below; a SIGKILLed run's, by the next run
	if err != nil {
		return designOut{}, err
	}
	defer os.RemoveAll(logDir)
	own := d.Own
	var t *topo.Topology // nil for a server at a URL
	endpoint := ""
	switch {
	case own != nil && own.URL != "":
		endpoint = own.URL
	case own == nil && opts.Endpoint != "":
		endpoint = opts.Endpoint // a stormsim up's
	default:
		t, err = topo.Start(ctx, sc, d, &topo.Options{Bin: opts.Bin, File: opts.File, LogDir: logDir, Set: opts.Set, RedisAddr: opts.RedisAddr, Counts: true})
		if err != nil {
			return designOut{}, fmt.Errorf("live: design %s: %w", d.Name, err)
		}
		endpoint = t.Endpoint()
	}
	closed := false
	defer func() {
		if !closed && t != nil {
			t.Close()
		}
	}()

	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
	dr, err := newDesignRun(sc, d, endpoint, tr, opts)
	if err != nil {
		return designOut{}, err
	}
	if d.Server == topology.ServerTSSDK {
		dr.opaqueIDs, dr.resultOnly = true, 1
	}
	if own != nil {
		dr.tool = own.Tool.Name
		if dr.tool == "" {
			if dr.tool, err = discoverTool(ctx, dr.http, endpoint, d.Era); err != nil {
				return designOut{}, fmt.Errorf("live: design %s: %w", d.Name, err)
			}
		}
	}
	if n := d.Client.MaxConcurrentReconnects; n > 0 {
		dr.reconnSem = make(chan struct{}, n)
	}
	if sc.ProbesFor(d) && !opts.sharded() {
		dr.iso = newIsolation(dr)
	}
	arrivals := workload.Arrivals(sc)
	cl := make([]liveClient, 0, len(arrivals))
	share := d.Client.ImplShare
	if share == 0 {
		share = 1
	}
	var tsp *tsProc
	if d.Client.Impl == clients.ImplTSSDK {
		if tsp, err = startTSProc(dr); err != nil {
			return designOut{}, fmt.Errorf("live: design %s: %w", d.Name, err)
		}
		defer tsp.close()
	}
	for i := range arrivals {
		if !opts.inShard(i) {
			continue // another shard's client
		}
		if d.Client.Impl == clients.ImplGoSDK && workload.Pick(sc.Seed, implPick, uint64(i)) < share {
			cl = append(cl, newSDKClient(dr, int32(i), tr))
		} else if tsp != nil && workload.Pick(sc.Seed, implPick, uint64(i)) < share {
			cl = append(cl, newTSClient(dr, int32(i), tr, tsp))
		} else {
			cl = append(cl, newClient(dr, int32(i)))
		}
	}
	horizon := sc.Duration + sc.Drain
	dr.t0 = time.Now()
	started := dr.t0
	if startAt := startOf(opts.StartAt, dr.t0, &d.Replica); !startAt.IsZero() {
		// The barrier: every shard's clock starts at startAt, and a
		// run with admission windows on a window boundary.
		tm := time.NewTimer(time.Until(startAt))
		select {
		case <-ctx.Done():
			tm.Stop()
			return designOut{}, fmt.Errorf("live: design %s: waiting for the start at %s: %w", d.Name, startAt.Format(time.RFC3339Nano), ctx.Err())
		case <-tm.C:
		}
		started = time.Now()
		dr.t0 = startAt
	}
	runCtx, cancel := context.WithDeadline(ctx, dr.t0.Add(horizon))
	defer cancel()

	var wg sync.WaitGroup
	for _, c := range cl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(runCtx, arrivals[c.ident()])
		}()
	}
	if dr.iso != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dr.iso.run(runCtx)
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	var sampler *storeSampler
	var watch *storeWatch
	if t != nil {
		sampler = sampleStore(runCtx, t, dr.t0, sc.Step, horizon)
		if t.RedisAddr() != "" {
			if watch, err = watchStore(runCtx, t, dr.t0); err != nil {
				cancel()
				<-allDone
				<-sampler.done
				return designOut{}, fmt.Errorf("live: design %s: %w", d.Name, err)
			}
		}
	}

	// The fault schedule, carried out at its times; client drops by the
	// clients themselves, on the clients the simulator picks.
	faultErr := make(chan error, 1)
	var applied []history.Applied // written by the fault goroutine, read after faultErr
	var hooks sync.WaitGroup      // fault hooks still running
	var hookMu sync.Mutex
	var hookNotes []string // guarded by hookMu
	hooked := map[int]bool{}
	var neverReady []neverReadySlot // written by the fault goroutine, read after faultErr
	var serverApplied []string      // Options.ServerFault's steps: written by the fault goroutine, read after faultErr
	sent := map[int]bool{}          // the faults sent to ServerFault
	go func() {
		timeline := faults.Timeline(sc.Faults, sc.FaultContext())
		faultAt := map[int]time.Duration{} // each fault's first step
		for _, s := range timeline {
			if at, ok := faultAt[s.Fault]; !ok || s.At < at {
				faultAt[s.Fault] = s.At
			}
		}
		for si, s := range timeline {
			tm := time.NewTimer(time.Until(dr.t0.Add(s.At)))
			select {
			case <-runCtx.Done():
				tm.Stop()
				faultErr <- nil
				return
			case <-allDone:
				tm.Stop()
				faultErr <- nil
				return
			case <-tm.C:
			}
			dr.host.timer(dr.now() - int64(s.At))
			if s.Kind == faults.StepClientDrop {
				n := 0
				for _, c := range cl {
					if workload.Pick(sc.Seed, uint64(s.Fault), uint64(c.ident())) < s.Fraction && c.cut(cutFault, s.Away, 0) {
						n++
					}
				}
				applied = append(applied, history.Applied{At: dr.now(), Kind: "client-drop", Step: si})
				if opts.Log != nil {
					fmt.Fprintf(opts.Log, "live %s: %v: client-drop: %d streams dropped\n", d.Name, s.At, n)
				}
				continue
			}
			if own != nil {
				kind := sc.Faults[s.Fault].Kind()
				if cmd := own.FaultHook[kind]; cmd != "" {
					// The hook replaces stormsim's own action: it runs once,
					// at the fault's first step; in a sharded run, by shard
					// 0 alone.
					if opts.sharded() && opts.ShardIndex != 0 {
						if !hooked[s.Fault] {
							hooked[s.Fault] = true
							applied = append(applied, history.Applied{At: int64(s.At), Kind: kind + " (fault_hook; run by shard 0)", Step: si, Replica: s.Replica})
						}
						continue
					}
					if !hooked[s.Fault] {
						hooked[s.Fault] = true
						applied = append(applied, history.Applied{At: dr.now(), Kind: kind + " (fault_hook)", Step: si, Replica: s.Replica})
						serverApplied = append(serverApplied, fmt.Sprintf("%s: fault_hook %q", kind, cmd))
						if opts.Log != nil {
							fmt.Fprintf(opts.Log, "live %s: %v: %s: running fault_hook %q\n", d.Name, s.At, kind, cmd)
						}
						hooks.Add(1)
						go func() {
							defer hooks.Done()
							at := dr.now()
							out, err := topo.RunHook(runCtx, filepath.Dir(opts.fileOr()), cmd, hookEnv(kind, s.Fault, s.Replica, s.At))
							res := "exit status 0"
							if err != nil {
								res = err.Error()
							}
							note := fmt.Sprintf("fault_hook for %s (faults[%d]) ran at %.1f s for %.1f s: %s", kind, s.Fault, float64(at)/1e9, float64(dr.now()-at)/1e9, res)
							if out != "" {
								note += "; its last output: " + out
							}
							hookMu.Lock()
							hookNotes = append(hookNotes, note)
							hookMu.Unlock()
							if opts.Log != nil {
								fmt.Fprintf(opts.Log, "live %s: %s\n", d.Name, note)
							}
						}()
					}
					continue
				}
			}
			if t == nil && own == nil && opts.Endpoint != "" {
				// A stormsim up's topology: shard 0 has up apply the
				// whole fault at its first step (the later steps at
				// their own times, by up); the other shards record it.
				switch {
				case opts.ServerFault == nil:
					applied = append(applied, history.Applied{At: int64(s.At), Kind: s.Describe() + " (scheduled; applied by shard 0)", Step: si, Replica: s.Replica})
				case !sent[s.Fault]:
					sent[s.Fault] = true
					f, err := atZero(sc.Faults[s.Fault])
					var done []string
					if err == nil {
						done, err = opts.ServerFault(runCtx, f)
					}
					if err != nil {
						if runCtx.Err() != nil {
							faultErr <- nil
							return
						}
						faultErr <- fmt.Errorf("live: design %s: fault %s at %v through stormsim up: %w", d.Name, sc.Faults[s.Fault].Kind(), s.At, err)
						cancel()
						return
					}
					serverApplied = append(serverApplied, done...)
					applied = append(applied, history.Applied{At: dr.now(), Kind: s.Describe() + " (stormsim up)", Step: si, Replica: s.Replica})
					if opts.Log != nil {
						fmt.Fprintf(opts.Log, "live %s: %v: %s: sent to stormsim up: %s\n", d.Name, s.At, s.Describe(), strings.Join(done, "; "))
					}
				default:
					applied = append(applied, history.Applied{At: int64(s.At), Kind: s.Describe() + " (by stormsim up, at its time)", Step: si, Replica: s.Replica})
				}
				continue
			}
			if t == nil {
				continue // refused when the scenario was loaded; nothing to act on
			}
			if err := t.Apply(runCtx, s); err != nil {
				var nr *topo.NotReadyError
				if errors.As(err, &nr) && (s.Kind == faults.StepStart || s.Kind == faults.StepScale) {
					// A replica a fault started that never became ready:
					// reported, and the run goes on without it.
					from := faultAt[s.Fault]
					if s.Kind == faults.StepScale {
						from = s.At
					}
					neverReady = append(neverReady, neverReadySlot{from: from, err: nr})
					applied = append(applied, history.Applied{At: dr.now(), Kind: fmt.Sprintf("never ready: replica %d", nr.Slot), Step: si, Replica: nr.Slot})
					if opts.Log != nil {
						fmt.Fprintf(opts.Log, "live %s: %v: %v\n", d.Name, s.At, nr)
					}
					if runCtx.Err() != nil {
						faultErr <- nil
						return
					}
					continue
				}
				if runCtx.Err() != nil {
					faultErr <- nil
					return
				}
				faultErr <- fmt.Errorf("live: design %s: fault step at %v: %w", d.Name, s.At, err)
				cancel()
				return
			}
			applied = append(applied, history.Applied{At: dr.now(), Kind: s.Describe(), Step: si, Replica: s.Replica})
			if opts.Log != nil {
				fmt.Fprintf(opts.Log, "live %s: %v: %s\n", d.Name, s.At, s.Describe())
			}
		}
		faultErr <- nil
	}()

	// Progress: wall time, reported once a second.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	reported := time.Duration(0)
	report1 := func() {
		if opts.Progress == nil {
			return
		}
		el := min(time.Since(dr.t0), horizon)
		opts.Progress(el - reported)
		reported = el
	}
loop:
	for {
		select {
		case <-allDone:
			break loop
		case <-runCtx.Done():
			<-allDone
			break loop
		case <-tick.C:
			report1()
		}
	}
	cancel()
	hooks.Wait() // every hook is killed when runCtx ends
	if sampler != nil {
		<-sampler.done
	}
	if watch != nil {
		<-watch.done
	}
	if err := <-faultErr; err != nil {
		return designOut{}, err
	}
	if opts.Progress != nil {
		opts.Progress(horizon - reported)
	}
	if err := ctx.Err(); err != nil {
		return designOut{}, err
	}
	var exits []topo.Exit
	// The server side's own counts, read before the replicas go.
	counts, noCounts := serverCounts(ctx, t, sc, d, dr.t0)
	if noCounts == "no topology" && own == nil {
		noCounts = "the replicas are a stormsim up's: stormsim merge --up-logs reconciles a run with up's counters once up has stopped"
	}
	if t != nil {
		t.Close() // every replica is gone: the production logs are complete
		exits = t.Exits()
	}
	closed = true

	h := &history.History{
		Horizon: int64(horizon), Step: int64(sc.Step), Interval: int64(time.Duration(dr.intervalMS) * time.Millisecond),
		Stored:         own == nil && caps.HasStore(),
		NoStore:        own == nil && !caps.HasStore(),
		HaveProduction: own == nil && t != nil,
		ByEventID:      own != nil,
	}
	for _, c := range cl {
		h.Join(c.history())
	}
	prod, redisLines, err := readLogs(logDir, dr.t0)
	if err != nil {
		return designOut{}, fmt.Errorf("live: design %s: %w", d.Name, err)
	}
	h.Produced = prod
	if own == nil {
		opts.host.addProduced(h, storeFaultAt(sc))
	}
	if opts.Log != nil {
		for _, l := range redisLines {
			fmt.Fprintf(opts.Log, "live %s: %.1fs: replica %d: go-redis: %s\n", d.Name, l.at.Seconds(), l.slot, l.msg)
		}
	}
	var marks []report.Fault
	for _, x := range exits {
		at := x.At.Sub(dr.t0)
		applied = append(applied, history.Applied{At: int64(at), Kind: "exit: " + x.String(), Step: -1, Replica: x.Slot})
		marks = append(marks, report.Fault{Kind: report.KindExit, Label: fmt.Sprintf("%s: replica %d exited", d.Name, x.Slot), AtS: at.Seconds(), UntilS: at.Seconds(), Unscheduled: true})
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "live %s: %.1fs: %s\n", d.Name, at.Seconds(), x)
		}
	}
	for _, nr := range neverReady {
		marks = append(marks, report.Fault{Kind: report.KindNeverReady, Label: fmt.Sprintf("%s: replica %d never ready again", d.Name, nr.err.Slot),
			AtS: nr.from.Seconds(), UntilS: horizon.Seconds(), Unscheduled: true})
	}
	var storeNotes []string
	if watch != nil {
		end := min(time.Since(dr.t0), horizon)
		storeNotes = watch.notes(end)
		for i, o := range watch.outages {
			until := o.until
			if until == 0 {
				until = end
			}
			applied = append(applied, history.Applied{At: int64(o.from), Kind: "store unreachable: " + o.why, Step: -1, Replica: -1})
			marks = append(marks, report.Fault{Kind: report.KindStoreUnreachable, Label: fmt.Sprintf("%s: redis unreachable", d.Name),
				AtS: ms(o.from), UntilS: ms(until), Unscheduled: true})
			if opts.Log != nil && i < len(storeNotes) {
				fmt.Fprintf(opts.Log, "live %s: %.1fs: %s\n", d.Name, o.from.Seconds(), storeNotes[i])
			}
		}
	}
	h.Faults = applied

	in := &judgeIn{
		counts: counts, noCounts: noCounts, exits: exits, neverReady: neverReady, storeNotes: storeNotes, hookNotes: hookNotes, sampler: sampler,
		sharedRedis: opts.RedisAddr != "" && t != nil && t.RedisAddr() != "" && d.Events == topology.EventsRedis,
	}
	if own == nil && t == nil {
		in.up = upNote(endpoint, false)
	}
	row, res := judgeDesign(sc, d, dr, h, in)
	return designOut{row: row, h: h, res: res, marks: marks, started: started, clients: len(cl), applied: serverApplied, tool: dr.tool}, nil
}

// judgeIn is what a design's run leaves, besides its history, for judging.
type judgeIn struct {
	counts      *check.ServerCounts // nil: not reconcilable, for noCounts
	noCounts    string
	exits       []topo.Exit
	neverReady  []neverReadySlot
	storeNotes  []string
	hookNotes   []string
	sampler     *storeSampler // nil when the store was not sampled
	sharedRedis bool          // store_bytes counts a Redis others share (--redis-url)
	// up, when the clients aimed at a stormsim up's topology, is the note
	// that says so and how the run was judged.
	up string
}

// judgeDesign judges a design's history into its report row and its HTTP
// exchanges as vegeta Results: a run's, or the union of a sharded run's.
func judgeDesign(sc *scenario.Scenario, d *scenario.Design, dr *designRun, h *history.History, in *judgeIn) (report.Design, []vegeta.Result) {
	j := history.Judge(h)
	res := vegetaResults(d.Name, dr, h)
	var m vegeta.Metrics
	for i := range res {
		m.Add(&res[i])
	}
	m.Close()
	row := report.Design{
		Name: d.Name, Mode: d.Mode, Sessions: d.Sessions, Events: d.Events, LB: d.LB,
		Profile: d.Client.Profile, Era: d.Era, Totals: j.Totals, Series: j.Series,
		ReplayLatencyMS:   report.Summarise(j.Replay),
		RecoveryLatencyMS: report.Summarise(j.Recovery),
		HTTP:              &m,
	}
	row.Server, row.Notes = report.ServerNotes(d.Server, "live")
	row.EventsProduced, row.Reconciliation = reconcile(h, j, in.counts, in.noCounts)
	if r := row.Reconciliation; r.NotReconcilable == "" && !r.OK {
		row.Notes = append(row.Notes, fmt.Sprintf("reconciliation: %d mismatches between the histories and the replicas' own counts (report.json, \"reconciliation\")", r.MismatchCount))
	}
	if own := d.Own; own != nil && own.URL != "" {
		// The clients talked to the URL: no design of stormsim's, no LB.
		row.Target, row.LB = own.URL, "none"
		row.Mode, row.Sessions, row.Events = "own server", "own server", "own server"
	}
	row.Notes = append(row.Notes, in.storeNotes...)
	if in.sharedRedis {
		row.Notes = append(row.Notes, "store_bytes counts every stormsim event stream in the Redis given by --redis-url, other designs' and earlier runs' included")
	}
	switch {
	case in.sampler != nil && in.sampler.measured:
		in.sampler.fill(row.Series.StoreBytes)
		row.Totals.StorePeakBytes = slices.Max(append(row.Series.StoreBytes, 0))
	case in.sampler != nil && d.Own == nil: // an own server's store is in ClientSideUnknown
		row.Unknown = append(row.Unknown, "store_peak_bytes")
		row.Notes = append(row.Notes, "store_bytes and store_peak_bytes are unknown: the go-sdk replica's in-memory event store does not report its size")
	case in.up != "" && h.HaveProduction:
		row.Unknown = append(row.Unknown, "store_peak_bytes", "store_peak_ops_per_s")
	case in.up != "":
		row.Judged, row.Unknown = report.JudgedClientSide, slices.Clone(report.ClientSideUnknown)
	}
	if in.up != "" {
		row.Notes = append(row.Notes, in.up)
	}
	if own := d.Own; own != nil {
		row.Judged, row.Unknown = report.JudgedClientSide, report.ClientSideUnknown
		notes, noProgress := ownNotes(own, dr.tool, h)
		if noProgress {
			row.Unknown = append(slices.Clone(report.ClientSideUnknown), report.NoProgressUnknown...)
		}
		if !own.HonoursEvents() {
			for _, k := range report.LengthUnknown {
				if !slices.Contains(row.Unknown, k) {
					row.Unknown = append(slices.Clone(row.Unknown), k)
				}
			}
		}
		row.Notes = append(row.Notes, notes...)
		for _, x := range in.exits {
			row.Notes = append(row.Notes, fmt.Sprintf("at %.1f s %s", x.At.Sub(dr.t0).Seconds(), x))
		}
		row.Notes = append(row.Notes, in.hookNotes...)
	}
	row.Notes = append(row.Notes, dr.guard.notes()...)
	if n := failedCauses(h); n != "" {
		row.Notes = append(row.Notes, n)
	}
	dr.iso.fill(&row)
	if len(in.neverReady) > 0 {
		row.ReplicasNeverReady = len(in.neverReady)
		row.Series.ReplicasDown = make([]int64, len(row.Series.ActiveStreams))
		for _, nr := range in.neverReady {
			for i := range row.Series.ReplicasDown {
				// Down at the end of step i from the fault on.
				if float64(i+1)*row.Series.StepS > nr.from.Seconds() {
					row.Series.ReplicasDown[i]++
				}
			}
			row.Notes = append(row.Notes, nr.note())
		}
	}
	if n := row.UnknownNote(); n != "" {
		row.Notes = append(row.Notes, n)
	}
	return row, res
}

// neverReadySlot is a replica a fault started that never became ready: down
// from the fault (from, since t0) to the end of the run.
type neverReadySlot struct {
	from time.Duration
	err  *topo.NotReadyError
}

func (n neverReadySlot) note() string {
	out := n.err.Output
	if len(out) > 300 {
		out = "…" + strings.ToValidUTF8(out[len(out)-300:], "")
	}
	if out == "" {
		out = "none"
	}
	return fmt.Sprintf("replica %d never became ready again (last output: %s): restarted by the fault at %.1f s, its server command %s; "+
		"the slot counts as down from the fault to the end of the run", n.err.Slot, out, n.from.Seconds(), n.err.Why)
}

// replicaLogLine is one of go-redis's own log lines that a replica wrote
// to its production log.
type replicaLogLine struct {
	slot int
	at   time.Duration // from t0
	msg  string
}

// readLogs reads every replica's production log in dir: the events
// produced, and go-redis's log lines.
func readLogs(dir string, t0 time.Time) ([]history.Produced, []replicaLogLine, error) {
	files, err := filepath.Glob(filepath.Join(dir, "replica-*.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	var lines []replicaLogLine
	sort.Strings(files)
	var out []history.Produced
	base := t0.UnixNano()
	for _, f := range files {
		var slot int
		fmt.Sscanf(filepath.Base(f), "replica-%d.jsonl", &slot)
		fh, err := os.Open(f)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec struct {
				Session string `json:"session"`
				Token   string `json:"token"`
				Index   int32  `json:"index"`
				TNS     int64  `json:"t_ns"`
				Start   bool   `json:"start"`
				GoRedis string `json:"go_redis"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue // a line cut short by SIGKILL
			}
			if rec.GoRedis != "" {
				lines = append(lines, replicaLogLine{slot: slot, at: time.Duration(rec.TNS - base), msg: rec.GoRedis})
				continue
			}
			c, k, a, ok := history.ParseToken(rec.Token)
			if !ok {
				continue
			}
			out = append(out, history.Produced{Client: c, Seq: k, Attempt: a, Index: rec.Index, T: rec.TNS - base, Start: rec.Start,
				Replica: slot, Session: rec.Session})
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", f, err)
		}
	}
	return out, lines, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// storeFaultsRefused refuses a scenario that would stop or restart a Redis
// stormsim did not start (--redis-url), before anything runs.
func storeFaultsRefused(sc *scenario.Scenario, designs []*scenario.Design) error {
	uses := false
	for _, d := range designs {
		if d.Own == nil && (d.Events == topology.EventsRedis || d.Sessions == topology.SessionsShared) {
			uses = true
		}
	}
	if !uses {
		return nil
	}
	for i, f := range sc.Faults {
		if k := f.Kind(); k == "store-outage" || k == "store-restart" {
			return &RefusedError{fmt.Errorf("live: faults[%d] (kind %q) would stop or restart the Redis given by --redis-url: %w; run without --redis-url to fault a private redis-server", i, k, topo.ErrNotOurs)}
		}
	}
	return nil
}

// vegetaResults turns every recorded request into a vegeta Result.
func vegetaResults(design string, dr *designRun, h *history.History) []vegeta.Result {
	out := make([]vegeta.Result, len(h.Requests))
	for i := range h.Requests {
		r := &h.Requests[i]
		out[i] = vegeta.Result{
			Attack: design, Seq: uint64(i), Code: uint16(r.Status),
			Timestamp: dr.t0.Add(time.Duration(r.Sent)), Latency: time.Duration(r.Answered - r.Sent),
			BytesOut: uint64(r.BytesOut), BytesIn: uint64(r.BytesIn), Error: r.Err,
			Method: methods[r.Kind], URL: dr.endpoint,
		}
		if r.Status == 0 && r.Err == "" {
			out[i].Error = "no response"
		}
	}
	return out
}

// fileOr is the scenarios file, scenarios.toml by default: own-server
// commands and fault hooks run in its folder.
func (o *Options) fileOr() string {
	if o.File == "" {
		return "scenarios.toml"
	}
	return o.File
}

// storeSampler measures the design's event store while the run goes on: the
// live counterpart of the simulator's store_bytes series.
type storeSampler struct {
	step     time.Duration
	at       []time.Duration // when each sample was taken, from t0
	bytes    []int64
	measured bool          // false when the store cannot be measured
	done     chan struct{} // closed when sampling has stopped
}

// storeSampleEvery is the shortest time between two samples: MEMORY USAGE
// over every stream is not free, and the samples share the machine with
// the run they measure.
const storeSampleEvery = 500 * time.Millisecond

// sampleStore samples t's store at the end of every step (every
// storeSampleEvery at most) until ctx ends or the horizon passes. A sample
// that fails (a stopped Redis, a replica too busy to answer) or that the
// end of ctx interrupts is skipped; the series holds the last one.
func sampleStore(ctx context.Context, t *topo.Topology, t0 time.Time, step, horizon time.Duration) *storeSampler {
	s := &storeSampler{step: step, measured: true, done: make(chan struct{})}
	stride := step * max((storeSampleEvery+step-1)/step, 1)
	go func() {
		defer close(s.done)
		for k := time.Duration(1); k*stride <= horizon; k++ {
			// The sample closes the step that ends at k·stride, however
			// late the timer fires.
			at := k*stride - time.Millisecond
			tm := time.NewTimer(time.Until(t0.Add(at)))
			select {
			case <-ctx.Done():
				tm.Stop()
				return
			case <-tm.C:
			}
			if now := time.Since(t0); now-at >= stride {
				// The previous sample overran: this one closes the step it
				// is in, and the steps in between hold the one before.
				k = now/stride + 1
				at = k*stride - time.Millisecond
			}
			n, err := t.StoreBytes(ctx)
			if errors.Is(err, topo.ErrStoreUnmeasured) {
				s.measured = false
				return
			}
			if err == nil && ctx.Err() == nil { // a sample the end of the run cut short is no sample
				s.at, s.bytes = append(s.at, at), append(s.bytes, n)
			}
		}
	}()
	return s
}

// fill writes the samples into series, one bucket of step each: a bucket
// holds the last sample taken in it or, when none was, the one before it
// (0 before the first).
func (s *storeSampler) fill(series []int64) {
	j := 0
	var last int64
	for i := range series {
		end := time.Duration(i+1) * s.step
		for j < len(s.at) && s.at[j] < end {
			last = s.bytes[j]
			j++
		}
		series[i] = last
	}
}

// startOf is when a run that is ready at ready starts: at the shards'
// common start when there is one; else, when the replicas count admission
// windows, at the next window boundary (protocol.AlignStart), as the
// simulator's windows start at its time 0; zero to start at once.
func startOf(shared, ready time.Time, rc *topology.ReplicaConfig) time.Time {
	if !shared.IsZero() {
		return shared
	}
	if at := protocol.AlignStart(ready, rc); !at.Equal(ready) {
		return at
	}
	return time.Time{}
}
