package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// Connection kinds.
const (
	connNone       uint8 = iota
	connCall             // the POST's own SSE stream
	connResume           // a GET with Last-Event-ID following the stream
	connStandalone       // the standalone GET stream: never carries a call's events
)

// Process states.
const (
	procUp uint8 = iota
	procDraining
	procDead
)

// call is the state of one logical call, across its attempts.
type call struct {
	active      bool
	reissued    bool
	dropped     bool  // the call's stream broke at least once
	waitResume  bool  // a stream with an id broke and has not resumed yet
	resumeLat   bool  // a resume is in progress: record replay latency at its first event
	e           int32 // logical length: progress events + the result
	hw          int32 // distinct logical events delivered (a prefix 1..hw)
	maxProduced int32 // highest index any finished attempt produced
	unprodMark  int32 // (unprodMark, e] were counted unproduced; e when none
	attempt     int32 // the current attempt, -1 none
	armed       bool  // the call timeout is queued
	start       int64 // when the call started
	dropAt      int64 // first drop not yet recovered from, -1 none
	lastDrop    int64 // the latest drop of the call's stream
	replayFrom  int64 // drop a pending resume answers, for replay latency
}

// conn is a client's open SSE connection.
type conn struct {
	kind    uint8
	attempt int32
	proc    int32
	slot    int32 // index in the proc's conns list
	from    int64 // when events start reaching the client
	base    int32 // cursor when the connection opened
	replayN int32 // events in the replay, until it arrives
}

type client struct {
	brain clients.Brain
	tok   uint32 // guards the response/timer/think/stream-end in flight
	ctok  uint32 // guards the call timeout
	work  rand.PCG
	drops rand.PCG

	nextDrop  int64
	dropSched int64 // time of the drop tick in the queue, -1 none
	awayUntil int64

	calls    int
	think    int64 // think time after the current call
	renewAt  int64 // the application connects a new session from then on (app_reconnect); -1 none
	finished bool

	// The session as the server side sees it.
	sess     uint64
	sessProc int32 // local: the process that holds it; -1 none
	sessOK   bool  // shared: the session record exists
	streams  []int32

	req       clients.Req
	reqCursor int32
	admitProc int32  // the process a queued request waits on
	sessEpoch uint32 // the store epoch a shared session was written in
	holdsSlot bool   // holds one of the reconnect slots
	waitSlot  bool   // waits for one

	call call
	conn conn
}

type attempt struct {
	client    int32
	proc      int32
	follower  int32 // client following it live, -1 none
	e         int32
	endN      int32 // produced when it ended
	prevMax   int32 // highest index earlier attempts had produced when it began
	live      int32 // highest index delivered to a client from it
	start     int64
	iv        int64
	end       int64
	ended     bool
	dead      bool
	stored    bool  // has a stream in an event store
	gone      bool  // its stream was deleted or lost
	isCur     bool  // it is its call's current attempt
	runIdx    int32 // index in its process's running list
	fixedB    int64 // Redis: the bytes its stream holds, once ended
	memIdx    int32 // index in its process's memory store, -1 none
	restartLo int32 // Redis: first index appended after a store restart
	prev      int32 // the call's attempt before this one, -1 none
}

type proc struct {
	slot    int32
	state   uint8
	running []int32  // attempts
	conns   []int32  // clients with a connection here
	store   memStore // this process's in-memory event store

	freeAt      int64   // when the accept queue drains
	tokens      float64 // connection-rate bucket
	tokensAt    int64
	admitWin    int64 // the admission window being counted
	admitCount  int
	promisedWin int64 // the next window rejected clients were sent to
	promised    int
	// Starts and lengths of the running attempts, parallel to running, so
	// the per-step store sums scan two small arrays instead of attempts.
	runStart []int64
	runE     []int32
	runLo    []int32 // first index still in Redis (after a store restart)
	exitTok  uint32
}

// engine runs one design.
type engine struct {
	sc  *scenario.Scenario
	d   *scenario.Design
	rng *rand.Rand
	lb  topology.Policy
	q   queue
	now int64

	hasSessions, shared, priming, pollClose, noResume bool
	events                                            string
	evBytes                                           int64
	redisCost                                         topology.RedisStreamCost
	iv                                                int64
	horizon, duration, step                           int64

	clients  []client
	attempts []attempt
	procs    []proc
	slots    []int32 // serving process per slot, -1 none
	// Redis: the bytes held by ended streams, and those streams in the
	// order they ended (= the order they expire).
	redisFixed int64
	redisEnded []int32
	redisHead  int
	scratch    []int64
	phScratch  []phaseEntry
	perStep    int64   // events per whole series step, when the step is a multiple of the interval
	opsDiff    []int64 // difference array of whole-step appends
	steps      []faults.Step
	arrivals   []int64

	open int64 // open call and resume streams

	// The LB's view of the slots, and faults in force.
	lbOut       []bool // the LB routes no request to the slot
	partitioned []bool // the slot is unreachable from the LB
	healthDelay int64  // how long the LB takes to notice a dead or cut replica
	extraRTT    int64
	storeDown   bool
	gaps        []gap  // windows in which appends to Redis failed
	storeEpoch  uint32 // bumped when Redis restarts empty
	storeFree   []int64
	producing   int64 // running attempts appending to Redis

	// Rare per-client state, kept out of the client struct so that the hot
	// one stays small: a send held while the client is away or waits for a
	// reconnect slot, and an answer on its way back after a store timeout.
	deferred map[int32]clients.Action
	stash    map[int32]clients.Input

	reconnCap      int
	reconnInflight int
	reconnWait     []int32

	t      report.Totals
	series report.Series
	replay []float64
	recov  []float64

	audit Audit
	stats Stats

	progress func(int64)
	memCheck func(e *engine, op memOp, p, ai int32)
	polled   int64
	ctx      stopper

	or        *oracle // the per-event oracle riding on this run, in tests; nil otherwise
	mutReplay int32   // a test's deliberate error in the replay count; 0 otherwise
}

