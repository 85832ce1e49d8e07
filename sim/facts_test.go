package sim

import (
	"fmt"
	"github.com/stormsim/stormsim/clients"
	"math"
	"slices"
	"testing"

	"github.com/stormsim/stormsim/workload"
)

// (a) stateless with profile compliant: no 404s, no resumes, no replays in
// any shipped scenario, and every dropped call ends re-issued, failed or
// pending, never resumed.
func TestFactStatelessNeverResumes(t *testing.T) {
	t.Parallel()
	for _, name := range shippedNames(t) {
		sc := load(t, name, "designs=[\"stateless\"]", "client.profile=compliant")
		if sc.Designs[0].Client.Profile != "compliant" {
			t.Fatalf("%s: stateless runs profile %s", name, sc.Designs[0].Client.Profile)
		}
		out := run(t, sc)
		d, a := design(t, out, "stateless"), out.Audit["stateless"]
		tt := d.Totals
		if tt.HTTP404 != 0 || tt.Resumes != 0 || tt.EventsReplayed != 0 || tt.SessionRequests != 0 {
			t.Errorf("%s: stateless got 404s=%d resumes=%d replayed=%d session_requests=%d, want all 0",
				name, tt.HTTP404, tt.Resumes, tt.EventsReplayed, tt.SessionRequests)
		}
		if a.DroppedResumedOnly != 0 {
			t.Errorf("%s: %d dropped calls completed without a re-issue", name, a.DroppedResumedOnly)
		}
		if got := a.DroppedReissued + a.DroppedFailed + a.DroppedPending; got != a.DroppedCalls {
			t.Errorf("%s: dropped calls %d != reissued %d + failed %d + pending %d", name, a.DroppedCalls, a.DroppedReissued, a.DroppedFailed, a.DroppedPending)
		}
		if name == "network-blip" && a.DroppedCalls == 0 {
			t.Errorf("%s: no call dropped; the fact was not exercised", name)
		}
	}
}

// (b) nostore: nothing is ever replayed, and the GETs a client sends after a
// drop get what docs/domain.md §4 says: the standalone stream (200, never the
// call's events) while the session lives, 404 once it is gone, and a GET
// with Last-Event-ID would get 400 because there is no store.
func TestFactNoStoreReplaysNothing(t *testing.T) {
	t.Parallel()
	sawStandalone := false
	for _, name := range shippedNames(t) {
		sc := load(t, name, "designs=[\"nostore\"]")
		out := run(t, sc)
		d, a := design(t, out, "nostore"), out.Audit["nostore"]
		if d.Totals.EventsReplayed != 0 || d.Totals.Resumes != 0 {
			t.Errorf("%s: nostore replayed %d events over %d resumes, want 0", name, d.Totals.EventsReplayed, d.Totals.Resumes)
		}
		for st, n := range a.StandaloneStatus {
			if n > 0 && st != 200 && st != 404 && st != 503 {
				t.Errorf("%s: a standalone GET got %d, want 200, 404 or 503", name, st)
			}
		}
		for st, n := range a.ResumeStatus {
			if n > 0 && st != 400 && st != 404 && st != 503 {
				t.Errorf("%s: %d GETs with Last-Event-ID got %d, want 400 (no store) or 404", name, n, st)
			}
		}
		sawStandalone = sawStandalone || a.StandaloneStatus[200] > 0
	}
	if !sawStandalone {
		t.Error("no nostore client ever opened the standalone GET; the fact was not exercised")
	}
}

