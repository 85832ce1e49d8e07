package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/scenario"
)

// listenScenario is one replica at 2026-07-28 under the notification
// workload, a hard restart at 30 s of the given downtime, and clients
// whose backoff is a constant base with no jitter, so that the time each
// listen stream is down follows from the fault schedule alone.
func listenScenario(t *testing.T, downtime time.Duration, rate float64) *scenario.Scenario {
	t.Helper()
	src := fmt.Sprintf(`[design.rev]
mode = "stateless"
sessions = "none"
events = "none"
era = "2026-07-28"
[design.rev.client]
strategy = "constant"
jitter = "none"
base = "1s"
max_retries = 100
[scenario.l]
designs = ["rev"]
replicas = 1
duration = "60s"
drain = "5s"
step = "1s"
rtt = "20ms"
[scenario.l.workload]
clients = 200
arrival_rate = 100
notification_rate = %v
[[scenario.l.faults]]
kind = "restart"
replica = 0
at = "30s"
downtime = "%v"
graceful = false
`, rate, downtime)
	f, err := scenario.Parse("listen.toml", []byte(src), &scenario.Options{Target: "l"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario("l")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestListenLossFollowsDowntime: a hard restart drops every listen stream
// at once, and at 2026-07-28 the notifications due while a stream is down
// are lost. The expected loss is computed here from the fault schedule,
// the backoff and the rate, apart from the engine: each client retries
// every base + rtt (a refused request is answered one rtt after it is
// sent), so its stream is down for δ, the first multiple of base + rtt at
// or past the downtime, and it misses floor(δ·rate) or ceil(δ·rate)
// notifications, as its schedule falls. Twice the downtime loses about
// twice as many.
func TestListenLossFollowsDowntime(t *testing.T) {
	t.Parallel()
	const base, rtt, rate, clients = time.Second, 20 * time.Millisecond, 4.0, 200
	var lost []float64
	for _, down := range []time.Duration{5 * time.Second, 10 * time.Second} {
		sc := listenScenario(t, down, rate)
		d := sc.Designs[0]
		out := run(t, sc)
		l := out.Report.Designs[0].Listen
		if l == nil {
			t.Fatalf("downtime %v: no listen block", down)
		}
		step := base + rtt
		delta := time.Duration(math.Ceil(float64(down)/float64(step))) * step
		lo, hi := math.Floor(delta.Seconds()*rate)*clients, math.Ceil(delta.Seconds()*rate)*clients
		if float64(l.Lost) < lo || float64(l.Lost) > hi {
			t.Errorf("downtime %v (%s): lost %d, want %v..%v (200 streams down %v each at %v/s)", down, d.Name, l.Lost, lo, hi, delta, rate)
		}
		if l.Drops != clients || l.Reopened != clients {
			t.Errorf("downtime %v: drops %d, reopened %d, want %d each", down, l.Drops, l.Reopened, clients)
		}
		if wantReopens := int64(clients) * int64(delta/step); l.Reopens != wantReopens {
			t.Errorf("downtime %v: %d re-open requests, want %d (%d tries each)", down, l.Reopens, wantReopens, delta/step)
		}
		if l.Sent != l.Received+l.Lost || l.Received == 0 {
			t.Errorf("downtime %v: sent %d, received %d, lost %d", down, l.Sent, l.Received, l.Lost)
		}
		t.Logf("downtime %v: %+v", down, *l)
		lost = append(lost, float64(l.Lost))
	}
	if r := lost[1] / lost[0]; r < 1.8 || r > 2.2 {
		t.Errorf("twice the downtime lost %.2f× as many notifications, want about 2×", r)
	}
}

// TestListenOffKeepsReport: without the workload no design has a listen
// block, and a 2025 design under it has none either, with a note that its
// channel is not modelled.
func TestListenOffKeepsReport(t *testing.T) {
	t.Parallel()
	sc := listenScenario(t, 5*time.Second, 0)
	if l := run(t, sc).Report.Designs[0].Listen; l != nil {
		t.Fatalf("notification_rate 0: listen block %+v", l)
	}
	sc = listenScenario(t, 5*time.Second, 4)
	sc.Designs[0].Era = "2025-11-25"
	d := run(t, sc).Report.Designs[0]
	if d.Listen != nil || len(d.Notes) == 0 {
		t.Fatalf("2025-11-25: listen %+v, notes %v", d.Listen, d.Notes)
	}
}

// TestListenReopenNone: under listen_reopen = "none" (the go-sdk profile's)
// the hard restart's drop ends every client's listening: 200 drops, no
// re-open, and every notification due from the drop to the end of the run
// (30 s at 4/s for each client) is lost.
func TestListenReopenNone(t *testing.T) {
	t.Parallel()
	const rate, clients, after = 4.0, 200, 30.0 // after: seconds from the drop to the end
	sc := listenScenario(t, 5*time.Second, rate)
	sc.Designs[0].Client.ListenReopen = "none"
	l := run(t, sc).Report.Designs[0].Listen
	if l == nil {
		t.Fatal("no listen block")
	}
	lo, hi := int64((after*rate-1)*clients), int64((after*rate+1)*clients)
	if l.Opens != clients || l.Reopens != 0 || l.Reopened != 0 || l.Drops != clients || l.Lost < lo || l.Lost > hi {
		t.Errorf("listen %+v; want %d opens and drops, no re-open, and %d..%d lost", *l, clients, lo, hi)
	}
}