// Audit holds checks the report does not carry, for tests.
type Audit struct {
	// UnproducedRecovered counts unproduced events a later attempt produced.
	UnproducedRecovered int64
	// UnproducedPending counts unproduced events of calls still pending.
	UnproducedPending int64
	// Probes lists, per hard stop, the sessions alive on the process and
	// the status of each one's first session request after it.
	Probes []Probe

	// Outcomes of the calls whose stream broke at least once.
	DroppedCalls, DroppedReissued, DroppedFailed, DroppedPending, DroppedResumedOnly int64
	// Drops of a stream that already had an event id, and what followed.
	DropsWithID, DropsWithIDResumed, DropsWithIDPending int64
	// PurgedMissing counts the events actually missing from the store when
	// resumes were answered 400 purged.
	PurgedMissing int64
	// Statuses of GETs with Last-Event-ID and of standalone GETs.
	ResumeStatus, StandaloneStatus [600]int64
}

// Probe records what the sessions of a hard-killed process saw next.
type Probe struct {
	Why      string // "stop" or "scale"
	At       time.Duration
	Sessions int   // local sessions alive on the process when it died
	First    []int // status of each one's first session request afterwards
	Dropped  int   // sessions their client let go without another request
	waiting  map[int32]bool
	keys     []uint64
	ids      []int32
}

// Stats counts the engine's work, for benchmarks.
type Stats struct {
	QueueEvents      int64         // events popped from the queue
	ArithmeticEvents int64         // stream events counted without queueing them
	PendingSum       int64         // sum over pops of the queue length, for the mean
	PurgeRounds      int64         // memory store purge rounds
	PurgeVisits      int64         // streams the purge rounds looked at
	Busy             time.Duration // time spent in the engine's loop
}

func (e *engine) view() topology.View { return engineView{e} }

type engineView struct{ e *engine }

func (v engineView) Replicas() int     { return len(v.e.slots) }
func (v engineView) InPool(i int) bool { return !v.e.lbOut[i] }
func (v engineView) Conns(i int) int {
	if p := v.e.slots[i]; p >= 0 {
		return len(v.e.procs[p].conns)
	}
	return 0
}

func (e *engine) schedule(at int64, k evKind, id int32, tok uint32) {
	e.q.push(event{at: at, kind: k, id: id, tok: tok})
}

func (e *engine) bucket(t int64) int {
	b := int(t / e.step)
	if b >= len(e.series.Reconnects) {
		b = len(e.series.Reconnects) - 1
	}
	if b < 0 {
		b = 0
	}
	return b
}

// produced is how many events of a (1..e) exist at time t.
func (e *engine) produced(a *attempt, t int64) int32 {
	if a.ended && t > a.end {
		t = a.end
	}
	if t < a.start {
		return 0
	}
	n := (t - a.start) / a.iv
	if n > int64(a.e) {
		return a.e
	}
	if a.ended && int32(n) > a.endN {
		return a.endN
	}
	return int32(n)
}

func (e *engine) prodTime(a *attempt, k int32) int64 { return a.start + int64(k)*a.iv }

func (e *engine) newProc(slot int32) int32 {
	e.procs = append(e.procs, proc{slot: slot, state: procUp})
	return int32(len(e.procs) - 1)
}

func (e *engine) run() {
	sc := e.sc
	e.duration = int64(sc.Duration)
	e.horizon = int64(sc.Duration + sc.Drain)
	e.step = int64(sc.Step)
	n := int((e.horizon + e.step - 1) / e.step)
	e.series = report.Series{
		StepS:         sc.Step.Seconds(),
		ActiveStreams: make([]int64, n), Reconnects: make([]int64, n), SessionRequests: make([]int64, n),
		HTTP404: make([]int64, n), EventsLost: make([]int64, n), StoreOps: make([]int64, n), StoreBytes: make([]int64, n),
	}
	if e.step%e.iv == 0 {
		e.perStep = e.step / e.iv
	}
	e.opsDiff = make([]int64, n+1)
	e.slots = make([]int32, sc.Replicas)
	e.lbOut = make([]bool, sc.Replicas)
	e.partitioned = make([]bool, sc.Replicas)
	for i := range e.slots {
		e.slots[i] = e.newProc(int32(i))
	}
	e.reconnCap = e.d.Client.MaxConcurrentReconnects
	e.deferred, e.stash = map[int32]clients.Action{}, map[int32]clients.Input{}
	e.clients = make([]client, len(e.arrivals))
	// Room for the attempts and the queue a run of this size will need, so
	// the hot loop does not spend its time growing slices.
	w := &sc.Workload
	meanCall := float64(w.EventsMin+w.EventsMax) / 2 / w.EventRate
	perClient := sc.Duration.Seconds()/(meanCall+w.Think.Seconds()+1) + 1
	e.attempts = make([]attempt, 0, int(float64(len(e.arrivals))*perClient*1.2)+16)
	e.q.h = make([]event, 0, 1<<14)
	if len(e.arrivals) > 0 {
		e.schedule(e.arrivals[0], evArrive, 0, 0) // each arrival queues the next
	}
	for i, s := range e.steps {
		if int64(s.At) <= e.horizon {
			e.schedule(int64(s.At), evStep, int32(i), 0)
		}
	}
	for i := 1; i <= n; i++ {
		at := int64(i) * e.step
		if at > e.horizon {
			at = e.horizon
		}
		e.schedule(at, evSample, int32(i-1), 0)
	}
	for e.q.Len() > 0 {
		ev := e.q.pop()
		if ev.at > e.horizon {
			break
		}
		e.now = ev.at
		e.stats.QueueEvents++
		e.stats.PendingSum += int64(e.q.Len())
		if e.or != nil {
			e.or.catchUp(e, ev.at)
		}
		e.dispatch(ev)
		if e.stats.QueueEvents&0xffff == 0 {
			if e.ctx != nil && e.ctx.Err() != nil {
				return
			}
			if e.progress != nil {
				e.progress(e.now - e.polled)
				e.polled = e.now
			}
		}
	}
	e.now = e.horizon
	if e.or != nil {
		e.or.catchUp(e, e.horizon)
	}
	e.finish()
	if e.progress != nil {
		e.progress(e.horizon - e.polled)
	}
}

