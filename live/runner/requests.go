package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/workload"
)

// The open-loop request workload live (workload.kind = "requests"). Each
// design's server is a replica.RequestServer behind a real HTTP server on
// loopback, in this process, which the clients reach directly: the
// workload has one server (replicas = 1) and no session, so there is no
// load balancer to cross. Arrivals come on the simulator's schedule
// (workload.RequestArrivals, RequestGap), each a goroutine that sends
// single POSTs with its attempt's number, abandons one at the profile's
// request_timeout by cancelling it (its connection closes; the server
// sees its client leave) and retries under clients.Config.Retry. The
// triggers play on the live player (topo.Play): the server's on the
// server, a load spike on the arrivals. The clients count what they sent
// and got, the server what its workers did; both go into the one report
// row the simulator writes (scenario.RequestRow).

// requestRefused is a live request run that cannot be.
func requestRefused(sc *scenario.Scenario, opts *Options) error {
	switch {
	case sc.Closed():
		return &RefusedError{fmt.Errorf("live: scenario %s: workload.arrivals = %q (closed-loop clients, handshakes, the reconnect trigger) runs in the simulator only (--engine sim); the live engine runs the open-loop arrivals, even or poisson", sc.Name, scenario.ArrivalsClosed)}
	case opts.Endpoint != "":
		return &RefusedError{fmt.Errorf("live: scenario %s: workload.kind = %q runs on stormsim's own request server, not against a stormsim up or an endpoint", sc.Name, scenario.KindRequests)}
	case opts.sharded():
		return &RefusedError{fmt.Errorf("live: scenario %s: workload.kind = %q does not run in shards", sc.Name, scenario.KindRequests)}
	}
	return nil
}

// runRequests runs every design of designs of the request workload sc live.
func runRequests(ctx context.Context, sc *scenario.Scenario, designs []*scenario.Design, opts *Options) (*Output, error) {
	if err := requestRefused(sc, opts); err != nil {
		return nil, err
	}
	host := newHostWatch(opts.InjectLateness)
	rows := make([]report.Design, len(designs))
	attempts := make([]int64, len(designs))
	errs := make([]error, len(designs))
	sem := make(chan struct{}, max(opts.Parallel, 1))
	r := scenario.Header(sc, "live")
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
			rr := &requestRun{sc: sc, d: d, opts: opts, host: host}
			rows[i], errs[i] = rr.run(ctx, r.Faults)
			attempts[i] = rows[i].Requests.Attempts
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var sent int64
	for _, n := range attempts {
		sent += n
	}
	r.Host = host.verdict(int(sent))
	r.Designs = rows
	out := &Output{Report: r, Histories: map[string]*history.History{}, Results: map[string]int{}}
	for _, d := range designs {
		out.Histories[d.Name] = &history.History{}
	}
	return out, nil
}

// requestRun is one design's live run of the request workload. The fields
// above the line are fixed once run has started the server and the clock.
type requestRun struct {
	sc   *scenario.Scenario
	d    *scenario.Design
	opts *Options
	host *hostWatch

	srv     *replica.RequestServer
	hs      *http.Server
	url     string
	hc      *http.Client
	tr      *http.Transport
	t0      time.Time
	horizon int64
	step    int64

	load     atomic.Uint64 // the load spike's factor in force, as float64 bits
	clientWG sync.WaitGroup
	goodput  []atomic.Int64
	sent     []atomic.Int64 // attempts sent
	resent   []atomic.Int64 // retries sent
	n        struct {
		requests, attempts, retries, completed, failed, timeouts, netErrs atomic.Int64
	}
}

