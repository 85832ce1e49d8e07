package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// The open-loop request workload (workload.kind = "requests"): single
// requests arrive at arrival_rate, evenly spaced or Poisson, with no
// session set-up; one server of replica.workers serves them in arrival
// order from its request queue; a client abandons an attempt at its
// request timeout and retries it, up to request_retries times, while the
// abandoned copy stays queued and still costs its service when a worker
// reaches it (wasted work), unless the design sheds it. Every server
// decision is protocol's (AdmitRequest, Shed); every client decision is
// clients' (Abandon, Retry). docs/model.md, "Requests and metastability".

// reqThinkStream keys the closed-loop clients' think times (closed.go),
// from the design's seed. The arrivals are workload.RequestArrivals, the
// run's seed alone, the same for every design; service times, backoff
// jitter and hint spread are workload.RequestDesign, the design's.
const reqThinkStream = 0x3c6ef372fe94f82b

type reqEvKind uint8

const (
	rqArrive  reqEvKind = iota // the next logical request arrives
	rqSend                     // attempt n of request req is sent
	rqTimeout                  // attempt a's client gives up on it
	rqDone                     // a worker finishes attempt a
	rqStep                     // faults step i
	rqCSend                    // closed.go: client req sends attempt n, if its gen is still a
	rqCNext                    // closed.go: client req's think is over, if its gen is still a
)

type reqEv struct {
	at   int64
	seq  int64
	kind reqEvKind
	req  int32 // rqSend
	n    int16 // rqSend: the attempt's number, 0 for the first
	a    int32 // rqTimeout, rqDone: the attempt; rqStep: the step
	svc  int64 // rqDone: the service it took
}

// reqHeap is a binary min-heap of events by (at, seq). The pairs are
// unique (seq counts the pushes), so the pops come in one order whatever
// the heap's shape. It moves events into place instead of swapping them,
// and calls nothing through an interface: container/heap's Swap and Less
// were a tenth of `stormsim nightly`'s CPU.
type reqHeap []reqEv

func (a *reqEv) before(b *reqEv) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (h *reqHeap) push(ev reqEv) {
	*h = append(*h, ev)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !ev.before(&s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = ev
}

func (h *reqHeap) pop() reqEv {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s = s[:n]
	*h = s
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1].before(&s[c]) {
			c++
		}
		if !s[c].before(&last) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = last
	return top
}

// reqAttempt is one attempt of a request.
type reqAttempt struct {
	queued int64 // when it entered the queue
	req    int32
	n      int16
	gone   bool // its client gave up on it
	done   bool // answered: served, shed or refused
	hs     bool // a closed-loop client's handshake (closed.go)
}

// Outcomes of a logical request.
const (
	reqWaiting uint8 = iota
	reqCompleted
	reqFailed
)

type reqEngine struct {
	ctx   context.Context
	sc    *scenario.Scenario
	rc    *topology.ReplicaConfig
	cc    *clients.Config
	arr   *rand.Rand // arrivals
	rng   *rand.Rand // service times, backoff, hint spread
	adm   protocol.Admission
	steps []faults.Step

	h        reqHeap
	seq      int64
	now      int64
	step     int64
	arrived  int
	outcome  []uint8
	prevWait []time.Duration
	att      []reqAttempt
	queue    []int32
	busy     int
	workers  int
	loadF    float64
	svcF     float64

	t      report.RequestTotals
	series report.Series

	// The closed-loop clients (closed.go), nil for open-loop arrivals.
	cl  []closedClient
	thk *rand.Rand // their think times
}

// runRequests simulates design d of a request-workload scenario and
// returns its report row.
func runRequests(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, steps []faults.Step, fs []report.Fault) report.Design {
	e := &reqEngine{
		ctx: ctx, sc: sc, rc: &d.Replica, cc: &d.Client, steps: steps,
		arr:     workload.RequestArrivals(sc.Seed),
		rng:     workload.RequestDesign(sc.Seed, d.Name),
		step:    int64(sc.Step),
		workers: d.Replica.Workers, loadF: 1, svcF: 1,
	}
	if sc.Closed() {
		s1, s2 := scenario.DesignSeed(sc.Seed, d.Name)
		e.thk = rand.New(rand.NewPCG(s1^reqThinkStream, s2))
		e.cl = []closedClient{}
	}
	e.run()
	rd := scenario.RequestRow(d, e.series, &e.t, fs)
	if sc.Closed() {
		rd.Notes = append(rd.Notes, "workload.arrivals = \"closed\": each client keeps one request outstanding and thinks between requests; goodput counts requests, not handshakes")
	}
	return rd
}

func (e *reqEngine) push(ev reqEv) {
	e.seq++
	ev.seq = e.seq
	e.h.push(ev)
}

