package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/report"
)

// The five-calls scenario the simulator's TestFiveCallsOneSession runs.
const fiveCallsFile = "../../sim/testdata/five-calls.toml"

// skipSaturated gives no verdict on a live run whose host fell behind its
// own schedule (docs/live.md, "A saturated host"), as stormsim run does.
func skipSaturated(t *testing.T, r *report.Report) {
	t.Helper()
	if h := r.Host; h != nil && h.Saturated {
		t.Skipf("no verdict: the live run's host was saturated (%s)", strings.Join(h.Reasons, "; "))
	}
}

// TestFiveCallsOneSessionLive runs five-calls live: ten clients make five
// calls 3 s apart on one session, and the only replica is SIGKILLed between
// calls 2 and 3 and is back before call 3.
//   - The official go-sdk client whose application never reconnects: call 3
//     fails with mcp.ErrSessionMissing, and calls 4 and 5 fail without a
//     request (the ClientSession is closed): 30 of 50 calls fail.
//   - The same client, reconnected after a failed call: 10 of 50 fail.
//   - Native ts-sdk clients (the brain): calls 3, 4 and 5 are each sent with
//     the dead session id and get 404.
func TestFiveCallsOneSessionLive(t *testing.T) {
	abs, _ := filepath.Abs(fiveCallsFile)
	sets := []string{`designs=["sdk-never","sdk-on-failure","ts-never"]`}
	sc, err := loadFile(t, abs, "five-calls", sets)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Parallel: 3, Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	skipSaturated(t, out.Report)
	want := map[string]struct{ failed, http404 int64 }{"sdk-never": {30, 10}, "sdk-on-failure": {10, 10}, "ts-never": {30, 30}}
	for _, d := range out.Report.Designs {
		tt := d.Totals
		w := want[d.Name]
		if tt.Calls != 50 || tt.CallsFailed != w.failed || tt.HTTP404 != w.http404 {
			t.Errorf("%s: calls %d, failed %d, 404s %d; want 50, %d, %d", d.Name, tt.Calls, tt.CallsFailed, tt.HTTP404, w.failed, w.http404)
		}
	}
	// What each client's calls 3 to 5 (seq 2 to 4) sent and got.
	perCall := func(h *history.History) map[[2]int32][]history.Request {
		m := map[[2]int32][]history.Request{}
		for _, q := range h.Requests {
			if q.Seq >= 0 {
				k := [2]int32{q.Client, q.Seq}
				m[k] = append(m[k], q)
			}
		}
		return m
	}
	t.Run("GoSDKNever", func(t *testing.T) {
		h := out.Histories["sdk-never"]
		reqs := perCall(h)
		for _, c := range h.Calls {
			k := [2]int32{c.Client, c.Seq}
			switch c.Seq {
			case 2:
				if c.Outcome != clients.Failed || !strings.Contains(c.Err, mcp.ErrSessionMissing.Error()) {
					t.Errorf("client %d call 3: %v %q, want failed with %q", c.Client, c.Outcome, c.Err, mcp.ErrSessionMissing)
				}
			case 3, 4:
				if c.Outcome != clients.Failed || len(reqs[k]) != 0 {
					t.Errorf("client %d call %d: %v after %d requests (%q), want failed with none", c.Client, c.Seq+1, c.Outcome, len(reqs[k]), c.Err)
				}
			}
		}
	})
	t.Run("GoSDKOnFailure", func(t *testing.T) {
		h := out.Histories["sdk-on-failure"]
		reqs := perCall(h)
		for _, c := range h.Calls {
			if c.Seq != 3 {
				continue
			}
			// Call 4 connects a new session first: initialize, counted as
			// a reconnect.
			k, init := [2]int32{c.Client, c.Seq}, false
			for _, q := range reqs[k] {
				init = init || q.Kind == clients.ReqInitialize && q.Reconnect && q.Status == 200
			}
			if c.Outcome != clients.Completed || !init {
				t.Errorf("client %d call 4: %v (%q), re-initialised %v; want completed on a new session", c.Client, c.Outcome, c.Err, init)
			}
		}
	})
	t.Run("TSNever", func(t *testing.T) {
		h := out.Histories["ts-never"]
		reqs := perCall(h)
		n := 0
		for _, c := range h.Calls {
			if c.Seq < 2 {
				continue
			}
			q := reqs[[2]int32{c.Client, c.Seq}]
			if c.Outcome != clients.Failed || len(q) != 1 || q[0].Kind != clients.ReqCall || q[0].Status != 404 || !q[0].Session {
				t.Errorf("client %d call %d: %v after %+v, want failed after one tools/call answered 404", c.Client, c.Seq+1, c.Outcome, q)
				continue
			}
			n++
		}
		if n != 30 {
			t.Errorf("%d calls 3 to 5 were sent with the dead id and got 404, want 30 (3 per client)", n)
		}
	})
}

