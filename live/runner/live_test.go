package runner

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// TestLiveSmoke runs `make live SCENARIO=live-smoke` as a user would, then
// checks the run folder: the report that plots and thresholds accept, the
// vegeta results, and the facts of the live-smoke scenario, read from the
// recorded histories rather than from the report's counters.
func TestLiveSmoke(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed: the README's commands need it")
	}
	out := t.TempDir()
	cmd := exec.Command("make", "-s", "live", "SCENARIO=live-smoke", "OUT="+out, "ARGS=--parallel 3")
	cmd.Dir = "../.."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make live: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	run := filepath.Join(out, "live-smoke", "latest")
	r, err := report.Read(run)
	if err != nil {
		t.Fatalf("reading the report: %v", err)
	}
	f, err := scenario.Load("../../scenarios.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("live-smoke")
	fh, err := os.Open(filepath.Join(run, history.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	hist, err := history.ReadHistories(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	steps := faults.Timeline(sc.Faults, sc.FaultContext())

	t.Run("ReportAccepted", func(t *testing.T) {
		if r.Engine != "live" || len(r.Designs) != 6 {
			t.Fatalf("engine %q, %d designs", r.Engine, len(r.Designs))
		}
		if _, err := plots.Render(r); err != nil {
			t.Errorf("plots reject the live report: %v", err)
		}
		res := expect.Evaluate(r, sc.Expect)
		if len(res) == 0 {
			t.Error("live-smoke has no thresholds to check")
		}
		for _, x := range expect.Failed(res) {
			t.Errorf("threshold failed: %+v", x)
		}
		if _, err := os.Stat(filepath.Join(run, "report.html")); err != nil {
			t.Error(err)
		}
	})

	t.Run("Conservation", func(t *testing.T) {
		for _, d := range r.Designs {
			tt := d.Totals
			if tt.EventsExpected == 0 || tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
				t.Errorf("%s: expected %d != delivered %d + lost %d + pending %d", d.Name, tt.EventsExpected, tt.EventsDelivered, tt.EventsLost, tt.EventsPending)
			}
			if tt.EventsLost != tt.LostByCause.Sum() {
				t.Errorf("%s: lost %d != sum of causes %+v", d.Name, tt.EventsLost, tt.LostByCause)
			}
			if tt.Calls != tt.CallsCompleted+tt.CallsFailed+tt.CallsPending {
				t.Errorf("%s: calls %d != %d + %d + %d", d.Name, tt.Calls, tt.CallsCompleted, tt.CallsFailed, tt.CallsPending)
			}
			var lost int64
			for _, v := range d.Series.EventsLost {
				lost += v
			}
			if lost != tt.EventsLost {
				t.Errorf("%s: events_lost series sums to %d, total %d", d.Name, lost, tt.EventsLost)
			}
		}
	})

	// The histories held to the replicas' own counters and to Redis
	// (check.Reconcile): ok in every design.
	t.Run("Reconciliation", func(t *testing.T) { holdsReconciled(t, r.Designs) })

	// The live engine samples the store while it runs: nothing for the
	// designs without one; for the others the store fills while the calls
	// stream and empties as the sessions end.
	t.Run("StoreSampled", func(t *testing.T) {
		for _, d := range r.Designs {
			ser := d.Series.StoreBytes
			peak := slices.Max(ser)
			if peak != d.Totals.StorePeakBytes {
				t.Errorf("%s: store_peak_bytes %d, the series peaks at %d", d.Name, d.Totals.StorePeakBytes, peak)
			}
			if d.Events == topology.EventsNone {
				if peak != 0 {
					t.Errorf("%s keeps no events but its store peaks at %d bytes", d.Name, peak)
				}
				continue
			}
			if d.IsUnknown("store_peak_bytes") {
				t.Errorf("%s: the store was not sampled", d.Name)
			}
			// 200 clients streaming 256-byte events for 30 s hold megabytes.
			if early, mid := ser[1], ser[int(sc.Duration/sc.Step)-2]; peak < 1<<20 || mid <= early || ser[len(ser)-1] >= peak {
				t.Errorf("%s: the store holds %d bytes at 1 s, %d near the end of the calls, %d at the end, peak %d", d.Name, early, mid, ser[len(ser)-1], peak)
			}
		}
	})

	t.Run("ResultsBin", func(t *testing.T) {
		fh, err := os.Open(filepath.Join(run, "results.bin"))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		dec := vegeta.NewDecoder(fh)
		per := map[string]int{}
		for {
			var res vegeta.Result
			if err := dec.Decode(&res); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("decoding results.bin after %v results: %v", per, err)
			}
			per[res.Attack]++
		}
		for name, h := range hist {
			if per[name] != len(h.Requests) || per[name] == 0 {
				t.Errorf("%s: %d results in results.bin, %d requests recorded", name, per[name], len(h.Requests))
			}
			d := r.Design(name)
			if d.HTTP == nil || d.HTTP.Requests != uint64(len(h.Requests)) {
				t.Errorf("%s: vegeta metrics under http do not count %d requests: %+v", name, len(h.Requests), d.HTTP)
			}
		}
	})

	t.Run("StatelessNo404", func(t *testing.T) {
		h := hist["stateless"]
		for _, q := range h.Requests {
			if q.Status == 404 {
				t.Fatalf("stateless request got 404: %+v", q)
			}
		}
		if len(h.Requests) == 0 {
			t.Fatal("no requests")
		}
	})

	t.Run("NostoreReplaysNothing", func(t *testing.T) {
		h := hist["nostore"]
		for _, rc := range h.Receipts {
			if q := h.Requests[rc.Req]; q.Kind == clients.ReqResume && rc.Index > 0 {
				t.Fatalf("nostore delivered event %d through a resume: %+v", rc.Index, q)
			}
		}
		if d := r.Design("nostore"); d.Totals.EventsReplayed != 0 {
			t.Errorf("nostore events_replayed = %d", d.Totals.EventsReplayed)
		}
	})

	t.Run("MemoryStickyResumesClientDrops", func(t *testing.T) {
		h := hist["memory-sticky"]
		checked := memoryStickyDrops(t, h, steps)
		if checked < 10 {
			t.Errorf("only %d client-side drops on untouched replicas to check", checked)
		}
	})

	t.Run("HardRestart404", func(t *testing.T) {
		var kill *history.Applied
		for i, a := range hist["nostore"].Faults {
			if s := steps[a.Step]; s.Kind == faults.StepStop && !s.Graceful {
				kill = &hist["nostore"].Faults[i]
			}
		}
		if kill == nil {
			t.Fatal("no hard restart in the applied faults")
		}
		for _, name := range []string{"nostore", "memory-sticky", "memory-roundrobin", "redis-events"} {
			h := hist[name]
			var at int64 = -1
			for _, a := range h.Faults {
				if s := steps[a.Step]; s.Kind == faults.StepStop && !s.Graceful {
					at = a.At
				}
			}
			n, bad := sessionsAfterKill(h, kill.Replica, at)
			if n == 0 {
				t.Errorf("%s: no session of replica %d made a request after the kill", name, kill.Replica)
			}
			for _, q := range bad {
				t.Errorf("%s: session of killed replica %d: next request %v got %d, want 404", name, kill.Replica, q.Kind, q.Status)
			}
		}
	})

	t.Run("RedisSharedGracefulRestartLosesNothing", func(t *testing.T) {
		h := hist["redis-shared"]
		var drain, slot int64 = -1, -1
		for _, a := range h.Faults {
			if s := steps[a.Step]; s.Kind == faults.StepStop && s.Graceful {
				drain, slot = a.At, int64(a.Replica)
			}
		}
		running := map[[2]int32]bool{}
		for _, p := range h.Produced {
			if int64(p.Replica) == slot && p.T < drain {
				running[[2]int32{p.Client, p.Seq}] = true
			}
		}
		n := 0
		for _, c := range h.Calls {
			if !running[[2]int32{c.Client, c.Seq}] || c.End >= 0 && c.End < drain {
				continue
			}
			n++
			if c.End >= 0 && (c.Outcome != clients.Completed || delivered(h, c) != c.E) {
				t.Errorf("redis-shared call %d/%d on the draining replica: outcome %v, %d of %d delivered", c.Client, c.Seq, c.Outcome, delivered(h, c), c.E)
			}
		}
		if n == 0 {
			t.Error("no call was running on the draining replica")
		}
	})

	t.Run("RedisEvents404AfterRestart", func(t *testing.T) {
		h := hist["redis-events"]
		first := int64(-1)
		for _, a := range h.Faults {
			if s := steps[a.Step]; s.Kind == faults.StepStop && (first < 0 || a.At < first) {
				first = a.At
			}
		}
		n := 0
		for _, q := range h.Requests {
			if q.Status == 404 && q.Sent >= first {
				n++
			}
		}
		if first < 0 || n == 0 {
			t.Errorf("redis-events: %d 404s after the first restart at %d ns", n, first)
		}
	})
}

// delivered counts the distinct indices of call c the client received.
func delivered(h *history.History, c history.Call) int32 {
	seen := map[int32]bool{}
	for _, rc := range h.Receipts {
		if rc.Client == c.Client && rc.Seq == c.Seq && rc.Index >= 1 && rc.Index <= c.E {
			seen[rc.Index] = true
		}
	}
	return int32(len(seen))
}

// memoryStickyDrops checks that every drop the client itself made (random
// or a client-drop fault) of a stream that had an id, on a replica that was
// neither stopping nor stopped by the time of the resume, was resumed with
// 200, and that such calls lost nothing. It returns how many it checked.
func memoryStickyDrops(t *testing.T, h *history.History, steps []faults.Step) int {
	t.Helper()
	type ck = [2]int32
	stops := map[int][]int64{} // replica -> times it began to stop
	for _, a := range h.Faults {
		if s := steps[a.Step]; s.Kind == faults.StepStop {
			stops[a.Replica] = append(stops[a.Replica], a.At)
		}
	}
	type place struct {
		replica int
		start   int64
	}
	where := map[[3]int32]place{} // attempt -> replica and start
	for _, p := range h.Produced {
		k := [3]int32{p.Client, p.Seq, p.Attempt}
		if w, ok := where[k]; !ok || p.T < w.start {
			where[k] = place{p.Replica, p.T}
		}
	}
	calls := map[ck]history.Call{}
	for _, c := range h.Calls {
		calls[ck{c.Client, c.Seq}] = c
	}
	bad := map[ck]bool{} // calls with a drop not of this kind
	good := map[ck]bool{}
	checked := 0
	for _, d := range h.Drops {
		k := ck{d.Client, d.Seq}
		q := h.Requests[d.Req]
		hadID := false
		for _, rc := range h.Receipts {
			if rc.Client == d.Client && rc.Seq == d.Seq && rc.Attempt == q.Attempt && rc.T <= d.T {
				hadID = true // memory-sticky sends ids on every event, the priming one first
				break
			}
		}
		if d.Cause != history.DropRandom && d.Cause != history.DropFault || !hadID {
			bad[k] = true
			continue
		}
		w, ok := where[[3]int32{d.Client, d.Seq, q.Attempt}]
		if !ok {
			bad[k] = true
			continue
		}
		// The next request of this call after the drop.
		var next *history.Request
		for i := range h.Requests {
			x := &h.Requests[i]
			if x.Client == d.Client && x.Seq == d.Seq && x.Sent >= d.T && (next == nil || x.Sent < next.Sent) {
				next = x
			}
		}
		if next == nil {
			bad[k] = true // the run ended first
			continue
		}
		touched := false
		for _, at := range stops[w.replica] {
			// at is when the stop was done; a request in flight then
			// may have been cut by it.
			if at >= w.start && at-int64(50*time.Millisecond) <= next.Answered {
				touched = true
			}
		}
		if touched {
			bad[k] = true
			continue
		}
		checked++
		good[k] = true
		if next.Kind != clients.ReqResume || next.Status != 200 {
			t.Errorf("drop of call %d/%d at %d ns (%v) was followed by %v answered %d, want a resume answered 200", d.Client, d.Seq, d.T, d.Cause, next.Kind, next.Status)
		}
	}
	for k := range good {
		c := calls[k]
		if bad[k] || c.End < 0 {
			continue
		}
		if c.Outcome != clients.Completed || delivered(h, c) != c.E {
			t.Errorf("call %d/%d resumed after client-side drops but ended %v with %d of %d delivered", k[0], k[1], c.Outcome, delivered(h, c), c.E)
		}
	}
	return checked
}

// sessionsAfterKill finds the sessions that ran calls on replica slot before
// the kill at `at` and were not deleted by then, and returns how many of
// them made a session request afterwards and those whose first such
// request was not answered 404.
func sessionsAfterKill(h *history.History, slot int, at int64) (int, []history.Request) {
	first := firstAfterKill(h, slot, at)
	var bad []history.Request
	for _, q := range first {
		if q.Status != 404 {
			bad = append(bad, q)
		}
	}
	return len(first), bad
}

// firstAfterKill maps each session that ran calls on replica slot before
// the kill at `at`, and was not deleted by then, to its first session
// request afterwards (sessions that made none are absent).
func firstAfterKill(h *history.History, slot int, at int64) map[string]history.Request {
	onSlot := map[string]bool{}
	for _, p := range h.Produced {
		if p.Replica == slot && p.T < at && p.Session != "" {
			onSlot[p.Session] = true
		}
	}
	for _, q := range h.Requests {
		if q.Kind == clients.ReqDelete && q.Answered < at {
			delete(onSlot, q.SessionID)
		}
	}
	first := map[string]history.Request{}
	for _, q := range h.Requests {
		if !q.Session || !onSlot[q.SessionID] || q.Sent < at {
			continue
		}
		if f, ok := first[q.SessionID]; !ok || q.Sent < f.Sent {
			first[q.SessionID] = q
		}
	}
	return first
}