func (e *engine) dispatch(ev event) {
	switch ev.kind {
	case evArrive:
		if next := ev.id + 1; int(next) < len(e.arrivals) {
			e.schedule(e.arrivals[next], evArrive, next, 0)
		}
		c := &e.clients[ev.id]
		e.initClient(ev.id)
		e.startCall(ev.id, c)
	case evResponse:
		c := &e.clients[ev.id]
		if ev.tok == c.tok {
			switch ev.aux {
			case atLB:
				e.arrive(ev.id, c)
			case atHandler:
				e.handleQueued(ev.id, c)
			case atClient:
				in := e.stash[ev.id]
				delete(e.stash, ev.id)
				e.answer(ev.id, c, in)
			}
		}
	case evLBNotice:
		e.lbNotice(int(ev.id))
	case evStoreDrop:
		c := &e.clients[ev.id]
		if ev.tok == c.tok && c.conn.kind == connResume {
			e.endStream(ev.id, c, clients.Input{Kind: clients.InStreamEnd})
		}
	case evTimer:
		c := &e.clients[ev.id]
		if ev.tok == c.tok {
			if a, ok := e.deferred[ev.id]; ok {
				delete(e.deferred, ev.id)
				e.act(ev.id, c, a)
				return
			}
			e.act(ev.id, c, c.brain.Step(clients.Input{Kind: clients.InTimer}))
		}
	case evThink:
		c := &e.clients[ev.id]
		if ev.tok == c.tok {
			e.startCall(ev.id, c)
		}
	case evCallTimeout:
		c := &e.clients[ev.id]
		if ev.tok == c.ctok && c.call.active {
			e.settle(c)
			if c.conn.kind == connCall || c.conn.kind == connResume {
				// The client gives up on an open stream: it ends before
				// its result, a drop (docs/domain.md §6), though nothing
				// follows it.
				e.t.Drops++
				if e.or != nil {
					e.or.drop(ev.id, e.now, e.or.conn[ev.id].req, check.DropTimeout)
				}
			}
			e.act(ev.id, c, c.brain.Step(clients.Input{Kind: clients.InCallTimeout}))
		}
	case evDropTick:
		e.dropTick(ev.id)
	case evStreamEnd:
		c := &e.clients[ev.id]
		if ev.tok == c.tok && c.conn.kind == connResume {
			a := &e.attempts[c.conn.attempt]
			if a.ended && !a.dead {
				e.endStream(ev.id, c, clients.Input{Kind: clients.InStreamEnd, Result: true})
			} else {
				e.endStream(ev.id, c, clients.Input{Kind: clients.InStreamEnd, RPCError: true})
			}
		}
	case evAttemptDone:
		e.attemptDone(ev.id, ev.tok)
	case evProcExit:
		p := &e.procs[ev.id]
		if p.state == procDraining && ev.tok == p.exitTok {
			e.exitProc(ev.id, true)
		}
	case evStep:
		e.fault(e.steps[ev.id])
	case evSample:
		e.sample(int(ev.id))
	}
}

// --- clients -------------------------------------------------------------

func (e *engine) initClient(id int32) {
	c := &e.clients[id]
	c.brain.Init(&e.d.Client, e.rng)
	workload.Seed(&c.work, &c.drops, e.sc.Seed, int(id))
	c.sessProc, c.dropSched, c.nextDrop, c.renewAt = -1, -1, 0, -1
	c.call.attempt, c.call.dropAt = -1, -1
	if e.sc.Workload.DropEvery > 0 {
		c.nextDrop = e.now + workload.Exp(&c.drops, int64(e.sc.Workload.DropEvery))
	}
}

func (e *engine) startCall(id int32, c *client) {
	w := &e.sc.Workload
	if e.now >= e.duration || (w.CallsPerClient > 0 && c.calls >= w.CallsPerClient) {
		e.finishClient(id, c)
		return
	}
	c.calls++
	n, think := workload.Draw(&e.sc.Workload, &c.work)
	c.think = think
	c.call = call{active: true, e: n, unprodMark: n, attempt: -1, dropAt: -1}
	e.t.Calls++
	e.t.EventsExpected += int64(n)
	c.ctok++
	c.call.start = e.now
	if e.or != nil {
		e.or.startCall(id, c, e.now)
	}
	// A call that streams without trouble ends long before its timeout, so
	// the timeout is queued only when something goes wrong (armTimeout), or
	// now when the call could not finish in time anyway.
	if int64(n)*e.iv+8*int64(e.sc.RTT) >= int64(e.d.Client.CallTimeout) {
		e.armTimeout(id, c)
	}
	renew := c.renewAt >= 0 && e.now >= c.renewAt
	if renew {
		c.renewAt = -1
	}
	e.act(id, c, c.brain.Step(clients.Input{Kind: clients.InStartCall, Renew: renew}))
}

func (e *engine) finishClient(id int32, c *client) {
	if c.finished {
		return
	}
	c.finished = true
	e.act(id, c, c.brain.Step(clients.Input{Kind: clients.InFinish}))
}

// act carries out one decision of the brain.
func (e *engine) act(id int32, c *client, a clients.Action) {
	switch a.Kind {
	case clients.ActSend:
		if e.now < c.awayUntil {
			e.deferred[id] = a
			c.tok++
			e.schedule(c.awayUntil, evTimer, id, c.tok)
			e.armTimeout(id, c) // the call may not outlast its timeout while away
			return
		}
		e.send(id, c, a)
	case clients.ActWait:
		c.tok++
		e.schedule(max(e.now+int64(a.Delay), c.awayUntil), evTimer, id, c.tok)
	case clients.ActEndCall:
		e.endCall(id, c, a)
	}
}

func (e *engine) send(id int32, c *client, a clients.Action) {
	// A cap on concurrent reconnects: wait for a slot, in arrival order.
	if a.Reconnect && e.reconnCap > 0 && !c.holdsSlot {
		if e.reconnInflight >= e.reconnCap {
			e.deferred[id], c.waitSlot = a, true
			c.tok++
			e.reconnWait = append(e.reconnWait, id)
			e.armTimeout(id, c)
			return
		}
		e.reconnInflight++
		c.holdsSlot = true
	}
	b := e.bucket(e.now)
	e.t.Requests++
	if e.or != nil {
		e.or.send(id, c, a, e.now)
	}
	if a.Req != clients.ReqInitialize && c.brain.HasSession() {
		e.t.SessionRequests++
		e.series.SessionRequests[b]++
	}
	if a.Reconnect {
		e.t.Reconnects++
		e.series.Reconnects[b]++
	}
	if a.Reissue && c.call.active && !c.call.reissued {
		c.call.reissued = true
		e.t.CallsReissued++
	}
	c.req, c.reqCursor = a.Req, int32(a.Cursor)
	c.tok++
	e.schedule(e.now+e.rtt(), evResponse, id, c.tok)
}

