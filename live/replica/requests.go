package replica

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// The open-loop request workload's server (workload.kind = "requests"):
// one server of replica.workers that serves single requests in arrival
// order from its request queue. A worker is a slot held for the request's
// service time by a timer, never by a busy loop, so that a 2-core machine
// can stand for a slow server without saturating itself. A request whose
// client has left (its connection closed) stays queued and still holds a
// worker for its service when one reaches it: wasted work, unless the
// design sheds it. Every decision is protocol's: AdmitRequest (retry
// budget, admission bucket, queue bound), Shed (by age), ServiceTime and
// Workers; this file only carries them out over net/http.

// AttemptHeader carries an attempt's number (0 for the first) on a request
// of the request workload: the retry budget counts retries apart.
const AttemptHeader = "X-Stormsim-Attempt"

// WhyHeader carries a refusal's protocol.Answer.Why, so that a client
// tells the retry budget's 503 (give up) from the others (retry).
const WhyHeader = "X-Stormsim-Why"

// RequestOptions configure a RequestServer.
type RequestOptions struct {
	// Replica is the design's replica: workers, service_time,
	// service_dist, request_queue, shed_after, retry_budget, admission.
	Replica topology.ReplicaConfig
	// RNG draws the service times and the hints' spread.
	RNG *rand.Rand
	// Now is the time, in nanoseconds since the run's start: the clock of
	// the admission windows, the retry budget and the queue's ages.
	Now func() int64
	// Late, if set, is told how late each service's timer fired, in
	// nanoseconds: the host's lateness, which says whether the machine
	// kept up with the workers it stands for.
	Late func(ns int64)
}

// RequestCounts are what a RequestServer did, for the run's report and
// its reconciliation with the clients' records.
type RequestCounts struct {
	Queued           int64 `json:"queued"`            // attempts admitted to the queue
	Served           int64 `json:"served"`            // attempts served while their client waited
	Wasted           int64 `json:"wasted"`            // attempts served after their client left
	Shed             int64 `json:"shed"`              // attempts dropped unserved for their age
	Left             int64 `json:"left"`              // attempts still queued or being served at the end
	RefusedQueue     int64 `json:"refused_queue"`     // refused: the request queue was full
	RefusedAdmission int64 `json:"refused_admission"` // refused: admission bucket or connection rate
	RefusedBudget    int64 `json:"refused_budget"`    // refused: retries over the retry budget
	// ServiceNS is the workers' time spent serving, WastedNS the part of
	// it spent on attempts whose client had left.
	ServiceNS int64 `json:"service_ns"`
	WastedNS  int64 `json:"wasted_ns"`
}

// RequestServer is the request workload's server, an http.Handler. Its
// options are fixed at creation; mu guards the rest.
type RequestServer struct {
	rc   topology.ReplicaConfig
	now  func() int64
	late func(ns int64)

	mu      sync.Mutex
	rng     *rand.Rand
	adm     protocol.Admission
	queue   []*attempt
	busy    int     // workers serving
	workers int     // workers allowed to serve (a capacity cut, an outage)
	svcF    float64 // the slowdown's factor in force
	closed  bool
	c       RequestCounts
}

// attempt is one queued attempt. gone and answered are guarded by the
// server's mu.
type attempt struct {
	queued   int64
	gone     bool                 // its client left: the handler returned
	answered bool                 // served or shed while its client waited
	ready    chan protocol.Answer // served, or shed
	svc      time.Duration        // its service time, once a worker took it
	due      int64                // when its service ends, on the run's clock
}

// NewRequestServer is a server of o.Replica.Workers workers, all serving.
func NewRequestServer(o *RequestOptions) *RequestServer {
	return &RequestServer{rc: o.Replica, now: o.Now, late: o.Late, rng: o.RNG, workers: o.Replica.Workers, svcF: 1}
}