// TestFiveCallsTSSDKLive runs five-calls live with the official TypeScript
// SDK's clients (client.impl = "ts-sdk", profile ts-sdk):
//   - an application that never reconnects keeps its dead session: calls
//     3, 4 and 5 are each sent with the dead id and get 404 (30 of 50
//     calls fail, 3 tools/call 404s per client);
//   - one that reconnects after a failed call closes the old client (no
//     DELETE: the 404 said the session is gone) and connects anew before
//     call 4, counted as a reconnect: 10 of 50 fail;
//   - one that reconnects 4 s after the failure sends call 4 (3 s later)
//     with the dead id, and call 5 on a new session: 20 of 50 fail.
func TestFiveCallsTSSDKLive(t *testing.T) {
	needTS(t)
	abs, _ := filepath.Abs(fiveCallsFile)
	sets := []string{`designs=["tssdk-never","tssdk-on-failure","tssdk-4s"]`}
	sc, err := loadFile(t, abs, "five-calls", sets)
	if err != nil {
		t.Fatal(err)
	}
	// One design at a time: a Node process connecting its ten clients
	// takes a second or more on a loaded 2-core machine, which moves call
	// 2 towards the crash at 5 s.
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Parallel: 1, Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	skipSaturated(t, out.Report)
	// The premise: every client's call 2 ended before the replica was
	// killed. A call open then waits for its timeout, as the SDK leaves a
	// call whose resumes got 404 (resume_give_up = "wait"), and the counts
	// below no longer apply.
	for name, h := range out.Histories {
		var killed int64 = -1
		for _, f := range h.Faults {
			if strings.Contains(f.Kind, "killed") {
				killed = f.At
			}
		}
		if killed < 0 {
			t.Fatalf("%s: no replica was killed", name)
		}
		for _, c := range h.Calls {
			if c.Seq == 1 && (c.End < 0 || c.End > killed) {
				t.Fatalf("%s: client %d's call 2 ran from %v to %v, past the crash at %v: the Node clients started too slowly for the scenario's premise", name, c.Client, time.Duration(c.Start), time.Duration(c.End), time.Duration(killed))
			}
		}
	}
	want := map[string]int64{"tssdk-never": 30, "tssdk-on-failure": 10, "tssdk-4s": 20}
	for _, d := range out.Report.Designs {
		tt := d.Totals
		t.Logf("%s: calls %d, failed %d, 404s %d, reconnects %d, requests %d", d.Name, tt.Calls, tt.CallsFailed, tt.HTTP404, tt.Reconnects, tt.Requests)
		if tt.Calls != 50 || tt.CallsFailed != want[d.Name] {
			t.Errorf("%s: calls %d, failed %d; want 50, %d", d.Name, tt.Calls, tt.CallsFailed, want[d.Name])
		}
	}
	// The requests of each client's calls, by kind.
	perCall := func(h *history.History) map[[2]int32][]history.Request {
		m := map[[2]int32][]history.Request{}
		for _, q := range h.Requests {
			if q.Seq >= 0 {
				k := [2]int32{q.Client, q.Seq}
				m[k] = append(m[k], q)
			}
		}
		return m
	}
	kind := func(qs []history.Request, k clients.Req) []history.Request {
		var out []history.Request
		for _, q := range qs {
			if q.Kind == k {
				out = append(out, q)
			}
		}
		return out
	}
	t.Run("Never", func(t *testing.T) {
		h := out.Histories["tssdk-never"]
		reqs := perCall(h)
		per := map[int32]int{}
		for _, c := range h.Calls {
			if c.Seq < 2 {
				continue
			}
			q := kind(reqs[[2]int32{c.Client, c.Seq}], clients.ReqCall)
			if c.Outcome != clients.Failed || len(q) != 1 || q[0].Status != 404 || !q[0].Session || !strings.Contains(c.Err, "404") {
				t.Errorf("client %d call %d: %v (%q) after %+v, want failed after one tools/call answered 404", c.Client, c.Seq+1, c.Outcome, c.Err, q)
				continue
			}
			per[c.Client]++
		}
		for cl := int32(0); cl < 10; cl++ {
			if per[cl] != 3 {
				t.Errorf("client %d: %d tools/call answered 404, want 3", cl, per[cl])
			}
		}
	})
	t.Run("OnFailure", func(t *testing.T) {
		h := out.Histories["tssdk-on-failure"]
		reqs := perCall(h)
		for _, c := range h.Calls {
			k := [2]int32{c.Client, c.Seq}
			switch c.Seq {
			case 2:
				if q := kind(reqs[k], clients.ReqCall); c.Outcome != clients.Failed || len(q) != 1 || q[0].Status != 404 {
					t.Errorf("client %d call 3: %v (%q) after %+v, want failed after one tools/call answered 404", c.Client, c.Outcome, c.Err, q)
				}
			case 3:
				// A new session first: initialize, counted as a reconnect,
				// and no DELETE of the session the server said is gone.
				init := false
				for _, q := range kind(reqs[k], clients.ReqInitialize) {
					init = init || q.Reconnect && q.Status == 200
				}
				if del := kind(reqs[k], clients.ReqDelete); c.Outcome != clients.Completed || !init || len(del) != 0 {
					t.Errorf("client %d call 4: %v (%q), re-initialised %v, DELETEs %+v; want completed on a new session, no DELETE", c.Client, c.Outcome, c.Err, init, del)
				}
			case 4:
				if c.Outcome != clients.Completed {
					t.Errorf("client %d call 5: %v (%q), want completed", c.Client, c.Outcome, c.Err)
				}
			}
		}
	})
	t.Run("After4s", func(t *testing.T) {
		h := out.Histories["tssdk-4s"]
		reqs := perCall(h)
		for _, c := range h.Calls {
			k := [2]int32{c.Client, c.Seq}
			switch c.Seq {
			case 2, 3:
				if q := kind(reqs[k], clients.ReqCall); c.Outcome != clients.Failed || len(q) != 1 || q[0].Status != 404 || len(kind(reqs[k], clients.ReqInitialize)) != 0 {
					t.Errorf("client %d call %d: %v (%q) after %+v, want failed after one tools/call answered 404 in the old session", c.Client, c.Seq+1, c.Outcome, c.Err, reqs[k])
				}
			case 4:
				init := false
				for _, q := range kind(reqs[k], clients.ReqInitialize) {
					init = init || q.Reconnect && q.Status == 200
				}
				if c.Outcome != clients.Completed || !init {
					t.Errorf("client %d call 5: %v (%q), re-initialised %v; want completed on a new session", c.Client, c.Outcome, c.Err, init)
				}
			}
		}
	})
}