// run serves design d's request workload until the horizon and returns
// its report row, whose recovery is judged after each of fs.
func (rr *requestRun) run(ctx context.Context, fs []report.Fault) (report.Design, error) {
	rr.start()
	if err := rr.listen(); err != nil {
		return report.Design{}, fmt.Errorf("live: design %s: %w", rr.d.Name, err)
	}
	defer rr.tr.CloseIdleConnections()
	defer rr.hs.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var play sync.WaitGroup
	play.Add(1)
	go func() {
		defer play.Done()
		topo.Play(cctx, nil, rr.t0, faults.Timeline(rr.sc.Faults, rr.sc.FaultContext()), rr.fault) //nolint:errcheck // fault never fails
	}()
	rr.arrive(cctx)
	// The clock runs to the horizon: the attempts in flight then end
	// unanswered, as the simulator stops its events there.
	tm := time.NewTimer(time.Until(rr.t0.Add(time.Duration(rr.horizon))))
	select {
	case <-tm.C:
	case <-ctx.Done():
		tm.Stop()
	}
	cancel()
	rr.clientWG.Wait()
	play.Wait()
	c := rr.srv.Close()
	if rr.opts.Progress != nil {
		rr.opts.Progress(time.Duration(rr.horizon))
	}
	if err := ctx.Err(); err != nil {
		return report.Design{}, err
	}
	return rr.row(c, fs), nil
}

// listen starts the design's server on loopback, and the clients'
// transport.
func (rr *requestRun) listen() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rr.srv = replica.NewRequestServer(&replica.RequestOptions{
		Replica: rr.d.Replica, RNG: workload.RequestDesign(rr.sc.Seed, rr.d.Name),
		Now:  func() int64 { return int64(time.Since(rr.t0)) },
		Late: rr.host.timer,
	})
	rr.hs = &http.Server{Handler: rr.srv, ReadHeaderTimeout: 10 * time.Second}
	go rr.hs.Serve(ln) //nolint:errcheck // ends with Close
	rr.url = "http://" + ln.Addr().String() + "/request"
	rr.tr = &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	rr.hc = &http.Client{Transport: rr.tr}
	return nil
}

// start sizes the series and starts the clock, before the server that
// reads it listens.
func (rr *requestRun) start() {
	series := scenario.RequestSeries(rr.sc)
	n := len(series.Goodput)
	rr.goodput, rr.sent, rr.resent = make([]atomic.Int64, n), make([]atomic.Int64, n), make([]atomic.Int64, n)
	rr.horizon, rr.step = int64(scenario.Horizon(rr.sc)), int64(rr.sc.Step)
	rr.load.Store(math.Float64bits(1))
	rr.t0 = time.Now()
}

// at is the series index of the time now (since t0); false at or after
// the horizon, where the run counts nothing more.
func (rr *requestRun) at() (int, bool) {
	now := int64(time.Since(rr.t0))
	if now >= rr.horizon {
		return 0, false
	}
	return min(int(now/rr.step), len(rr.goodput)-1), true
}

// fault carries out a trigger's step: the server's on the server, a load
// spike on the arrivals.
func (rr *requestRun) fault(_ int, s faults.Step) error {
	rr.host.timer(int64(time.Since(rr.t0)) - int64(s.At))
	if s.Kind == faults.StepLoadFactor {
		rr.load.Store(math.Float64bits(s.Fraction))
	} else {
		rr.srv.Apply(s)
	}
	if rr.opts.Log != nil {
		fmt.Fprintf(rr.opts.Log, "live %s: %v: %s\n", rr.d.Name, s.At, s.Describe())
	}
	return nil
}

// arrive starts the requests on the simulator's schedule until the
// scenario's duration, or its clients, are reached: open loop, so a
// request whose time has passed starts at once, late, and its lateness
// is the host's.
func (rr *requestRun) arrive(ctx context.Context) {
	w := &rr.sc.Workload
	arr := workload.RequestArrivals(rr.sc.Seed)
	tm := time.NewTimer(0)
	defer tm.Stop()
	var at int64
	for k := 0; k < w.Clients && at < int64(rr.sc.Duration); k++ {
		if wait := time.Until(rr.t0.Add(time.Duration(at))); wait > 0 {
			tm.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-tm.C:
			}
		}
		rr.host.timer(int64(time.Since(rr.t0)) - at)
		rr.clientWG.Add(1)
		go rr.request(ctx, k)
		at += workload.RequestGap(w, math.Float64frombits(rr.load.Load()), arr)
	}
}

// outcome is what one attempt got.
type outcome struct {
	ended    bool // the run ended while it was out
	status   int  // 0: no answer
	why      string
	hint     time.Duration
	timedOut bool
}

// requestStream keys the streams of a request's backoff jitter.
const requestStream = 0xa54ff53a5f1d36f1