// run plays the events until the horizon.
func (e *reqEngine) run() {
	sc := e.sc
	horizon := int64(scenario.Horizon(sc))
	e.series = scenario.RequestSeries(sc)
	for i, st := range e.steps {
		e.push(reqEv{at: int64(st.At), kind: rqStep, a: int32(i)})
	}
	e.push(reqEv{at: 0, kind: rqArrive})
	for k := 0; len(e.h) > 0; k++ {
		if k&0xffff == 0 && e.ctx.Err() != nil {
			return
		}
		ev := e.h.pop()
		if ev.at >= horizon {
			break
		}
		e.now = ev.at
		switch ev.kind {
		case rqArrive:
			e.arrive()
		case rqSend:
			e.send(ev.req, ev.n)
		case rqTimeout:
			e.timeout(ev.a)
		case rqDone:
			e.done(ev.a, ev.svc)
		case rqStep:
			e.fault(e.steps[ev.a])
		case rqCSend:
			if e.cl[ev.req].gen == ev.a {
				e.csend(ev.req, ev.n)
			}
		case rqCNext:
			if e.cl[ev.req].gen == ev.a {
				e.next(ev.req)
			}
		}
	}
	for _, o := range e.outcome {
		if o == reqWaiting {
			e.t.Pending++
		}
	}
	e.t.ServiceS, e.t.WastedS = round6(e.t.ServiceS), round6(e.t.WastedS)
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// at is the series index of the current time.
func (e *reqEngine) at() int { return min(int(e.now/e.step), len(e.series.Goodput)-1) }

// arrive starts a logical request, or a closed-loop client, and
// schedules the next arrival.
func (e *reqEngine) arrive() {
	if e.cl != nil {
		e.join()
	} else {
		id := int32(len(e.outcome))
		e.outcome = append(e.outcome, reqWaiting)
		e.prevWait = append(e.prevWait, 0)
		e.t.Requests++
		e.arrived++
		e.send(id, 0)
	}
	w := e.sc.Workload
	if e.arrived >= w.Clients {
		return
	}
	if next := e.now + workload.RequestGap(&w, e.loadF, e.arr); next < int64(e.sc.Duration) {
		e.push(reqEv{at: next, kind: rqArrive})
	}
}

// send sends attempt n of request req to the server.
func (e *reqEngine) send(req int32, n int16) {
	if ans, _, ok := e.enter(req, n, true, false); !ok {
		if ans.Why == protocol.WhyBudget {
			e.fail(req)
			return
		}
		e.retry(req, n, ans.RetryHint)
	}
}

// enter counts attempt n of req (a request, or a closed-loop client) and
// puts it in the server's queue, or returns protocol's refusal (ok false).
// conn: the attempt opens a connection; hs: it is a handshake.
func (e *reqEngine) enter(req int32, n int16, conn, hs bool) (ans protocol.Answer, a int32, ok bool) {
	e.t.Attempts++
	e.series.Attempts[e.at()]++
	if n > 0 {
		e.t.Retries++
		e.series.Reconnects[e.at()]++
	}
	ans = e.adm.AdmitRequest(e.rc, e.now, n > 0, conn, len(e.queue), e.rng.Float64)
	if ans.Status != 200 {
		switch ans.Why {
		case protocol.WhyBudget:
			e.t.RefusedBudget++
		case protocol.WhyQueueFull:
			e.t.RefusedQueue++
		default:
			e.t.RefusedAdmission++
		}
		return ans, -1, false
	}
	a = int32(len(e.att))
	e.att = append(e.att, reqAttempt{queued: e.now, req: req, n: n, hs: hs})
	e.queue = append(e.queue, a)
	if at, ok := e.cc.Abandon(e.now); ok {
		e.push(reqEv{at: at, kind: rqTimeout, a: a})
	}
	e.dispatch()
	return ans, a, true
}

// retry sends the next attempt of req after the client's wait, or gives
// the request up.
func (e *reqEngine) retry(req int32, n int16, hint time.Duration) {
	wait, ok := e.cc.Retry(int(n), hint, e.prevWait[req], e.rng)
	if !ok {
		e.fail(req)
		return
	}
	e.prevWait[req] = wait
	e.push(reqEv{at: e.now + int64(wait), kind: rqSend, req: req, n: n + 1})
}

func (e *reqEngine) fail(req int32) {
	e.t.Failed++
	e.outcome[req] = reqFailed
}

// timeout abandons attempt a if it is still unanswered.
func (e *reqEngine) timeout(a int32) {
	if e.cl != nil {
		e.ctimeout(a)
		return
	}
	at := &e.att[a]
	if at.done {
		return
	}
	at.gone = true
	e.t.Timeouts++
	e.retry(at.req, at.n, 0)
}

// dispatch gives queued attempts to free workers, shedding stale ones.
func (e *reqEngine) dispatch() {
	for e.busy < e.workers && len(e.queue) > 0 {
		a := e.queue[0]
		e.queue = e.queue[1:]
		at := &e.att[a]
		if protocol.Shed(e.rc, e.now, at.queued) {
			e.t.Shed++
			if !at.gone {
				at.done = true
				if e.cl != nil {
					e.cretry(at.req, at.n, 0)
				} else {
					e.retry(at.req, at.n, 0)
				}
			}
			continue
		}
		d := int64(protocol.ServiceTime(e.rc, at.hs, e.svcF, e.rng))
		e.busy++
		e.push(reqEv{at: e.now + d, kind: rqDone, a: a, svc: d})
	}
}

// done frees the worker that served attempt a: useful work if its client
// still waits, wasted if it left.
func (e *reqEngine) done(a int32, svc int64) {
	e.busy--
	sec := float64(svc) / 1e9
	e.t.ServiceS += sec
	at := &e.att[a]
	switch {
	case at.gone:
		e.t.WastedS += sec
	case e.cl != nil:
		e.answered(a)
	default:
		at.done = true
		e.t.Completed++
		e.outcome[at.req] = reqCompleted
		e.series.Goodput[e.at()]++
	}
	e.dispatch()
}

// fault applies a trigger's step.
func (e *reqEngine) fault(st faults.Step) {
	switch st.Kind {
	case faults.StepLoadFactor:
		e.loadF = st.Fraction
	case faults.StepServiceFactor:
		e.svcF = st.Fraction
	case faults.StepWorkersFactor:
		e.workers = protocol.Workers(e.rc, st.Fraction)
	case faults.StepDropConnections:
		e.dropAll()
	}
	e.dispatch()
}