// TestFiveCallsAgreement runs five-calls under --engine both with the
// go-sdk clients, at 200 clients so that the rows can agree at all (at 10,
// one standard error of failed_per_100 is 10 points): the rows of failed
// calls and 404s must agree, for an application that never reconnects and
// for one that reconnects after a failure.
func TestFiveCallsAgreement(t *testing.T) {
	out := t.TempDir()
	abs, _ := filepath.Abs(fiveCallsFile)
	cmd := exec.Command(bin, "run", "five-calls", "--file", abs, "--engine", "both",
		"--set", `designs=["sdk-never","sdk-on-failure"]`, "--set", "workload.clients=200",
		"--parallel", "2", "--no-charts", "--quiet", "--out", out)
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 97 {
		t.Skipf("no verdict: the host was saturated:\n%s", msg)
	}
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == agree.ExitCode) {
		t.Fatalf("stormsim run: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(filepath.Join(out, "five-calls", "latest", "agreement.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a agree.Agreement
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range a.Rows {
		if r.Metric != "failed_per_100" && r.Metric != "http_404_per_100" {
			if r.Verdict == agree.Disagree {
				t.Logf("%s/%s disagrees: sim %s, live %s", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live))
			}
			continue
		}
		seen++
		t.Logf("%s/%s: sim %s, live %s, tolerance %g, n %d: %s", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live), r.Tolerance, r.N, r.Verdict)
		if r.Verdict != agree.Agree {
			t.Errorf("%s/%s: %s (sim %s, live %s, tolerance %g, n %d), want agree", r.Design, r.Metric, r.Verdict, fmtp(r.Sim), fmtp(r.Live), r.Tolerance, r.N)
		}
	}
	if seen != 4 {
		t.Errorf("%d rows of failed calls and 404s, want 4\n%s", seen, data)
	}
}

