package protocol

import (
	"math"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/topology"
)

// Hint is a retry hint as a server sends it: base times a factor drawn from
// spread [lo, hi] (GitLab's 1–3× fix), or base times lo when hi ≤ lo. rnd
// returns a float in [0, 1); it is called only when the spread is a range.
// The loader refuses a spread of [0, 0], which would hint 0.
func Hint(base time.Duration, spread [2]float64, rnd func() float64) time.Duration {
	if spread[1] <= spread[0] {
		return time.Duration(float64(base) * spread[0])
	}
	return time.Duration(float64(base) * (spread[0] + rnd()*(spread[1]-spread[0])))
}

// RetryAfter is a 503's hint as the wire carries it: Retry-After holds
// whole seconds (RFC 9110 §10.2.3), so a hint is rounded up to the next
// second, never down to 0. Both engines take the rounded hint: a client
// told "0.3 s" in the simulator while the replica's header says "1" would
// return at the window's first instant in one engine and spread over it
// in the other (herd-admission's accept queue overflowed only in the
// simulator).
func RetryAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Second - 1) / time.Second * time.Second
}

// NewConn reports whether a request opens a new connection or session:
// the requests admission control and the connection-rate limit count.
func NewConn(r clients.Req) bool {
	return r == clients.ReqInitialize || r == clients.ReqDiscover || r == clients.ReqCall || r == clients.ReqResume || r == clients.ReqStandalone || r == clients.ReqListen
}

// Admission is one replica's admission state: the connection-rate bucket,
// the admission windows and the accept queue. The zero value is a replica
// that has admitted nothing yet. It is not safe for concurrent use.
type Admission struct {
	tokens      float64 // connection-rate bucket
	tokensAt    int64
	admitWin    int64 // the admission window being counted
	admitCount  int
	promisedWin int64 // the next window rejected clients were sent to
	promised    int
	freeAt      int64 // when the accept queue drains
	budget      retryBudget
}

// Admit applies the connection-rate limit and the admission bucket of rc
// to a request of kind r arriving now (nanoseconds since the run's start,
// so that every replica's windows are now / admit_interval). A refused
// request gets a 503 with the time to come back in, when there is one;
// rnd jitters that hint by the spread.
func (s *Admission) Admit(rc *topology.ReplicaConfig, now int64, r clients.Req, rnd func() float64) Answer {
	if !NewConn(r) {
		return Answer{Status: 200}
	}
	if rc.MaxConnRate > 0 {
		s.tokens = math.Min(rc.MaxConnRate, s.tokens+float64(now-s.tokensAt)/1e9*rc.MaxConnRate)
		s.tokensAt = now
		if s.tokens < 1 {
			refused := Answer{Status: 503, Why: "connection rate limit"}
			if rc.HintOn503 {
				refused.RetryHint = RetryAfter(Hint(rc.RetryHint, rc.RetryHintSpread, rnd))
			}
			return refused
		}
		s.tokens--
	}
	if rc.AdmitBucket > 0 {
		iv := int64(rc.AdmitInterval)
		win := now / iv
		if win != s.admitWin {
			s.admitWin, s.admitCount = win, 0
		}
		if s.admitCount >= rc.AdmitBucket {
			// Send it to the first later window with room left, as Zed does.
			if s.promisedWin <= win {
				s.promisedWin, s.promised = win+1, 0
			}
			if s.promised >= rc.AdmitBucket {
				s.promisedWin, s.promised = s.promisedWin+1, 0
			}
			s.promised++
			return Answer{Status: 503, RetryHint: RetryAfter(time.Duration(s.promisedWin*iv - now)), Why: "admission window full"}
		}
		s.admitCount++
	}
	return Answer{Status: 200}
}

// Enqueue puts an admitted request in the accept queue of a replica that
// serves rc.AcceptRate requests a second: it returns how long the request
// waits before the handler takes it, or a 503 when the queue is full.
func (s *Admission) Enqueue(rc *topology.ReplicaConfig, now int64, rnd func() float64) (time.Duration, Answer) {
	rate := rc.AcceptRate
	if rate <= 0 {
		return 0, Answer{Status: 200}
	}
	wait := max(s.freeAt-now, 0)
	if float64(wait)*rate/1e9 >= float64(rc.AcceptQueue) {
		full := Answer{Status: 503, Why: "accept queue full"}
		if rc.HintOn503 {
			full.RetryHint = RetryAfter(Hint(rc.RetryHint, rc.RetryHintSpread, rnd))
		}
		return 0, full
	}
	s.freeAt = max(s.freeAt, now) + int64(1e9/rate)
	return time.Duration(wait), Answer{Status: 200}
}

// AdmissionKeys are the replica keys only stormsim's own replica carries
// out; the loader refuses them for servers it does not write.
var AdmissionKeys = []string{"accept_rate", "accept_queue", "hint_on_503", "admit_bucket", "admit_interval", "max_conn_rate"}

// AlignStart is when a run that is ready at ready starts, so that its
// admission windows line up with the replicas': the first boundary of
// admit_interval on the Unix clock at or after ready, which is where a
// replica's windows (Unix time / admit_interval) begin, as the
// simulator's begin at its time 0. Without an admission bucket it is ready.
func AlignStart(ready time.Time, rc *topology.ReplicaConfig) time.Time {
	iv := int64(rc.AdmitInterval)
	if rc.AdmitBucket <= 0 || iv <= 0 {
		return ready
	}
	ns := ready.UnixNano()
	return time.Unix(0, (ns+iv-1)/iv*iv)
}
