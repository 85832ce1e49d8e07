package sim

import (
	"slices"
	"testing"
)

func peak(xs []int64) int64 { return slices.Max(xs) }

// (h) long-outage-eviction: clients away longer than retention holds. The
// memory design answers their resumes 400 "purged"; the events are lost
// with cause purged; with go-sdk's all-or-nothing replay the whole rest of
// each call is lost, not only the evicted gap; and a retention large enough
// for the absence brings the loss to 0.
func TestFactLongOutageEviction(t *testing.T) {
	t.Parallel()
	out := shared(t, load(t, "long-outage-eviction"))
	for _, dn := range []string{"memory-sticky", "redis-events"} {
		d, a := design(t, out, dn), out.Audit[dn]
		if d.Profile != "go-sdk" {
			t.Fatalf("%s runs profile %s", dn, d.Profile)
		}
		if d.Totals.HTTP400 == 0 || a.ResumeStatus[400] == 0 {
			t.Errorf("%s: no resume was answered 400", dn)
		}
		lost := d.Totals.LostByCause
		if lost.Purged == 0 || lost.Purged != d.Totals.EventsLost-lost.Abandoned-lost.Unproduced-lost.Other {
			t.Errorf("%s: lost by cause %+v", dn, lost)
		}
		if lost.Purged <= a.PurgedMissing {
			t.Errorf("%s: lost %d purged events but only %d were missing from the store: the rest of the call should be lost too", dn, lost.Purged, a.PurgedMissing)
		}
	}
	big := run(t, load(t, "long-outage-eviction", "store.memory_cap_bytes=4294967296", "store.redis_maxlen=0"), "memory-sticky", "redis-events")
	for _, d := range big.Report.Designs {
		if d.Totals.EventsLost != 0 || d.Totals.LostByCause.Purged != 0 {
			t.Errorf("%s with retention covering the absence: lost %d (%+v), want 0", d.Name, d.Totals.EventsLost, d.Totals.LostByCause)
		}
	}
}

// (j) thundering-herd: no jitter gives the highest peak and the slowest
// recovery; decorrelated recovers the soonest of the jittered strategies
// (full, equal, decorrelated, additive); with unlimited accept capacity every
// backoff variant makes the same number of attempts within 5%.
func TestFactThunderingHerd(t *testing.T) {
	t.Parallel()
	rows := []string{"herd-nojitter", "herd-full", "herd-equal", "herd-decorrelated", "herd-additive"}
	out := shared(t, load(t, "thundering-herd"))
	recov := map[string]float64{}
	for _, dn := range rows {
		d := design(t, out, dn)
		if s := d.RecoveryAfterFaultS[0].Seconds; s != nil {
			recov[dn] = *s
		} else {
			recov[dn] = 1e9
		}
	}
	nj := design(t, out, "herd-nojitter")
	for _, dn := range rows[1:] {
		d := design(t, out, dn)
		if peak(d.Series.Reconnects) >= peak(nj.Series.Reconnects) {
			t.Errorf("%s peaks at %d reconnects per step, no jitter at %d: no jitter should be highest", dn, peak(d.Series.Reconnects), peak(nj.Series.Reconnects))
		}
		if recov[dn] >= recov["herd-nojitter"] {
			t.Errorf("%s recovers in %gs, no jitter in %gs: no jitter should be slowest", dn, recov[dn], recov["herd-nojitter"])
		}
	}
	// Without backoff the herd peaks higher still.
	if nb := design(t, out, "herd-nobackoff"); peak(nb.Series.Reconnects) < peak(nj.Series.Reconnects) {
		t.Errorf("no backoff peaks at %d, below exponential without jitter (%d)", peak(nb.Series.Reconnects), peak(nj.Series.Reconnects))
	}
	for _, dn := range []string{"herd-full", "herd-equal", "herd-additive"} {
		if recov["herd-decorrelated"] >= recov[dn] {
			t.Errorf("decorrelated recovers in %gs, %s in %gs: decorrelated should be soonest", recov["herd-decorrelated"], dn, recov[dn])
		}
	}
	ctl := run(t, load(t, "thundering-herd", "replica.accept_rate=0"), rows...)
	lo, hi := int64(1<<62), int64(0)
	for _, d := range ctl.Report.Designs {
		lo, hi = min(lo, d.Totals.Reconnects), max(hi, d.Totals.Reconnects)
	}
	if float64(hi-lo) > 0.05*float64(lo) {
		t.Errorf("with unlimited capacity attempts range %d..%d, more than 5%% apart", lo, hi)
	}
}

// The published backoff simulations that found full jitter sends the fewest
// calls ran an OCC row with a 5 ms base, far below the time the herd takes
// to drain. In that regime the capacity model agrees that full jitter makes
// fewer attempts than decorrelated (whose floor stays at base while its
// mean grows only 1.5x a step) and fewer than no jitter. It does not make
// fewer than equal or additive jitter, which wait longer: see docs/model.md,
// "What the storm model shows".
func TestHerdSmallBaseFullBelowDecorrelated(t *testing.T) {
	t.Parallel()
	out := run(t, load(t, "thundering-herd", "client.base=10ms"), "herd-nojitter", "herd-full", "herd-decorrelated")
	full := design(t, out, "herd-full").Totals.Reconnects
	for _, dn := range []string{"herd-nojitter", "herd-decorrelated"} {
		if got := design(t, out, dn).Totals.Reconnects; got <= full {
			t.Errorf("base 10ms: %s makes %d reconnect attempts, full jitter %d: full jitter should make fewer", dn, got, full)
		}
	}
}