// TestOrphanErrorReachesGoSDK SIGKILLs one of two redis-shared replicas
// while the official go-sdk clients stream. Their resumes land on the other
// replica, which replays, follows the call until its lease runs out and
// ends the stream with the orphan error. The error carries the call's
// request id, so the SDK hands it to the call as a JSON-RPC error
// (mcp.CallTool returns it) instead of failing its whole connection with
// "failed to decode event"; the session stays usable, and the client's next
// call completes on it.
func TestOrphanErrorReachesGoSDK(t *testing.T) {
	abs, _ := filepath.Abs("testdata/orphan-sdk.toml")
	sc, err := loadFile(t, abs, "orphan-sdk", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs})
	if err != nil {
		t.Fatal(err)
	}
	skipSaturated(t, out.Report)
	h := out.Histories["shared-sdk-clients"]
	orphaned := map[int32]int32{} // client → the seq of its orphaned call
	for _, c := range h.Calls {
		if strings.Contains(c.Err, "failed to decode") || strings.Contains(c.Err, "invalid request") {
			t.Errorf("client %d call %d: %q: the SDK could not read a message", c.Client, c.Seq, c.Err)
		}
		if strings.Contains(c.Err, "call orphaned") {
			if c.Outcome != clients.Failed || c.Cause != clients.CauseError {
				t.Errorf("client %d call %d: %v cause %v, want failed by the JSON-RPC error", c.Client, c.Seq, c.Outcome, c.Cause)
			}
			if _, ok := orphaned[c.Client]; !ok {
				orphaned[c.Client] = c.Seq
			}
		}
	}
	// How many of the killed replica's clients resume in time to see it
	// depends on their jittered backoff against the lease (2 to 7 of 20
	// under the race detector): at least one must.
	if len(orphaned) == 0 {
		t.Fatalf("no client got the orphan error")
	}
	later := 0
	for _, c := range h.Calls {
		if s, ok := orphaned[c.Client]; ok && c.Seq > s && c.Outcome == clients.Completed {
			later++
		}
	}
	if later == 0 {
		t.Errorf("no client that got the orphan error completed a later call on its session")
	}
	t.Logf("%d clients got the orphan error; %d later calls of theirs completed", len(orphaned), later)
}