// (b, the server rule) a GET with Last-Event-ID to a design without a store
// is answered 400, whatever the client believes it holds.
func TestNoStoreResumeIs400(t *testing.T) {
	t.Parallel()
	sc := load(t, "steady", "designs=[\"nostore\"]", "workload.clients=50", "duration=30s", "drain=30s")
	e, err := newEngine(t.Context(), sc, &sc.Designs[0], workload.Arrivals(sc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.run()
	for id := range e.clients {
		c := &e.clients[id]
		if !c.sessOK || c.sessProc < 0 {
			continue
		}
		c.call.attempt = 0
		c.reqCursor = 3
		c.req = clients.ReqResume
		in, _ := e.serveOn(int32(id), c, c.sessProc)
		if status, purged := in.Status, in.Purged; status != 400 || purged {
			t.Fatalf("resume on nostore = %d (purged %v), want 400 not purged", status, purged)
		}
		return
	}
	t.Fatal("no client held a live session at the end")
}

// (c) memory-sticky under network-blip, with retention that covers the
// absence: every drop of a stream that already had an id resumes, and
// nothing is lost.
func TestFactMemoryStickyResumesBlip(t *testing.T) {
	t.Parallel()
	sc := load(t, "network-blip")
	out := shared(t, sc)
	d, a := design(t, out, "memory-sticky"), out.Audit["memory-sticky"]
	if a.DropsWithID == 0 {
		t.Fatal("no stream with an id dropped; the fact was not exercised")
	}
	if a.DropsWithIDResumed+a.DropsWithIDPending != a.DropsWithID {
		t.Errorf("%d drops with an id, %d resumed, %d still pending at the end", a.DropsWithID, a.DropsWithIDResumed, a.DropsWithIDPending)
	}
	if d.Totals.EventsLost != 0 || d.Totals.HTTP400 != 0 {
		t.Errorf("lost %d events, %d 400s; want 0", d.Totals.EventsLost, d.Totals.HTTP400)
	}
}

// (d) a memory design under a hard restart: every session that lived on the
// killed process gets 404 on its first session request afterwards, checked
// session by session.
func TestFactHardRestart404PerSession(t *testing.T) {
	t.Parallel()
	for _, dn := range []string{"memory-sticky", "memory-random"} {
		sc := load(t, "crash", fmt.Sprintf("designs=[%q]", dn))
		out := run(t, sc)
		a := out.Audit[dn]
		if len(a.Probes) != 1 {
			t.Fatalf("%s: %d hard stops recorded, want 1", dn, len(a.Probes))
		}
		hs := a.Probes[0]
		if hs.Sessions < 100 {
			t.Fatalf("%s: only %d sessions on the killed replica", dn, hs.Sessions)
		}
		for i, st := range hs.First {
			if st != 404 {
				t.Fatalf("%s: session %d's first request after the crash got %d, want 404", dn, i, st)
			}
		}
		if len(hs.First)+hs.Dropped+len(hs.waiting) != hs.Sessions || hs.Dropped != 0 {
			t.Errorf("%s: %d sessions: %d answered, %d dropped unused, %d never asked", dn, hs.Sessions, len(hs.First), hs.Dropped, len(hs.waiting))
		}
		if len(hs.First) < hs.Sessions*9/10 {
			t.Errorf("%s: only %d of %d sessions sent another request", dn, len(hs.First), hs.Sessions)
		}
	}
}

// (e) with N = 2, 3, 4 replicas, at least 1,000 concurrent clients and no
// fault, a local-session memory design behind round-robin or random routing
// 404s on (N-1)/N of its session requests; memory-sticky in the same run on 0.
func TestFactRoundRobin404Rate(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3, 4} {
		sc := load(t, "round-robin", fmt.Sprintf("replicas=%d", n),
			`designs=["memory-sticky","memory-roundrobin","memory-random"]`)
		if len(sc.Faults) != 0 {
			t.Fatal("round-robin has faults")
		}
		out := run(t, sc)
		sticky := design(t, out, "memory-sticky")
		if sticky.Totals.Rate404 != 0 {
			t.Errorf("N=%d: memory-sticky rate_404 = %v, want exactly 0", n, sticky.Totals.Rate404)
		}
		if peak := slices.Max(sticky.Series.ActiveStreams); peak < 1000 {
			t.Errorf("N=%d: only %d concurrent streams at the peak, want ≥ 1000", n, peak)
		}
		want := float64(n-1) / float64(n)
		for _, dn := range []string{"memory-roundrobin", "memory-random"} {
			got := design(t, out, dn).Totals.Rate404
			if math.Abs(got-want) > 0.05 {
				t.Errorf("N=%d: %s rate_404 = %.3f, want %.3f ± 0.05", n, dn, got, want)
			}
		}
	}
}

// (f) redis-shared under the graceful deploy-restart, with the drain limit at
// or above the longest call: nothing lost, no 404, behind sticky and
// round-robin routing alike.
func TestFactRedisSharedSurvivesDeploy(t *testing.T) {
	t.Parallel()
	for _, lb := range []string{"sticky", "round-robin"} {
		sc := load(t, "deploy-restart", "lb="+lb, `designs=["redis-shared"]`)
		d := sc.Designs[0]
		longest := float64(sc.Workload.EventsMax) / sc.Workload.EventRate
		if d.Replica.DrainLimit.Seconds() < longest {
			t.Fatalf("drain limit %v is below the longest call (%gs)", d.Replica.DrainLimit, longest)
		}
		if d.LB != lb {
			t.Fatalf("design runs lb %s, want %s", d.LB, lb)
		}
		out := run(t, sc)
		tt := design(t, out, "redis-shared").Totals
		if tt.EventsLost != 0 || tt.HTTP404 != 0 {
			t.Errorf("lb=%s: lost %d, 404s %d; want 0 and 0", lb, tt.EventsLost, tt.HTTP404)
		}
		if tt.Resumes == 0 {
			t.Errorf("lb=%s: no resumes: the drain never closed a stream", lb)
		}
	}
}

// (g) redis-events: with sticky routing client drops lose nothing; a restart
// still gets 404, because the session did not outlive the process.
func TestFactRedisEvents(t *testing.T) {
	t.Parallel()
	blip := shared(t, load(t, "network-blip"))
	if tt := design(t, blip, "redis-events").Totals; tt.EventsLost != 0 || tt.Drops == 0 || tt.Resumes == 0 {
		t.Errorf("network-blip: lost %d over %d drops and %d resumes; want 0 lost", tt.EventsLost, tt.Drops, tt.Resumes)
	}
	for _, name := range []string{"deploy-restart", "crash"} {
		out := shared(t, load(t, name))
		if d := design(t, out, "redis-events"); d.LB != "sticky" || d.Totals.HTTP404 == 0 {
			t.Errorf("%s: redis-events (lb %s) got %d 404s, want some", name, d.LB, d.Totals.HTTP404)
		}
	}
}

// (i) crash: every design has unproduced events, and each one ends lost with
// cause unproduced, or produced again by a re-issue, or pending: compliant
// clients re-issue and lose none of them; go-sdk clients lose them.
func TestFactCrashUnproduced(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"compliant", "go-sdk"} {
		out := shared(t, load(t, "crash", "client.profile="+profile))
		for _, d := range out.Report.Designs {
			a, tt := out.Audit[d.Name], d.Totals
			if tt.EventsUnproduced == 0 {
				t.Errorf("%s/%s: no unproduced events", profile, d.Name)
				continue
			}
			if got := tt.LostByCause.Unproduced + a.UnproducedRecovered + a.UnproducedPending; got != tt.EventsUnproduced {
				t.Errorf("%s/%s: unproduced %d != lost(unproduced) %d + recovered %d + pending %d",
					profile, d.Name, tt.EventsUnproduced, tt.LostByCause.Unproduced, a.UnproducedRecovered, a.UnproducedPending)
			}
			// Under nostore a call whose stream broke earlier is already waiting
			// out its timeout, so the crash's unproduced events can be lost even
			// for a compliant client; behind random routing retries run out.
			if profile == "compliant" && d.LB == "sticky" && d.Name != "nostore" && tt.LostByCause.Unproduced != 0 {
				t.Errorf("compliant/%s: %d unproduced events lost; a compliant client re-issues", d.Name, tt.LostByCause.Unproduced)
			}
			if profile == "go-sdk" && tt.LostByCause.Unproduced == 0 && d.Name != "stateless" {
				t.Errorf("go-sdk/%s: no unproduced event was lost", d.Name)
			}
		}
	}
}

// A call timeout that ends an open stream is a drop (docs/domain.md §6: any end
// of a call's stream before its result): with no other drops and calls
// longer than the timeout, every call fails at its timeout with its stream
// open, and each is one drop.
func TestCallTimeoutIsADrop(t *testing.T) {
	t.Parallel()
	sc := load(t, "steady", "duration=60s", "workload.clients=50", "workload.drop_every=0s",
		"workload.events_min=100", "workload.events_max=100", "client.call_timeout=5s")
	for _, d := range run(t, sc, "memory-sticky", "redis-shared").Report.Designs {
		tt := d.Totals
		if tt.CallsFailed == 0 || tt.Drops != tt.CallsFailed || tt.Resumes != 0 {
			t.Errorf("%s: %d calls failed at their timeout, %d drops, %d resumes; want one drop per failed call and no resume", d.Name, tt.CallsFailed, tt.Drops, tt.Resumes)
		}
	}
}
