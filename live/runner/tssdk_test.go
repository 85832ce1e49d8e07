package runner

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/tsdk"
)

// needTS fails the test when the MCP TypeScript SDK is not installed: make
// test runs `make node` first, so a missing SDK is a broken setup, not a
// reason to skip.
func needTS(t *testing.T) {
	t.Helper()
	if _, _, err := tsdk.Program("server.mjs"); err != nil {
		t.Fatalf("%v (make test runs make node first)", err)
	}
}

// TestTSServer runs live-smoke's hard restart and client drop (its graceful
// restart left out) against ts-memory-sticky: the official TypeScript SDK's
// StreamableHTTPServerTransport, one per session with the SDK's
// InMemoryEventStore, as the replicas, and stormsim's native clients.
//
//   - HardRestart404: every session of the killed replica that makes a
//     request afterwards gets 404: the sessions lived in the Node process.
//   - ClientDropResumes: the calls that began after the killed replica was
//     back, in sessions the kill did not end, and were cut by the client
//     drop resume from the SDK's store with
//     0 events lost and 0 duplicated, judged by the checker on those calls.
func TestTSServer(t *testing.T) {
	needTS(t)
	sets := []string{`designs=["ts-memory-sticky"]`}
	sc := load(t, "live-smoke", sets)
	var kept []faults.Fault
	for _, f := range sc.Faults {
		if r, ok := f.(*faults.Restart); ok && r.Graceful {
			continue
		}
		kept = append(kept, f)
	}
	if len(kept) != 2 {
		t.Fatalf("live-smoke without its graceful restart has %d faults, want the hard restart and the client drop", len(kept))
	}
	sc.Faults = kept
	abs, _ := filepath.Abs("../../scenarios.toml")
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Report.Designs[0]
	h := out.Histories["ts-memory-sticky"]
	if d.Server != "ts-sdk" || len(d.Notes) == 0 {
		t.Errorf("server flavour in the report: %q %v", d.Server, d.Notes)
	}
	tt := d.Totals
	if tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
		t.Errorf("conservation: %+v", tt)
	}
	if tt.CallsCompleted < 100 {
		t.Errorf("%d calls completed, want at least 100", tt.CallsCompleted)
	}
	steps := faults.Timeline(sc.Faults, sc.FaultContext())
	var slot int
	var killed, back, dropAt int64 = -1, -1, -1
	for _, a := range h.Faults {
		if a.Step < 0 {
			continue
		}
		switch s := steps[a.Step]; {
		case s.Kind == faults.StepStop && !s.Graceful:
			slot, killed = a.Replica, a.At
		case s.Kind == faults.StepStart:
			back = a.At
		case s.Kind == faults.StepClientDrop:
			dropAt = a.At
		}
	}
	if killed < 0 || back < killed || dropAt < back {
		t.Fatalf("applied faults: kill at %d, back at %d, client drop at %d", killed, back, dropAt)
	}

	t.Run("HardRestart404", func(t *testing.T) {
		n, bad := sessionsAfterKill(h, slot, killed)
		t.Logf("hard restart of replica %d: %d of its sessions made a request afterwards, %d did not get 404; %d 404s in all", slot, n, len(bad), tt.HTTP404)
		if n < 5 {
			t.Errorf("%d sessions of replica %d made a request after the kill, want at least 5", n, slot)
		}
		for _, q := range bad {
			t.Errorf("session of killed replica %d: next request %v got %d, want 404", slot, q.Kind, q.Status)
		}
		if tt.HTTP404 < int64(n) {
			t.Errorf("the report counts %d 404s, fewer than the %d sessions of the killed replica", tt.HTTP404, n)
		}
	})

	t.Run("ClientDropResumes", func(t *testing.T) {
		cut := map[[2]int32]bool{}
		for _, dr := range h.Drops {
			if dr.Cause == check.DropFault {
				cut[[2]int32{dr.Client, dr.Seq}] = true
			}
		}
		for _, c := range h.Calls {
			if c.Start <= back {
				delete(cut, [2]int32{c.Client, c.Seq})
			}
		}
		// A session the kill ended makes its next call's 404: that is the
		// restart's doing, not the client drop's.
		dead := firstAfterKill(h, slot, killed)
		for _, q := range h.Requests {
			if _, ok := dead[q.SessionID]; ok && q.Session {
				delete(cut, [2]int32{q.Client, q.Seq})
			}
		}
		sub := subHistory(h, cut)
		if len(sub.Calls) < 10 {
			t.Fatalf("%d calls cut by the client drop after the restart, want at least 10", len(sub.Calls))
		}
		j := check.Judge(sub)
		st := j.Totals
		t.Logf("client drop: %d calls, %d resumes, %d replayed, %d lost, %d duplicated, %d 404s", len(sub.Calls), st.Resumes, st.EventsReplayed, st.EventsLost, st.EventsDuplicated, st.HTTP404)
		if st.EventsLost != 0 || st.EventsDuplicated != 0 || st.HTTP404 != 0 {
			t.Errorf("the calls cut by the client drop: %d lost, %d duplicated, %d 404s; want 0, 0, 0", st.EventsLost, st.EventsDuplicated, st.HTTP404)
		}
		if st.Resumes < int64(len(sub.Calls))/2 || st.EventsReplayed == 0 {
			t.Errorf("%d resumes and %d events replayed for %d calls cut", st.Resumes, st.EventsReplayed, len(sub.Calls))
		}
		for _, c := range sub.Calls {
			if c.Outcome == clients.Failed {
				t.Errorf("call %d/%d failed after the client drop", c.Client, c.Seq)
			}
		}
	})
}