// rtt is the current network round trip, with any latency fault added.
func (e *engine) rtt() int64 { return int64(e.sc.RTT) + e.extraRTT }

// dropSessionStreams deletes the streams of the client's current session.
func (e *engine) dropSessionStreams(c *client) {
	for _, ai := range c.streams {
		e.dropStream(ai)
	}
	c.streams = c.streams[:0]
}

// dropStream deletes one stream from its store.
func (e *engine) dropStream(ai int32) {
	a := &e.attempts[ai]
	if a.gone {
		return
	}
	a.gone = true
	e.redisFixed -= a.fixedB
	a.fixedB = 0
	e.memDelete(ai)
}

func (e *engine) startAttempt(id int32, c *client, p int32) {
	cl := &c.call
	prev := cl.maxProduced
	cl.waitResume = false // a re-issue: the broken stream was never resumed
	if cl.attempt >= 0 {
		old := &e.attempts[cl.attempt]
		old.isCur = false
		prev = max(prev, e.produced(old, e.now))
		cl.maxProduced = prev
	}
	a := attempt{
		client: id, proc: p, follower: id, e: cl.e, prevMax: prev, prev: cl.attempt,
		start: e.now, iv: e.iv, stored: e.events != topology.EventsNone, isCur: true,
	}
	ai := int32(len(e.attempts))
	pr := &e.procs[p]
	if a.stored {
		c.streams = append(c.streams, ai)
	}
	a.memIdx = -1
	if a.stored && e.events == topology.EventsRedis {
		e.producing++
	}
	e.attempts = append(e.attempts, a)
	e.attempts[ai].runIdx = int32(len(pr.running))
	pr.running = append(pr.running, ai)
	pr.runStart = append(pr.runStart, a.start)
	pr.runE = append(pr.runE, a.e)
	pr.runLo = append(pr.runLo, 0)
	cl.attempt = ai
	if a.stored && e.events == topology.EventsMemory {
		e.memAdd(p, ai)
	}
	if e.or != nil {
		e.or.startAttempt(e, id, ai, e.now)
	}
	e.schedule(a.start+int64(a.e)*a.iv, evAttemptDone, ai, 0)
	e.connect(c, id, connCall, ai, p, e.now, 0)
}

// connect opens a connection; events reach the client from `from` on.
func (e *engine) connect(c *client, id int32, kind uint8, ai, p int32, from int64, base int32) {
	pr := &e.procs[p]
	c.conn = conn{kind: kind, attempt: ai, proc: p, slot: int32(len(pr.conns)), from: from, base: base}
	pr.conns = append(pr.conns, id)
	if ai >= 0 {
		e.attempts[ai].follower = id
	}
	if kind != connStandalone {
		e.open++
		e.scheduleDrop(id, c)
	}
	if e.or != nil {
		e.or.connect(e, id, c, e.now)
	}
}

func (e *engine) scheduleDrop(id int32, c *client) {
	if e.sc.Workload.DropEvery <= 0 {
		return
	}
	for c.nextDrop <= e.now {
		c.nextDrop += workload.Exp(&c.drops, int64(e.sc.Workload.DropEvery))
	}
	// A drop instant after the attempt's last event cannot touch this
	// stream; the next connection will look again.
	if k := c.conn; k.attempt >= 0 {
		if a := &e.attempts[k.attempt]; !a.ended && c.nextDrop > a.start+int64(a.e)*a.iv {
			return
		}
	}
	if c.dropSched != c.nextDrop {
		c.dropSched = c.nextDrop
		e.schedule(c.nextDrop, evDropTick, id, 0)
	}
}

func (e *engine) dropTick(id int32) {
	c := &e.clients[id]
	if c.dropSched != e.now {
		return
	}
	c.dropSched = -1
	if c.conn.kind == connCall || c.conn.kind == connResume {
		e.endStream(id, c, clients.Input{Kind: clients.InStreamEnd})
	}
}

// disconnect detaches the client's connection without telling the brain.
func (e *engine) disconnect(id int32, c *client) {
	k := c.conn
	if k.kind == connNone {
		return
	}
	if e.or != nil {
		e.or.streamEnd(e, id, c, e.now)
	}
	pr := &e.procs[k.proc]
	last := pr.conns[len(pr.conns)-1]
	pr.conns[k.slot] = last
	e.clients[last].conn.slot = k.slot
	pr.conns = pr.conns[:len(pr.conns)-1]
	if k.attempt >= 0 {
		a := &e.attempts[k.attempt]
		if a.follower == id {
			a.follower = -1
		}
	}
	if k.kind != connStandalone {
		e.open--
	}
	c.conn = conn{}
}

// settle counts what the client's connection delivered up to now.
func (e *engine) settle(c *client) {
	k := &c.conn
	if k.kind != connCall && k.kind != connResume {
		return
	}
	if e.now < k.from {
		return
	}
	a := &e.attempts[k.attempt]
	if !a.isCur {
		return
	}
	upto := e.reached(c, a)
	if k.replayN > 0 {
		e.t.EventsReplayed += int64(k.replayN + e.mutReplay) // the replay arrived
		k.replayN = 0
	}
	if upto > a.live {
		e.stats.ArithmeticEvents += int64(upto - a.live)
		a.live = upto
	}
	cl := &c.call
	if k.kind == connResume && cl.resumeLat && upto > k.base {
		t1 := max(k.from, e.prodTime(a, k.base+1))
		e.replay = append(e.replay, float64(t1-cl.replayFrom)/1e6)
		cl.resumeLat = false
	}
	if upto > cl.hw {
		if cl.dropAt >= 0 {
			t1 := max(k.from, e.prodTime(a, cl.hw+1))
			e.recov = append(e.recov, float64(t1-cl.dropAt)/1e6)
			cl.dropAt = -1
		}
		e.t.EventsDelivered += int64(upto - cl.hw)
		cl.hw = upto
	}
}