// Jittered retry hints and admission buckets each lower the peak reconnect
// rate of a graceful deploy-restart, against the same run without them.
func TestMitigationsLowerDeployPeak(t *testing.T) {
	t.Parallel()
	base := peak(design(t, shared(t, load(t, "deploy-restart")), "redis-shared").Series.Reconnects)
	if base < 500 {
		t.Fatalf("the unmitigated deploy peaks at only %d reconnects/s", base)
	}
	for _, set := range [][]string{
		{"replica.retry_hint_spread=[1.0, 3.0]"},
		{"replica.admit_bucket=100", "replica.admit_interval=1s"},
	} {
		got := peak(design(t, run(t, load(t, "deploy-restart", set...), "redis-shared"), "redis-shared").Series.Reconnects)
		if got >= base {
			t.Errorf("%v: peak %d reconnects/s, not below the %d of the same run without it", set, got, base)
		}
	}
}

// scale-out: 2 -> 4 replicas under hash routing. Local sessions whose key now
// hashes elsewhere get 404, about half of them; redis-shared gets none.
func TestFactScaleOut(t *testing.T) {
	t.Parallel()
	out := shared(t, load(t, "scale-out"))
	for _, dn := range []string{"memory-hash", "redis-events"} {
		d, a := design(t, out, dn), out.Audit[dn]
		if d.LB != "hash" {
			t.Fatalf("%s runs lb %s", dn, d.LB)
		}
		var p *Probe
		for i := range a.Probes {
			if a.Probes[i].Why == "scale" {
				p = &a.Probes[i]
			}
		}
		if p == nil || len(p.First) < 500 {
			t.Fatalf("%s: no scale probe, or too few sessions asked again", dn)
		}
		var n404 int
		for _, st := range p.First {
			if st == 404 {
				n404++
			}
		}
		if f := float64(n404) / float64(len(p.First)); f < 0.4 || f > 0.6 {
			t.Errorf("%s: %.2f of the sessions alive at the scale-out got 404 next, want about 1/2", dn, f)
		}
	}
	if n := design(t, out, "redis-shared").Totals.HTTP404; n != 0 {
		t.Errorf("redis-shared got %d 404s, want 0", n)
	}
}

// store-outage: the Redis designs get 503 and purged gaps, the memory designs
// are unaffected, and the time to recover is reported.
func TestFactStoreOutage(t *testing.T) {
	t.Parallel()
	out := shared(t, load(t, "store-outage"))
	for _, dn := range []string{"redis-events", "redis-shared"} {
		d, a := design(t, out, dn), out.Audit[dn]
		if d.Totals.HTTP503 == 0 {
			t.Errorf("%s: no 503 during the outage", dn)
		}
		if a.ResumeStatus[400] == 0 || d.Totals.LostByCause.Purged+d.Totals.CallsReissued == 0 {
			t.Errorf("%s: no resume hit a gap", dn)
		}
		if d.RecoveryAfterFaultS[0].Seconds == nil || *d.RecoveryAfterFaultS[0].Seconds <= 0 {
			t.Errorf("%s: time to recover %v, want a positive number", dn, d.RecoveryAfterFaultS[0].Seconds)
		}
	}
	for _, dn := range []string{"memory-sticky", "stateless"} {
		d := design(t, out, dn)
		if d.Totals.HTTP503 != 0 || d.Totals.EventsLost != 0 {
			t.Errorf("%s: %d 503s, %d lost; the store outage should not touch it", dn, d.Totals.HTTP503, d.Totals.EventsLost)
		}
	}
}

// era-2026: no sessions, no resumes, no 404s; every dropped call is re-issued.
func TestFactEra2026(t *testing.T) {
	t.Parallel()
	out := shared(t, load(t, "era-2026"))
	for _, d := range out.Report.Designs {
		a, tt := out.Audit[d.Name], d.Totals
		if d.Era != "2026-07-28" {
			t.Errorf("%s: era %s", d.Name, d.Era)
		}
		if tt.SessionRequests != 0 || tt.Resumes != 0 || tt.HTTP404 != 0 {
			t.Errorf("%s: session requests %d, resumes %d, 404s %d; want 0", d.Name, tt.SessionRequests, tt.Resumes, tt.HTTP404)
		}
		if a.DroppedCalls == 0 || a.DroppedResumedOnly != 0 || a.DroppedFailed+a.DroppedReissued+a.DroppedPending != a.DroppedCalls {
			t.Errorf("%s: %d dropped calls: %d re-issued, %d failed, %d pending, %d neither", d.Name, a.DroppedCalls, a.DroppedReissued, a.DroppedFailed, a.DroppedPending, a.DroppedResumedOnly)
		}
		// Closing a response stream cancels the call: its work stops at the
		// drop, so nothing is produced for a client that left.
		if c := d.Cancelled; c == nil || c.Calls == 0 || c.EventsSaved == 0 || tt.EventsWasted != 0 {
			t.Errorf("%s: cancelled %+v, %d events wasted; want calls cancelled, events saved and none wasted", d.Name, c, tt.EventsWasted)
		}
	}
}

// The same storm at 2025-11-25, stateless: a dropped call is re-issued,
// and the attempt it left keeps running for nobody (wasted), as the eras
// before 2026-07-28 have it; nothing is cancelled.
func TestFactEra2025RunsOn(t *testing.T) {
	t.Parallel()
	out := run(t, load(t, "era-2026", `era="2025-11-25"`), "stateless")
	d := design(t, out, "stateless")
	if d.Cancelled != nil || d.Totals.EventsWasted == 0 {
		t.Errorf("cancelled %+v, %d events wasted; want nothing cancelled and the abandoned attempts' events wasted", d.Cancelled, d.Totals.EventsWasted)
	}
}