// ServeHTTP answers one attempt: a refusal at once, or, once admitted to
// the queue, 200 when a worker has served it, or 503 when it was shed. If
// the client leaves first, the attempt stays queued and is served
// all the same (wasted work) unless it is shed.
func (s *RequestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.Header.Get(AttemptHeader))
	a, refused := s.admit(n > 0)
	if a == nil {
		refuse(w, refused)
		return
	}
	select {
	case ans := <-a.ready:
		if ans.Status != 200 {
			refuse(w, ans)
			return
		}
		w.WriteHeader(ans.Status)
	case <-r.Context().Done():
		s.mu.Lock()
		a.gone = !a.answered
		s.mu.Unlock()
	}
}

// refuse writes a refusal: its status, its Why (WhyHeader and the body)
// and its hint as Retry-After, in whole seconds.
func refuse(w http.ResponseWriter, a protocol.Answer) {
	if a.RetryHint > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(a.RetryHint/time.Second), 10))
	}
	w.Header().Set(WhyHeader, a.Why)
	http.Error(w, a.Why, a.Status)
}

// admit puts an attempt in the queue, or answers why not.
func (s *RequestServer) admit(retry bool) (*attempt, protocol.Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	// Every open-loop request opens a connection: the admission bucket and
	// the connection rate count it.
	ans := s.adm.AdmitRequest(&s.rc, now, retry, true, len(s.queue), s.rng.Float64)
	if ans.Status != 200 {
		switch ans.Why {
		case protocol.WhyBudget:
			s.c.RefusedBudget++
		case protocol.WhyQueueFull:
			s.c.RefusedQueue++
		default:
			s.c.RefusedAdmission++
		}
		return nil, ans
	}
	a := &attempt{queued: now, ready: make(chan protocol.Answer, 1)}
	s.c.Queued++
	s.queue = append(s.queue, a)
	s.dispatch()
	return a, protocol.Answer{}
}

// dispatch gives queued attempts to free workers, shedding stale ones.
// s.mu is held.
func (s *RequestServer) dispatch() {
	for !s.closed && s.busy < s.workers && len(s.queue) > 0 {
		a := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if protocol.Shed(&s.rc, s.now(), a.queued) {
			s.c.Shed++
			if !a.gone {
				a.answered = true
				a.ready <- protocol.ShedAnswer()
			}
			continue
		}
		a.svc = protocol.ServiceTime(&s.rc, false, s.svcF, s.rng)
		a.due = s.now() + int64(a.svc)
		s.busy++
		time.AfterFunc(a.svc, func() { s.done(a) })
	}
}

// done frees the worker that served a: useful work if its client still
// waits, wasted if it left.
func (s *RequestServer) done(a *attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.late != nil {
		s.late(s.now() - a.due)
	}
	s.busy--
	s.c.ServiceNS += int64(a.svc)
	if a.gone {
		s.c.Wasted++
		s.c.WastedNS += int64(a.svc)
	} else {
		s.c.Served++
		a.answered = true
		a.ready <- protocol.ServedAnswer()
	}
	s.dispatch()
}

// Apply carries out a trigger's step on the server: a capacity cut or an
// outage (the workers that serve), a slowdown (the service times started
// from now). A load spike is the clients' and is ignored here; so is any
// other kind. It reports whether the step was the server's.
func (s *RequestServer) Apply(st faults.Step) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st.Kind {
	case faults.StepServiceFactor:
		s.svcF = st.Fraction
	case faults.StepWorkersFactor:
		s.workers = protocol.Workers(&s.rc, st.Fraction)
	default:
		return false
	}
	s.dispatch()
	return true
}

// Close stops serving: the attempts queued or being served are left (and
// counted as Left), their timers stopped. It returns the counts.
func (s *RequestServer) Close() RequestCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.c.Left = int64(len(s.queue) + s.busy)
		s.queue = nil
	}
	return s.c
}

// Counts are the counts so far.
func (s *RequestServer) Counts() RequestCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}