// subHistory is h restricted to the calls in keep: the checker judges them
// alone.
func subHistory(h *check.History, keep map[[2]int32]bool) *check.History {
	s := *h
	in := func(c, k int32) bool { return keep[[2]int32{c, k}] }
	s.Calls, s.Requests, s.Receipts, s.Drops, s.Produced = nil, nil, nil, nil, nil
	for _, c := range h.Calls {
		if in(c.Client, c.Seq) {
			s.Calls = append(s.Calls, c)
		}
	}
	reqIdx := map[int32]int32{}
	for i, q := range h.Requests {
		if in(q.Client, q.Seq) {
			reqIdx[int32(i)] = int32(len(s.Requests))
			s.Requests = append(s.Requests, q)
		}
	}
	for _, r := range h.Receipts {
		if in(r.Client, r.Seq) {
			r.Req = reqIdx[r.Req]
			s.Receipts = append(s.Receipts, r)
		}
	}
	for _, d := range h.Drops {
		if in(d.Client, d.Seq) {
			d.Req = reqIdx[d.Req]
			s.Drops = append(s.Drops, d)
		}
	}
	for _, p := range h.Produced {
		if in(p.Client, p.Seq) {
			s.Produced = append(s.Produced, p)
		}
	}
	return &s
}

// TestTSClients runs live-smoke with every client the official TypeScript
// SDK's (Client over StreamableHTTPClientTransport, in one Node process per
// design) against the reference replica (memory-sticky-ts-clients) and
// against the ts-sdk server (ts-memory-sticky with client.impl = "ts-sdk").
// The recording proxy writes the histories and the checker judges them:
// the calls complete, the SDK resumes the drops with Last-Event-ID, the
// report's figures are the checker's on those histories, and after the hard
// restart the SDK's calls in the dead sessions fail with its 404 error.
func TestTSClients(t *testing.T) {
	needTS(t)
	sets := []string{`designs=["memory-sticky-ts-clients","ts-memory-sticky"]`, "client.impl=ts-sdk", "client.profile=ts-sdk"}
	sc := load(t, "live-smoke", sets)
	abs, _ := filepath.Abs("../../scenarios.toml")
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Parallel: 2, Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range out.Report.Designs {
		h := out.Histories[d.Name]
		tt := d.Totals
		resumed, failed404 := 0, 0
		for _, q := range h.Requests {
			if q.Kind == clients.ReqResume && q.Status == 200 {
				resumed++
			}
		}
		for _, c := range h.Calls {
			if c.Outcome == clients.Failed && strings.HasPrefix(c.Err, "HTTP 404: ") {
				failed404++
			}
		}
		t.Logf("%s: %d calls, %d completed, %d failed (%d with the SDK's 404 error), %d delivered, %d lost, %d duplicated, %d resumes, %d 404s",
			d.Name, tt.Calls, tt.CallsCompleted, tt.CallsFailed, failed404, tt.EventsDelivered, tt.EventsLost, tt.EventsDuplicated, tt.Resumes, tt.HTTP404)
		if d.Profile != "ts-sdk" {
			t.Errorf("%s: profile %q", d.Name, d.Profile)
		}
		if tt.CallsCompleted < 100 || len(h.Receipts) < 1000 {
			t.Errorf("%s: %d calls completed, %d receipts", d.Name, tt.CallsCompleted, len(h.Receipts))
		}
		if tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
			t.Errorf("%s: conservation: %+v", d.Name, tt)
		}
		// The report is the checker's judgment of the recorded history.
		if j := check.Judge(h).Totals; j.EventsLost != tt.EventsLost || j.EventsDelivered != tt.EventsDelivered || j.Resumes != tt.Resumes {
			t.Errorf("%s: the checker on the history says %d lost, %d delivered, %d resumes; the report %d, %d, %d",
				d.Name, j.EventsLost, j.EventsDelivered, j.Resumes, tt.EventsLost, tt.EventsDelivered, tt.Resumes)
		}
		if resumed < 5 || tt.Resumes != int64(resumed) {
			t.Errorf("%s: %d resumes answered 200 in the history, %d in the report", d.Name, resumed, tt.Resumes)
		}
		if failed404 < 5 {
			t.Errorf("%s: %d calls failed with the SDK's 404 error after the hard restart, want at least 5", d.Name, failed404)
		}
		if tt.EventsDuplicated != 0 {
			t.Errorf("%s: %d events duplicated", d.Name, tt.EventsDuplicated)
		}
	}
	if len(out.Report.Designs) != 2 {
		t.Fatalf("%d designs ran", len(out.Report.Designs))
	}
}

