package plan

import (
	"fmt"
	"math"
	"testing"
)

// Acceptance 2: the store sizes a plan reports are what the simulated store
// held (Totals.StorePeakBytes), and they behave as the model says in two
// regimes.
func TestStoreRegimes(t *testing.T) {
	t.Parallel()

	// No cap: Redis keeps every event until its stream has been idle for
	// redis_ttl. With fixed 10-event calls, no think time, no round-trip
	// delay and no drops, every client streams without a pause, so the store
	// holds about clients × event_rate × (redis_ttl + call/2) events (the
	// running call holds half of one on average). Arrivals are spread over
	// several calls' length so that the phases of the clients' calls are
	// too, and the run lasts past ramp-up + TTL, so the peak is the steady
	// state. Between any two grid points the peak must then scale as
	// clients × event_rate × redis_ttl, within 5% (the call/2 term is at most
	// 1 s of 40 s here).
	t.Run("uncapped", func(t *testing.T) {
		t.Parallel()
		res := runGrid(t, 0, []string{
			`designs=["redis-events"]`, "duration=120s", "rtt=0s", "workload.arrival_rate=50",
			"workload.think=0s", "workload.think_dist=fixed", "workload.events_min=10", "workload.events_max=10",
			"workload.events_dist=fixed", "workload.drop_every=0s", "store.concurrency=0", "store.redis_maxlen=0",
		}, "workload.clients=200,400", "workload.event_rate=5,10", "store.redis_ttl=40s,80s")
		if len(res.Rows) != 8 {
			t.Fatalf("%d rows, want 8", len(res.Rows))
		}
		base := &res.Rows[0]
		bp := res.Grid.Points[base.Point].Values
		product := func(v []float64) float64 { return v[0] * v[1] * v[2] }
		for i := range res.Rows {
			r := &res.Rows[i]
			v := res.Grid.Points[r.Point].Values
			peak := r.Report.Totals.StorePeakBytes
			if peak <= 0 {
				t.Fatalf("%v: the store held nothing", v)
			}
			if r.Report.Totals.EventsLost != 0 || r.Report.Totals.LostByCause.Purged != 0 {
				t.Errorf("%v: %d events lost with no cap and no drops", v, r.Report.Totals.EventsLost)
			}
			got := float64(peak) / float64(base.Report.Totals.StorePeakBytes)
			want := product(v) / product(bp)
			if math.Abs(got/want-1) > 0.05 {
				t.Errorf("clients, event_rate, ttl %v: peak %d bytes is %.4f× the peak at %v; clients × event_rate × ttl says %.4f× (off by %.1f%%, want ≤ 5%%)",
					v, peak, got, bp, want, 100*(got/want-1))
			}
		}
	})

	// A cap that binds: the in-memory store of each replica is capped at
	// 1 MiB and keeps every event of a stream until the cap purges it
	// (go-sdk drops the oldest event of every stream in turn). The smallest
	// loads fit under the cap and grow with the clients; from 40 clients on
	// the store is full, its peak stays at the cap × 3 replicas however many
	// clients come, and clients that drop (every 10 s on average) and fail
	// on a 400 find their events purged: loss with cause purged appears and
	// grows with the load.
	t.Run("capped", func(t *testing.T) {
		t.Parallel()
		const capBytes, replicas = 1 << 20, 3
		res := runGrid(t, 0, []string{
			`designs=["memory-sticky"]`, "client.on_error=fail", fmt.Sprintf("store.memory_cap_bytes=%d", capBytes),
		}, "workload.clients=10..640@7")
		loads := res.Grid.Axes[0].Values
		peak := func(i int) int64 { return res.Rows[i].Report.Totals.StorePeakBytes }
		purged := func(i int) int64 { return res.Rows[i].Report.Totals.LostByCause.Purged }
		limit := int64(capBytes * replicas)
		// Under the cap: linear growth, nothing purged.
		if peak(0) >= limit || peak(1) >= limit {
			t.Fatalf("the two smallest loads are not under the cap: %d, %d bytes (cap × replicas %d)", peak(0), peak(1), limit)
		}
		if g := float64(peak(1)) / float64(peak(0)); math.Abs(g/(loads[1]/loads[0])-1) > 0.05 {
			t.Errorf("under the cap, %g → %g clients grew the peak %.3f×, want %.1f× within 5%%", loads[0], loads[1], g, loads[1]/loads[0])
		}
		for i := range 2 {
			if purged(i) != 0 {
				t.Errorf("%g clients, under the cap: %d events lost to purges", loads[i], purged(i))
			}
		}
		// Over the cap: flat at the cap, and purged loss that grows.
		for i := 2; i < len(loads); i++ {
			if peak(i) > limit {
				t.Errorf("%g clients: peak %d bytes above cap × replicas %d", loads[i], peak(i), limit)
			}
			if float64(peak(i)) < 0.95*float64(limit) {
				t.Errorf("%g clients: peak %d bytes, want the store full (≥ 95%% of %d)", loads[i], peak(i), limit)
			}
		}
		last := len(loads) - 1
		if g := float64(peak(last)) / float64(peak(2)); math.Abs(g-1) > 0.05 {
			t.Errorf("capped: %g → %g clients changed the peak %.3f×, want flat within 5%%", loads[2], loads[last], g)
		}
		if purged(last) <= 0 {
			t.Errorf("%g clients over the cap: no loss from purges", loads[last])
		}
		if purged(last) <= purged(last-1) {
			t.Errorf("loss from purges does not grow with the load: %d at %g, %d at %g", purged(last-1), loads[last-1], purged(last), loads[last])
		}
	})
}