// request lives one logical request: its attempts, until one is
// answered, the retries run out, the retry budget refuses one, or the run
// ends (pending).
func (rr *requestRun) request(ctx context.Context, id int) {
	defer rr.clientWG.Done()
	if _, ok := rr.at(); !ok {
		return
	}
	rr.n.requests.Add(1)
	cc := &rr.d.Client
	s1, s2 := scenario.DesignSeed(rr.sc.Seed, rr.d.Name)
	var rng *rand.Rand // drawn from under the profile's backoff alone
	var prev time.Duration
	for n := 0; ; n++ {
		o := rr.attempt(ctx, cc, n)
		switch {
		case o.ended:
			return
		case o.status == http.StatusOK:
			rr.n.completed.Add(1)
			return
		case o.why == protocol.WhyBudget:
			rr.n.failed.Add(1)
			return
		}
		if rng == nil {
			rng = rand.New(rand.NewPCG(s1^requestStream, s2^uint64(id)))
		}
		wait, ok := cc.Retry(n, o.hint, prev, rng)
		if !ok {
			rr.n.failed.Add(1)
			return
		}
		prev = wait
		if wait > 0 && !sleepCtx(ctx, wait) {
			return
		}
	}
}

// attempt sends attempt n and waits for its answer, at most the
// profile's request timeout: then it abandons it, and the connection
// closes.
func (rr *requestRun) attempt(ctx context.Context, cc *clients.Config, n int) outcome {
	i, ok := rr.at()
	if !ok {
		return outcome{ended: true}
	}
	rr.n.attempts.Add(1)
	rr.sent[i].Add(1)
	if n > 0 {
		rr.n.retries.Add(1)
		rr.resent[i].Add(1)
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if cc.RequestTimeout > 0 {
		actx, cancel = context.WithTimeout(ctx, cc.RequestTimeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, rr.url, nil)
	if err != nil {
		return outcome{ended: true}
	}
	req.Header.Set(replica.AttemptHeader, strconv.Itoa(n))
	resp, err := rr.hc.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	i, ok = rr.at()
	switch {
	case ctx.Err() != nil || !ok:
		return outcome{ended: true}
	case err != nil && errors.Is(actx.Err(), context.DeadlineExceeded):
		rr.n.timeouts.Add(1)
		return outcome{timedOut: true}
	case err != nil:
		rr.n.netErrs.Add(1)
		return outcome{}
	}
	if resp.StatusCode == http.StatusOK {
		rr.goodput[i].Add(1)
		return outcome{status: http.StatusOK}
	}
	o := outcome{status: resp.StatusCode, why: resp.Header.Get(replica.WhyHeader)}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		o.hint = time.Duration(s) * time.Second
	}
	return o
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// row is the design's report row: the clients' counts and series, the
// server's work, and what the two say of each other.
func (rr *requestRun) row(c replica.RequestCounts, fs []report.Fault) report.Design {
	series := scenario.RequestSeries(rr.sc)
	for i := range series.Goodput {
		series.Goodput[i] = rr.goodput[i].Load()
		series.Attempts[i] = rr.sent[i].Load()
		series.Reconnects[i] = rr.resent[i].Load()
	}
	n := &rr.n
	t := report.RequestTotals{
		Requests: n.requests.Load(), Attempts: n.attempts.Load(), Retries: n.retries.Load(),
		Completed: n.completed.Load(), Failed: n.failed.Load(), Timeouts: n.timeouts.Load(),
		Shed: c.Shed, RefusedQueue: c.RefusedQueue, RefusedAdmission: c.RefusedAdmission, RefusedBudget: c.RefusedBudget,
		ServiceS: round6(float64(c.ServiceNS) / 1e9), WastedS: round6(float64(c.WastedNS) / 1e9),
	}
	t.Pending = t.Requests - t.Completed - t.Failed
	rd := scenario.RequestRow(rr.d, series, &t, fs)
	rd.Notes = append(rd.Notes, fmt.Sprintf("live: the server queued %d attempts and served %d while their client waited (the clients counted %d answers), %d after their client had left (wasted work), shed %d, and held %d at the end; %d attempts got no answer for a network error",
		c.Queued, c.Served, t.Completed, c.Wasted, c.Shed, c.Left, n.netErrs.Load()))
	return rd
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