// endStream ends the client's call stream and tells the brain.
func (e *engine) endStream(id int32, c *client, in clients.Input) {
	e.settle(c)
	k := c.conn
	if k.kind == connNone {
		return
	}
	var cursor int32 = -1
	if k.kind != connStandalone && k.attempt >= 0 {
		cursor = e.reached(c, &e.attempts[k.attempt])
		if k.kind == connResume && e.now < k.from {
			cursor = k.base
		}
		if cursor == 0 && !e.priming {
			cursor = -1
		}
	}
	e.disconnect(id, c)
	if in.Result {
		c.tok++
		e.act(id, c, c.brain.Step(in))
		return
	}
	in.Cursor = int(cursor)
	in.HasID = e.events != topology.EventsNone && !e.noResume && cursor >= 0
	if k.kind != connStandalone {
		e.t.Drops++
		if e.or != nil {
			e.or.drop(id, e.now, e.or.conn[id].req, check.DropServer)
		}
		c.call.dropped = true
		c.call.lastDrop = e.now
		e.armTimeout(id, c)
		if c.call.dropAt < 0 {
			c.call.dropAt = e.now
		}
		if in.HasID && !c.call.waitResume {
			e.audit.DropsWithID++
			c.call.waitResume = true
		}
	}
	in.NoResume = e.noResume
	c.tok++ // nothing in flight survives the end of the stream
	e.act(id, c, c.brain.Step(in))
}

// resume serves a GET with Last-Event-ID.
func (e *engine) resume(id int32, c *client, p int32) (int, bool) {
	switch {
	case !e.hasSessions:
		return 405, false
	case !e.sessionAt(c, p):
		return 404, false
	case e.events == topology.EventsNone:
		return 400, false
	}
	ai := c.call.attempt
	if ai < 0 {
		return 400, false
	}
	a := &e.attempts[ai]
	cursor := c.reqCursor
	if e.events == topology.EventsMemory && a.proc != p {
		return 400, false // the stream lives in another process's memory
	}
	hi := e.produced(a, e.now)
	lo := e.storedLo(a, hi)
	if a.gone || e.expired(a) || lo > cursor+1 || (e.events == topology.EventsRedis && e.inGap(a, cursor, hi)) {
		// All or nothing, as go-sdk's After: the events that are missing
		// are only part of what the client loses if it gives up.
		missing := int64(hi - cursor)
		if !a.gone && !e.expired(a) && lo > cursor+1 {
			missing = int64(min(lo, hi+1) - cursor - 1)
		}
		e.audit.PurgedMissing += max(missing, 0)
		return 400, true
	}
	if a.follower >= 0 && a.follower != id {
		return 409, false
	}
	n := hi - cursor
	if n < 0 {
		n = 0
	}
	e.t.Resumes++
	if c.call.waitResume {
		e.audit.DropsWithIDResumed++
		c.call.waitResume = false
	}
	e.storeOp(1)
	lat := e.storeRead(int(n))
	if c.call.dropped {
		// Replay latency runs from the drop of this stream, the one resumed.
		c.call.resumeLat = true
		c.call.replayFrom = c.call.lastDrop
	}
	e.connect(c, id, connResume, ai, p, e.now+lat, cursor)
	c.conn.replayN = n // counted as replayed when the replay reaches the client
	return 200, false
}

func (e *engine) storedLo(a *attempt, hi int32) int32 {
	first := e.first()
	switch e.events {
	case topology.EventsMemory:
		return e.memLo(a, hi)
	case topology.EventsRedis:
		lo := max(first, a.restartLo)
		if m := int32(e.d.Store.RedisMaxLen); m > 0 && hi-m+1 > lo {
			return hi - m + 1
		}
		return lo
	}
	return first
}

func (e *engine) expired(a *attempt) bool {
	ttl := int64(e.d.Store.RedisTTL)
	return e.events == topology.EventsRedis && ttl > 0 && a.ended && e.now >= a.end+ttl
}

// storeOp counts store operations in the current step.
func (e *engine) storeOp(n int64) {
	if e.events == topology.EventsNone && !e.shared {
		return
	}
	e.series.StoreOps[e.bucket(e.now)] += n
}

// appendOps spreads an attempt's appends over the steps they happened in.
func (e *engine) appendOps(a *attempt) {
	if !a.stored {
		return
	}
	k := e.first()
	n := len(e.series.StoreOps)
	for k <= a.endN {
		t := e.prodTime(a, k)
		b := e.bucket(t)
		bEnd := int64(b+1) * e.step
		if e.perStep > 0 && b+1 < n-1 {
			// Every whole step holds exactly perStep events: add the run of
			// whole steps in O(1) to a difference array, summed in finish.
			firstWhole := b + 1
			lastT := e.prodTime(a, a.endN)
			lastWhole := min(int(lastT/e.step)-1, n-2)
			if lastWhole >= firstWhole {
				// events k.. before the first whole step
				head := int32((bEnd-1-a.start)/a.iv) - k + 1
				e.series.StoreOps[b] += int64(head)
				e.opsDiff[firstWhole] += e.perStep
				e.opsDiff[lastWhole+1] -= e.perStep
				k += head + int32(int64(lastWhole-firstWhole+1)*e.perStep)
				continue
			}
		}
		// events k.. that fall in bucket b
		last := min(max(int32((bEnd-1-a.start)/a.iv), k), a.endN)
		e.series.StoreOps[b] += int64(last - k + 1)
		k = last + 1
	}
}

// endAttempt records an attempt's end: done (all events) or dead (killed).
func (e *engine) endAttempt(ai int32, dead bool) {
	a := &e.attempts[ai]
	if a.ended {
		return
	}
	a.endN = e.produced(a, e.now)
	a.ended, a.dead, a.end = true, dead, e.now
	pr := &e.procs[a.proc]
	n := len(pr.running) - 1
	last := pr.running[n]
	pr.running[a.runIdx], pr.runStart[a.runIdx], pr.runE[a.runIdx], pr.runLo[a.runIdx] = last, pr.runStart[n], pr.runE[n], pr.runLo[n]
	e.attempts[last].runIdx = a.runIdx
	pr.running, pr.runStart, pr.runE, pr.runLo = pr.running[:n], pr.runStart[:n], pr.runE[:n], pr.runLo[:n]
	e.memEnd(ai)
	e.appendOps(a)
	if a.stored && e.events == topology.EventsRedis {
		e.producing--
	}
	if a.stored && !a.gone && e.events == topology.EventsRedis {
		a.fixedB = e.streamBytes(int64(e.storedLo(a, a.endN)), int64(a.endN), int64(a.e))
		e.redisFixed += a.fixedB
		e.redisEnded = append(e.redisEnded, ai)
	}
	c := &e.clients[a.client]
	// The follower gets what was produced before the end.
	if a.follower >= 0 {
		e.settle(&e.clients[a.follower])
	}
	if e.events == topology.EventsNone && a.endN > a.live {
		e.t.EventsWasted += int64(a.endN - a.live)
	}
	// Earlier attempts may still be running: a disconnect cancels nothing.
	earlier := max(a.prevMax, e.chainMax(a.prev))
	if earlier > 0 {
		e.t.EventsRedone += int64(min(a.endN, earlier))
	}
	if a.isCur && c.call.active {
		cl := &c.call
		cl.maxProduced = max(cl.maxProduced, a.endN, earlier)
		if dead && cl.maxProduced < cl.unprodMark {
			e.t.EventsUnproduced += int64(cl.unprodMark - cl.maxProduced)
			cl.unprodMark = cl.maxProduced
		}
	}
	// A follower on another process resumes live from the store; when the
	// producer dies it ends the stream with an error once the call's lease
	// runs out (docs/domain.md §4).
	if dead && a.follower >= 0 {
		f := &e.clients[a.follower]
		if f.conn.kind == connResume && f.conn.proc != a.proc {
			e.schedule(max(e.now+int64(e.d.Replica.OrphanLease), f.conn.from), evStreamEnd, a.follower, f.tok)
		}
	}
}

