package sim

import (
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
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
	pin      int32 // the LB's pin of the session, slot + 1 (topology.Request.Pin)
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
	running []runEntry // the attempts running here
	conns   []int32    // clients with a connection here
	store   memStore   // this process's in-memory event store

	adm     protocol.Admission // admission windows, connection-rate bucket, accept queue
	exitTok uint32
}

// runEntry is a running attempt in its process's list, with the start and
// length the per-step store sums read, so that they scan one small array
// instead of attempts. One entry per attempt, and not one array per field:
// an attempt's end swaps the last entry into its place, and at a million
// clients each array's entry was a cache miss of its own (four per end).
type runEntry struct {
	start int64
	ai    int32
	e     int32
	lo    int32 // first index still in Redis (after a store restart)
}

// engine runs one design.
type engine struct {
	sc *scenario.Scenario
	d  *scenario.Design
	cc clients.Config // the design's client profile as its brains follow it: the era's lifecycle set
	// cancelled counts the attempts a closed response stream cancelled
	// (caps.CancelOnClose).
	cancelled report.Cancelled
	ls        *listenState // the listen streams (listen.go); nil when nobody listens
	rng       *rand.Rand
	lb        topology.Policy
	q         queue
	huge      [][]byte // the ranges advised huge pages (adviseHuge), taken back at the end
	now       int64

	caps protocol.Caps // what the design's replicas do (era and axes)
	// mutate, when set, rewrites protocol's answer before the engine
	// carries it out: the differential test changes one rule of this
	// engine with it and requires that the live replica then disagrees.
	// Nil in every run.
	mutate                                            func(clients.Req, protocol.Answer) protocol.Answer
	fx                                                facts // the facts of the request being served (serveOn)
	hasSessions, shared, priming, pollClose, noResume bool
	events                                            string
	evBytes                                           int64
	redisCost                                         topology.RedisStreamCost
	redisMemo                                         [4][]int64 // redisCost.Stream, tabulated (redisStreamMemo)
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

	phSorted []phaseEntry // memInstant's entries by attempt
	phKeys   []uint64     // and their sort keys

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
	CPU              time.Duration // CPU time of the loop's thread, with Options.cpuClock; 0 otherwise
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
	// its memory store is sized for its share of the clients, all streaming
	expect := e.sc.Workload.Clients / max(e.sc.Replicas, 1)
	// and its running and connection lists too: grown by doubling, each
	// was copied anew, onto fresh pages, every time it filled (room never
	// used costs no resident memory when the pages are fresh, and none
	// beyond what was resident when they are reused)
	e.procs = append(e.procs, proc{slot: slot, state: procUp, store: memStore{expect: expect},
		running: make([]runEntry, 0, expect), conns: make([]int32, 0, expect)})
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
	e.huge = [][]byte{adviseHuge(e.clients), adviseHuge(e.attempts)}
	e.q = newQueue(e.horizon)
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
		e.prefetchNext()
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

// prefetchNext starts loading the state the next two events in the queue
// will touch while this one is handled: a client is 6 cache lines among a
// run's hundreds of thousands, and the load of the first of them missed the
// caches in most events (make bench's profile). The next event is the
// heap's root and the one after it the least of the root's children,
// unless this event schedules an earlier one. For an attempt's last event,
// the attempt is fetched two events ahead and its client one ahead, when
// the attempt has arrived. Nothing a run computes depends on any of it.
func (e *engine) prefetchNext() {
	h := e.q.h
	if len(h) == 0 {
		return
	}
	e.prefetchEvent(&h[0], true)
	if len(h) > 1 {
		m := 1
		for i := 2; i <= 4 && i < len(h); i++ {
			if h[i].less(&h[m]) {
				m = i
			}
		}
		e.prefetchEvent(&h[m], false)
	}
}

// prefetchEvent prefetches what ev touches first; with near, an attempt's
// client too (a load of the attempt, prefetched one event earlier).
func (e *engine) prefetchEvent(ev *event, near bool) {
	switch ev.kind {
	case evResponse, evTimer, evThink, evCallTimeout, evDropTick, evStreamEnd, evStoreDrop:
		if uint(ev.id) >= uint(len(e.clients)) {
			return
		}
		c := &e.clients[ev.id]
		if !near {
			prefetchLines(unsafe.Pointer(c), clientLines)
			return
		}
		e.prefetchConn(&c.conn)
	case evAttemptDone:
		if uint(ev.id) >= uint(len(e.attempts)) {
			return
		}
		if !near {
			prefetchLines(unsafe.Pointer(&e.attempts[ev.id]), attemptLines)
			return
		}
		a := &e.attempts[ev.id]
		if c := a.client; uint(c) < uint(len(e.clients)) {
			prefetchLines(unsafe.Pointer(&e.clients[c]), clientLines)
		}
		if a.ended || uint(a.proc) >= uint(len(e.procs)) {
			return
		}
		pr := &e.procs[a.proc]
		if i := a.runIdx; uint(i) < uint(len(pr.running)) {
			prefetchLines(unsafe.Pointer(&pr.running[i]), 1)
		}
		pr.store.prefetchEnd(a.memIdx, a.start, e.iv)
	}
}

// prefetchConn prefetches the attempt a client's connection follows and its
// entry in its process's connection list, which ending the connection
// touches, with the client (a load of it, prefetched one event earlier).
func (e *engine) prefetchConn(k *conn) {
	if k.kind == connNone {
		return
	}
	if a := k.attempt; uint(a) < uint(len(e.attempts)) {
		prefetchLines(unsafe.Pointer(&e.attempts[a]), attemptLines)
	}
	if p := k.proc; uint(p) < uint(len(e.procs)) {
		if cs := e.procs[p].conns; uint(k.slot) < uint(len(cs)) {
			prefetchLines(unsafe.Pointer(&cs[k.slot]), 1)
		}
	}
}

// The cache lines a client and an attempt span (at most one more when one
// does not start on a line).
const (
	clientLines  = (int(unsafe.Sizeof(client{})) + 63) / 64
	attemptLines = (int(unsafe.Sizeof(attempt{})) + 63) / 64
)

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
					e.or.drop(ev.id, e.now, e.or.conn[ev.id].req, history.DropTimeout)
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
	case evListen:
		e.listenEvent(ev)
	}
}
