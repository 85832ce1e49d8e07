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
	"github.com/stormsim/stormsim/live/redislog"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
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
	// Judging, if set, is told when a design's run is over and its history
	// of receipts events is being judged: the part of a large run after
	// its clock, which a signal also stops.
	Judging func(design string, receipts int)
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

	// Salvage, if set, keeps a run a signal interrupts: when ctx ends
	// while the clients run, the load stops, and the histories recorded
	// until then are collected and judged under Salvage (which ends at
	// the deadline for keeping them) into a report marked Interrupted,
	// without the designs that had not started. Nil: an interrupted run
	// returns ctx's error. A signal while a history is judged stops the
	// judging either way.
	Salvage context.Context

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
	// client is the design's client profile as the brains follow it, the
	// era's lifecycle set (Discover): the revision's clients open with
	// server/discover and send its headers and _meta on every request.
	client    clients.Config
	reconnSem chan struct{}       // client.max_concurrent_reconnects, shared by the design's clients; nil for none
	own       *scenario.OwnServer // a server the user brings; nil for stormsim's replicas
	tool      string              // the own server's tool
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
	designs, err := sc.Select(opts.Designs)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if len(designs) == 0 {
		return nil, scenario.ErrNoDesigns
	}
	if sc.Requests() {
		return runRequests(ctx, sc, designs, opts) // requests.go
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
	designs, outs, in, err := settle(ctx, opts, designs, outs, errs)
	if err != nil {
		return nil, err
	}
	r := scenario.Header(sc, "live")
	r.Interrupted = in
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

// settle is the designs of the run that count, their outputs, and, when a
// signal interrupted the run and Salvage kept it, how far it got; or the
// run's error. With Salvage, the designs that never started are left out
// (Interruption.NotRun); a design that started but whose histories could
// not be kept fails the run, with ctx's error.
func settle(ctx context.Context, opts *Options, designs []*scenario.Design, outs []designOut, errs []error) ([]*scenario.Design, []designOut, *report.Interruption, error) {
	err := ctx.Err()
	if err == nil {
		return designs, outs, nil, errors.Join(errs...)
	}
	derr := errors.Join(errs...)
	if opts.Salvage == nil {
		if errors.Is(derr, err) {
			return nil, nil, nil, derr // it says where the run stopped: judging, say
		}
		return nil, nil, nil, fmt.Errorf("live: %w", err)
	}
	in := &report.Interruption{}
	var keptD []*scenario.Design
	var keptO []designOut
	for i, d := range designs {
		var nk *notKeptError
		switch {
		case errors.As(errs[i], &nk):
			return nil, nil, nil, fmt.Errorf("live: %w; the histories recorded until then were not kept: %w", err, nk)
		case errs[i] == nil:
			keptD, keptO = append(keptD, d), append(keptO, outs[i])
			if at := outs[i].h.Interrupted; at > 0 {
				in.Design, in.AtS = d.Name, time.Duration(at).Seconds()
			}
		case errors.Is(errs[i], err):
			in.NotRun = append(in.NotRun, d.Name) // stopped before its clients ran, or while judged
		default:
			return nil, nil, nil, fmt.Errorf("live: %w: %w", err, errs[i])
		}
	}
	if in.Design == "" {
		if errors.Is(derr, err) {
			return nil, nil, nil, derr
		}
		return nil, nil, nil, fmt.Errorf("live: %w", err)
	}
	return keptD, keptO, in, nil
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
	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
	client := d.Client
	client.Discover = caps.Discover
	return &designRun{
		// The native clients and the probes follow no redirect by
		// themselves: guard.follow decides.
		sc: sc, d: d, endpoint: endpoint, target: target, guard: &guard{lim: sc.Limits},
		http:       &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		intervalMS: max(int(1000/sc.Workload.EventRate+0.5), 1), noResume: caps.NoResume, client: client, own: d.Own, host: opts.host,
	}, nil
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

// logLine is one line of a replica's production log.
type logLine struct {
	Session   string `json:"session"`
	Token     string `json:"token"`
	Index     int32  `json:"index"`
	TNS       int64  `json:"t_ns"`
	Start     bool   `json:"start"`
	Cancelled bool   `json:"cancelled"`
	GoRedis   string `json:"go_redis"`
}

// readLogLine reads one line of a production log: an event's line by the
// replica's own reader, any other with encoding/json. ok is false for a
// line that is no JSON (cut short by SIGKILL).
func readLogLine(b []byte) (rec logLine, ok bool) {
	if e, ok := replica.ParseEventLine(b); ok && e.Index == int64(int32(e.Index)) {
		return logLine{Session: e.Session, Token: e.Token, Index: int32(e.Index), TNS: e.TNS}, true
	}
	return rec, json.Unmarshal(b, &rec) == nil
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
	type token struct {
		c, k, a int32
		ok      bool
	}
	toks := map[string]token{}
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
			rec, ok := readLogLine(sc.Bytes())
			if !ok {
				continue // a line cut short by SIGKILL
			}
			if rec.GoRedis != "" {
				lines = append(lines, replicaLogLine{slot: slot, at: time.Duration(rec.TNS - base), msg: rec.GoRedis})
				continue
			}
			t, seen := toks[rec.Token] // a call's every line names its token
			if !seen {
				t.c, t.k, t.a, t.ok = history.ParseToken(rec.Token)
				toks[rec.Token] = t
			}
			c, k, a := t.c, t.k, t.a
			if !t.ok {
				continue
			}
			out = append(out, history.Produced{Client: c, Seq: k, Attempt: a, Index: rec.Index, T: rec.TNS - base, Start: rec.Start,
				Cancelled: rec.Cancelled, Replica: slot, Session: rec.Session})
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
		if faults.TouchesStore(f, sc.FaultContext()) {
			return &RefusedError{fmt.Errorf("live: faults[%d] (kind %q) would stop or restart the Redis given by --redis-url: %w; run without --redis-url to fault a private redis-server", i, f.Kind(), topo.ErrNotOurs)}
		}
	}
	return nil
}

// vegetaResults turns every recorded request into a vegeta Result.
func vegetaResults(design string, t0 time.Time, endpoint string, h *history.History) []vegeta.Result {
	out := make([]vegeta.Result, len(h.Requests))
	for i := range h.Requests {
		r := &h.Requests[i]
		out[i] = vegeta.Result{
			Attack: design, Seq: uint64(i), Code: uint16(r.Status),
			Timestamp: t0.Add(time.Duration(r.Sent)), Latency: time.Duration(r.Answered - r.Sent),
			BytesOut: uint64(r.BytesOut), BytesIn: uint64(r.BytesIn), Error: r.Err,
			Method: methods[r.Kind], URL: endpoint,
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