func (e *engine) attemptDone(ai int32, _ uint32) {
	a := &e.attempts[ai]
	if a.ended {
		return
	}
	e.endAttempt(ai, false)
	a = &e.attempts[ai]
	if f := a.follower; f >= 0 {
		c := &e.clients[f]
		if c.conn.attempt == ai {
			if e.now >= c.conn.from {
				e.endStream(f, c, clients.Input{Kind: clients.InStreamEnd, Result: true})
			} else {
				e.schedule(c.conn.from, evStreamEnd, f, c.tok)
			}
		}
	}
	if p := a.proc; e.procs[p].state == procDraining && len(e.procs[p].running) == 0 {
		e.exitProc(p, true)
	}
}

// endCall does the accounting of a logical call that ended.
func (e *engine) endCall(id int32, c *client, a clients.Action) {
	e.settle(c)
	e.disconnect(id, c)
	c.tok++
	c.ctok++
	delete(e.deferred, id)
	c.waitSlot = false
	e.releaseSlot(c)
	cl := &c.call
	if !cl.active {
		return
	}
	if e.or != nil {
		e.or.endCall(id, a, e.now)
	}
	maxP := cl.maxProduced
	if cl.attempt >= 0 {
		maxP = max(maxP, e.produced(&e.attempts[cl.attempt], e.now), e.chainMax(e.attempts[cl.attempt].prev))
		e.attempts[cl.attempt].isCur = false
	}
	if cl.unprodMark < cl.e {
		e.audit.UnproducedRecovered += int64(maxP - cl.unprodMark)
	}
	undelivered := int64(cl.e - cl.hw)
	if cl.dropped {
		e.audit.DroppedCalls++
		switch {
		case a.Outcome == clients.Failed:
			e.audit.DroppedFailed++
		case cl.reissued:
			e.audit.DroppedReissued++
		default:
			e.audit.DroppedResumedOnly++
		}
	}
	cl.waitResume = false
	if a.Outcome == clients.Completed {
		e.t.CallsCompleted++
		if undelivered > 0 {
			e.t.LostByCause.Other += undelivered
		}
	} else {
		e.t.CallsFailed++
		var unprod int64
		if cl.unprodMark < cl.e {
			unprod = int64(cl.e - max(cl.hw, maxP))
		}
		rest := undelivered - unprod
		e.t.LostByCause.Unproduced += unprod
		if a.Cause == clients.CausePurged {
			e.t.LostByCause.Purged += rest
		} else {
			e.t.LostByCause.Abandoned += rest
		}
	}
	if undelivered > 0 {
		e.t.EventsLost += undelivered
		e.series.EventsLost[e.bucket(e.now)] += undelivered
	}
	cl.active = false
	cl.attempt = -1
	if a.Renew && c.renewAt < 0 {
		c.renewAt = e.now + int64(a.RenewAfter)
	}
	if a.Outcome == clients.Failed && !e.sc.Workload.ContinueAfterFailure {
		e.finishClient(id, c)
		return
	}
	c.tok++
	e.schedule(e.now+c.think, evThink, id, c.tok)
}

// --- processes and faults ------------------------------------------------

func (e *engine) fault(s faults.Step) {
	switch s.Kind {
	case faults.StepStop:
		if s.Replica < len(e.slots) {
			e.stopSlot(s.Replica, s.Graceful, "stop")
		}
	case faults.StepStart:
		if s.Replica < len(e.slots) && e.slots[s.Replica] < 0 {
			e.slots[s.Replica] = e.newProc(int32(s.Replica))
			e.lbOut[s.Replica] = false
		}
	case faults.StepClientDrop:
		e.clientDrop(s)
	case faults.StepScale:
		e.scale(s)
	case faults.StepPartition:
		if r := s.Replica; r < len(e.slots) && !e.partitioned[r] {
			e.partitioned[r] = true
			if p := e.slots[r]; p >= 0 {
				e.dropConns(p, 0) // the LB's connections to it break
			}
			e.slotFailed(r)
		}
	case faults.StepHeal:
		if r := s.Replica; r < len(e.slots) && e.partitioned[r] {
			e.partitioned[r] = false
			if e.slots[r] >= 0 {
				e.lbOut[r] = false
			}
		}
	case faults.StepLatency:
		e.extraRTT += int64(s.Extra)
	case faults.StepStoreDown:
		e.storeOutage()
	case faults.StepStoreUp:
		e.storeDown = false
		if n := len(e.gaps); n > 0 {
			e.gaps[n-1].until = e.now
		}
	case faults.StepStoreRestart:
		e.storeRestart(s.Persistent || e.d.Store.Persistent)
	case faults.StepHealthDelay:
		e.healthDelay = int64(s.Extra)
	}
}

// stopSlot stops the serving process of a slot: a graceful drain, or a kill.
func (e *engine) stopSlot(slot int, graceful bool, why string) {
	p := e.slots[slot]
	if p < 0 {
		return
	}
	e.slots[slot] = -1
	if graceful {
		e.lbOut[slot] = true // a draining replica leaves the pool at once
		e.drain(p)
		return
	}
	e.recordProbe(why, func(c *client) bool { return c.sessProc == p })
	e.exitProc(p, false)
	e.slotFailed(slot)
}