// TestTSClientsTarget aims ts-sdk clients at a server stormsim does not run
// (--target, that is server.url): a reference replica started on its own.
// They call its tool through the recording proxy and every call completes
// with nothing lost, judged by the checker from the client side.
func TestTSClientsTarget(t *testing.T) {
	needTS(t)
	abs, _ := filepath.Abs("../../scenarios.toml")
	cmd := exec.Command(bin, "serve", "--file", abs, "--scenario", "live-smoke", "--design", "memory-sticky", "--addr", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }() //nolint:errcheck // it is killed
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("the replica said %q (%v)", line, err)
	}
	sets := []string{"server.url=" + url, `designs=["memory-sticky"]`, "client.impl=ts-sdk", "client.profile=ts-sdk",
		"duration=10s", "drain=5s", "workload.clients=20", "workload.events_min=5", "workload.events_max=10"}
	sc := load(t, "steady", sets)
	res, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Report.Designs[0]
	tt := d.Totals
	t.Logf("%d calls, %d completed, %d delivered, %d lost, %d receipts", tt.Calls, tt.CallsCompleted, tt.EventsDelivered, tt.EventsLost, len(res.Histories[d.Name].Receipts))
	if d.Profile != "ts-sdk" || tt.CallsCompleted < 20 || tt.CallsCompleted != tt.Calls || tt.EventsLost != 0 || tt.EventsDelivered == 0 {
		t.Errorf("against --target: profile %s, %+v", d.Profile, tt)
	}
}
