package sim

import (
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// closedScenario is reqScenario with n closed-loop clients joining at rate
// a second, a fixed think time and a handshake.
func closedScenario(n int, rate float64, dur time.Duration, think, svc, hs, timeout time.Duration, retries int) *scenario.Scenario {
	sc := reqScenario(rate, dur, 1, svc, timeout, retries)
	sc.Workload.Arrivals, sc.Workload.Clients = scenario.ArrivalsClosed, n
	sc.Workload.Think, sc.Workload.ThinkDist = think, "fixed"
	sc.Designs[0].Replica.HandshakeTime = hs
	return sc
}

// Counts worked out by hand: two clients joining at 0 s and 1 s on one
// worker, a 200 ms handshake, 100 ms requests and 1 s of thinking: each
// client handshakes once and then sends a request every 1.1 s, client 0
// from 0 s to 9 s (9 requests), client 1 from 1 s to 8.9 s (8), and the
// next would start at or after duration.
func TestRequestsClosedByHand(t *testing.T) {
	t.Parallel()
	sc := closedScenario(2, 1, 10*time.Second, time.Second, 100*time.Millisecond, 200*time.Millisecond, 0, 0)
	got := *reqRow(t, sc).Requests
	want := report.RequestTotals{Requests: 17, Attempts: 19, Completed: 17, Handshakes: 2, Connects: 2, ServiceS: 2.1}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// A closed-loop client keeps one request outstanding: against a server
// that answers nothing, each of 10 clients sends an attempt every timeout
// (1 s) + backoff (1 s, no jitter) and no new request meanwhile, 10
// attempts each in 20 s; open-loop arrivals at the same rate would have
// brought 200 requests.
func TestRequestsClosedBackoffSendsNothing(t *testing.T) {
	t.Parallel()
	sc := closedScenario(10, 10, 20*time.Second, time.Second, 100*time.Millisecond, 0, time.Second, 100)
	sc.Faults = []faults.Fault{&faults.Outage{Kind_: "outage", At: 0, Duration: 20 * time.Second}}
	c := &sc.Designs[0].Client
	c.RequestBackoff, c.Strategy, c.Jitter, c.Base = clients.RequestBackoffProfile, clients.StrategyConstant, clients.JitterNone, time.Second
	got := *reqRow(t, sc).Requests
	want := report.RequestTotals{Requests: 10, Attempts: 100, Retries: 90, Pending: 10, Timeouts: 100}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// The reconnect trigger: every client handshakes again at the same
// instant, the attempts the restart took out of the queue are counted,
// and the logical requests still add up.
func TestRequestsClosedReconnect(t *testing.T) {
	t.Parallel()
	// 50 clients thinking 1 s on one worker of 10 ms requests and 100 ms
	// handshakes: at 10 s, 50 handshakes queue behind each other for 5 s.
	sc := closedScenario(50, 50, 20*time.Second, time.Second, 10*time.Millisecond, 100*time.Millisecond, 0, 0)
	sc.Faults = []faults.Fault{&faults.Reconnect{Kind_: "reconnect", At: 10 * time.Second}}
	got := *reqRow(t, sc).Requests
	if got.Handshakes != 100 || got.Connects != 100 {
		t.Errorf("handshakes %d, connects %d: want 100 each (50 joining, 50 after the drop)", got.Handshakes, got.Connects)
	}
	if got.Requests != got.Completed+got.Failed+got.Pending {
		t.Errorf("requests %d != completed %d + failed %d + pending %d", got.Requests, got.Completed, got.Failed, got.Pending)
	}
	// With a 1 s timeout and immediate retries the same drop tips: the
	// queue holds handshakes for clients that left.
	c := &sc.Designs[0].Client
	c.RequestTimeout, c.RequestRetries, c.RequestBackoff = time.Second, 100, clients.RequestBackoffImmediate
	tipped := *reqRow(t, sc).Requests
	if tipped.Connects >= 100 || tipped.WastedFraction() < 0.5 {
		t.Errorf("1 s timeout: connects %d, wasted fraction %.2f: want fewer than 100 and most work wasted", tipped.Connects, tipped.WastedFraction())
	}
}