// scale sets the number of slots. Under hash routing, sessions whose key now
// hashes elsewhere land on a replica that does not know them.
func (e *engine) scale(s faults.Step) {
	n := s.Replicas
	if !e.shared {
		e.recordProbe("scale", func(c *client) bool { return c.sessProc >= 0 })
	}
	for len(e.slots) < n {
		slot := len(e.slots)
		e.slots = append(e.slots, e.newProc(int32(slot)))
		e.lbOut = append(e.lbOut, false)
		e.partitioned = append(e.partitioned, false)
	}
	for slot := len(e.slots) - 1; slot >= n; slot-- {
		e.stopSlot(slot, s.Graceful, "scale")
	}
	e.slots, e.lbOut, e.partitioned = e.slots[:n], e.lbOut[:n], e.partitioned[:n]
}

// storeOutage makes Redis unreachable: appends fail from now on (a gap), and
// streams that follow a call by reading Redis fail once the read times out.
func (e *engine) storeOutage() {
	if e.storeDown {
		return
	}
	e.storeDown = true
	e.gaps = append(e.gaps, gap{from: e.now, until: math.MaxInt64})
	if e.events != topology.EventsRedis {
		return
	}
	at := e.now + int64(e.d.Store.Timeout)
	for p := range e.procs {
		for _, id := range e.procs[p].conns {
			c := &e.clients[id]
			if c.conn.kind == connResume && e.attempts[c.conn.attempt].proc != int32(p) {
				e.schedule(at, evStoreDrop, id, c.tok)
			}
		}
	}
}

// storeRestart restarts Redis. Without persistence every stream and shared
// session is gone; running calls append to fresh, gapped streams.
func (e *engine) storeRestart(persistent bool) {
	if persistent || e.events != topology.EventsRedis && !e.shared {
		return
	}
	e.storeEpoch++
	for ai := range e.attempts {
		a := &e.attempts[ai]
		if !a.stored || a.gone {
			continue
		}
		if a.ended {
			e.dropStream(int32(ai))
			continue
		}
		a.restartLo = e.produced(a, e.now) + 1
		pr := &e.procs[a.proc]
		pr.runLo[a.runIdx] = a.restartLo
	}
}

// dropConns breaks every connection of process p, with a retry hint if any.
func (e *engine) dropConns(p int32, hint time.Duration) {
	pr := &e.procs[p]
	for len(pr.conns) > 0 {
		id := pr.conns[len(pr.conns)-1]
		e.endStream(id, &e.clients[id], clients.Input{Kind: clients.InStreamEnd, RetryHint: hint})
		pr = &e.procs[p]
	}
}

func (e *engine) drain(p int32) {
	pr := &e.procs[p]
	pr.state = procDraining
	closeNow := e.d.Replica.DrainClose == topology.DrainCloseStart ||
		(e.d.Replica.DrainClose == topology.DrainCloseAuto && e.shared)
	if closeNow && e.pollClose {
		e.closeWithHints(p)
	}
	pr = &e.procs[p]
	if len(pr.running) == 0 {
		e.exitProc(p, true)
		return
	}
	pr.exitTok++
	e.schedule(e.now+int64(e.d.Replica.DrainLimit), evProcExit, p, pr.exitTok)
}

// closeWithHints closes every stream of p with a retry hint: jittered when
// the design spreads hints, and with admission buckets each group of
// admit_bucket streams told to come back one interval after the previous.
func (e *engine) closeWithHints(p int32) {
	rc := &e.d.Replica
	for i := 0; len(e.procs[p].conns) > 0; i++ {
		pr := &e.procs[p]
		id := pr.conns[len(pr.conns)-1]
		hint := e.hint(rc.RetryHint)
		if rc.AdmitBucket > 0 {
			hint += time.Duration(i/rc.AdmitBucket) * rc.AdmitInterval
		}
		e.endStream(id, &e.clients[id], clients.Input{Kind: clients.InStreamEnd, RetryHint: hint})
	}
}

// exitProc ends a process: its calls die, its connections close (with a
// retry hint when graceful), its memory and local sessions are gone.
func (e *engine) exitProc(p int32, graceful bool) {
	pr := &e.procs[p]
	if pr.state == procDead {
		return
	}
	pr.state = procDead
	for i, sp := range e.slots {
		if sp == p {
			e.slots[i] = -1
		}
	}
	for len(pr.running) > 0 {
		e.endAttempt(pr.running[len(pr.running)-1], true)
		pr = &e.procs[p]
	}
	if graceful && e.pollClose {
		e.closeWithHints(p)
	} else {
		e.dropConns(p, 0)
	}
	pr = &e.procs[p]
	if e.events == topology.EventsMemory {
		for _, ai := range pr.store.ms.ai {
			e.attempts[ai].gone = true
			e.attempts[ai].memIdx = -1
		}
		pr.store = memStore{}
		if e.memCheck != nil {
			e.memCheck(e, memOpExit, p, -1)
		}
	}
}

func (e *engine) clientDrop(s faults.Step) {
	var victims []int32
	for p := range e.procs {
		for _, id := range e.procs[p].conns {
			c := &e.clients[id]
			if c.conn.kind != connCall && c.conn.kind != connResume {
				continue
			}
			if workload.Pick(e.sc.Seed, uint64(s.Fault), uint64(id)) < s.Fraction {
				victims = append(victims, id)
			}
		}
	}
	slices.Sort(victims)
	for _, id := range victims {
		c := &e.clients[id]
		c.awayUntil = e.now + int64(s.Away)
		e.endStream(id, c, clients.Input{Kind: clients.InStreamEnd})
	}
}

// recordProbe notes the live local sessions that match, to check what each
// one's next session request gets (a hard stop, a scale).
func (e *engine) recordProbe(why string, match func(*client) bool) {
	if !e.hasSessions || e.shared {
		return
	}
	hs := Probe{Why: why, At: time.Duration(e.now), waiting: map[int32]bool{}}
	for id := range e.clients {
		c := &e.clients[id]
		if c.sessOK && c.brain.HasSession() && match(c) {
			hs.waiting[int32(id)] = true
			hs.keys = append(hs.keys, c.sess)
			hs.ids = append(hs.ids, int32(id))
		}
	}
	hs.Sessions = len(hs.waiting)
	e.audit.Probes = append(e.audit.Probes, hs)
}

// noteProbe records the first session request of each waiting session.
func (e *engine) noteProbe(id int32, carried bool, key uint64, status int) {
	for i := range e.audit.Probes {
		hs := &e.audit.Probes[i]
		if !hs.waiting[id] {
			continue
		}
		k := hs.keys[slices.Index(hs.ids, id)]
		switch {
		case carried && key == k:
			hs.First = append(hs.First, status)
			delete(hs.waiting, id)
		case e.clients[id].sess != k || !e.clients[id].brain.HasSession():
			hs.Dropped++ // the client let the session go without using it again
			delete(hs.waiting, id)
		}
	}
}

// sample closes series step i: gauges and store size.
func (e *engine) sample(i int) {
	e.series.ActiveStreams[i] = e.open
	var bytes int64
	switch e.events {
	case topology.EventsMemory:
		for p := range e.procs {
			if e.procs[p].state != procDead {
				e.memSettle(int32(p))
				bytes += e.procs[p].store.held
			}
		}
	case topology.EventsRedis:
		// Ended streams are summed incrementally and leave the sum when
		// they expire, in the order they ended; running ones are counted.
		if ttl := int64(e.d.Store.RedisTTL); ttl > 0 {
			for e.redisHead < len(e.redisEnded) {
				a := &e.attempts[e.redisEnded[e.redisHead]]
				if a.end+ttl > e.now {
					break
				}
				e.redisFixed -= a.fixedB
				a.fixedB, a.gone = 0, true
				e.redisHead++
			}
			if e.redisHead > 4096 && e.redisHead*2 > len(e.redisEnded) {
				e.redisEnded = append(e.redisEnded[:0], e.redisEnded[e.redisHead:]...)
				e.redisHead = 0
			}
		}
		bytes = e.redisFixed
		first := e.first()
		maxlen := int64(e.d.Store.RedisMaxLen)
		for p := range e.procs {
			pr := &e.procs[p]
			for i, st := range pr.runStart {
				hi := min((e.now-st)/e.iv, int64(pr.runE[i]))
				lo := int64(max(first, pr.runLo[i]))
				if maxlen > 0 && hi-lo+1 > maxlen {
					lo = hi - maxlen + 1
				}
				bytes += e.streamBytes(lo, hi, int64(pr.runE[i]))
			}
		}
	}
	e.series.StoreBytes[i] = bytes
}

// streamBytes is what a Redis stream holding indices lo to hi of a call of
// last index final takes: index 0 is the priming event, final the result.
func (e *engine) streamBytes(lo, hi, final int64) int64 {
	if hi < lo {
		return 0
	}
	priming, result := lo == 0, hi == final
	n := hi - lo + 1
	if priming {
		n--
	}
	if result {
		n--
	}
	return e.redisCost.Stream(n, priming, result)
}

// first is the index of a stream's first stored event: 0, the priming
// event, when there is one.
func (e *engine) first() int32 {
	if e.priming {
		return 0
	}
	return 1
}

// finish closes the run at the horizon: what is still open is pending.
func (e *engine) finish() {
	for id := range e.clients {
		c := &e.clients[id]
		if !c.call.active {
			continue
		}
		e.settle(c)
		cl := &c.call
		e.t.CallsPending++
		e.t.EventsPending += int64(cl.e - cl.hw)
		if cl.dropped {
			e.audit.DroppedCalls++
			e.audit.DroppedPending++
		}
		if cl.waitResume {
			e.audit.DropsWithIDPending++
		}
		if cl.unprodMark < cl.e {
			maxP := cl.maxProduced
			if cl.attempt >= 0 {
				maxP = max(maxP, e.produced(&e.attempts[cl.attempt], e.now), e.chainMax(e.attempts[cl.attempt].prev))
			}
			e.audit.UnproducedRecovered += int64(maxP - cl.unprodMark)
			e.audit.UnproducedPending += int64(cl.e - maxP)
		}
	}
	for ai := range e.attempts {
		a := &e.attempts[ai]
		if !a.ended {
			a.endN = e.produced(a, e.now)
			e.appendOps(a)
			// An attempt still running re-did what earlier ones had
			// produced as much as one that ended (endAttempt).
			if earlier := max(a.prevMax, e.chainMax(a.prev)); earlier > 0 {
				e.t.EventsRedone += int64(min(a.endN, earlier))
			}
		}
	}
	var run int64
	for i := range e.series.StoreOps {
		run += e.opsDiff[i]
		e.series.StoreOps[i] += run
	}
	if e.t.SessionRequests > 0 {
		e.t.Rate404 = float64(e.t.HTTP404) / float64(e.t.SessionRequests)
	}
	for i := range e.series.StoreBytes {
		e.t.StorePeakBytes = max(e.t.StorePeakBytes, e.series.StoreBytes[i])
		e.t.StorePeakOpsPerS = max(e.t.StorePeakOpsPerS, float64(e.series.StoreOps[i])/e.series.StepS)
	}
}

// armTimeout queues the call's timeout, once.
func (e *engine) armTimeout(id int32, c *client) {
	if c.call.active && !c.call.armed {
		c.call.armed = true
		e.schedule(max(c.call.start+int64(e.d.Client.CallTimeout), e.now), evCallTimeout, id, c.ctok)
	}
}

// reached is the last event of a that has reached the client on its
// connection by now. A follower on another replica reads the stream from
// Redis, so it never gets past an event whose append failed in an outage.
func (e *engine) reached(c *client, a *attempt) int32 {
	upto := e.produced(a, e.now)
	if k := &c.conn; k.kind == connResume && k.proc != a.proc && e.events == topology.EventsRedis {
		for _, g := range e.gaps {
			if g.from > e.now {
				continue
			}
			// The first event produced at or after the gap began is missing.
			last := int32((g.from - 1 - a.start) / a.iv)
			if g.from <= a.start {
				last = -1
			}
			if last >= k.base && last < upto && e.prodTime(a, last+1) < g.until {
				upto = max(last, k.base)
			}
		}
	}
	return upto
}

// chainMax is the highest index any attempt from ai back through its
// predecessors has produced by now.
func (e *engine) chainMax(ai int32) int32 {
	var m int32
	for ; ai >= 0; ai = e.attempts[ai].prev {
		m = max(m, e.produced(&e.attempts[ai], e.now))
	}
	return m
}
