package distributed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

var bin string

func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }

const scenarioName = "shards"

func scenarioFile(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("testdata/shards.toml")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// up is a running `stormsim up --no-schedule`.
type up struct {
	cmd   *exec.Cmd
	state string        // its state file
	logs  string        // its logs folder
	done  chan struct{} // closed when up has exited
	pids  []int         // every process it started, from its state file
}

// startUp starts stormsim up on the test scenario's design and waits for
// its state file.
func startUp(t *testing.T, dir string, sets ...string) *up {
	t.Helper()
	u := &up{state: filepath.Join(dir, "up-state.json"), logs: filepath.Join(dir, "up-logs"), done: make(chan struct{})}
	u.cmd = exec.Command(bin, "up", scenarioName, "--file", scenarioFile(t), "--design", "redis-shared",
		"--no-schedule", "--state", u.state, "--logs", u.logs)
	for _, kv := range sets {
		u.cmd.Args = append(u.cmd.Args, "--set", kv)
	}
	out, err := u.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	u.cmd.Stderr = &stderr
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { u.cmd.Wait(); close(u.done) }()
	t.Cleanup(func() {
		u.cmd.Process.Kill()
		<-u.done
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "endpoint: ") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	var st struct {
		Endpoint string `json:"endpoint"`
		Redis    *struct {
			PID int `json:"pid"`
		} `json:"redis"`
		Replicas []struct {
			PID int `json:"pid"`
		} `json:"replicas"`
	}
	b, err := os.ReadFile(u.state)
	if err != nil || json.Unmarshal(b, &st) != nil || st.Endpoint == "" {
		t.Fatalf("stormsim up gave no state file (%v); its stderr: %s", err, stderr.String())
	}
	for _, r := range st.Replicas {
		u.pids = append(u.pids, r.PID)
	}
	if st.Redis != nil {
		u.pids = append(u.pids, st.Redis.PID)
	}
	return u
}

// stop interrupts up as a terminal's Ctrl-C would and waits for it to
// write its counters and go; no process it started may be left.
func (u *up) stop(t *testing.T) {
	t.Helper()
	u.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-u.done:
	case <-time.After(60 * time.Second):
		t.Fatal("stormsim up did not stop within 60 s of SIGINT")
	}
	b, err := os.ReadFile(filepath.Join(u.logs, "up.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("stopped: every process stormsim started is gone")) {
		t.Fatalf("up.log does not end with the stop:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(u.logs, "counts.json")); err != nil {
		t.Fatalf("up left no counters: %v", err)
	}
	for _, p := range u.pids {
		if redisd.Alive(p) {
			t.Errorf("process %d that up started outlived it", p)
		}
	}
}

// runShards runs n shards as n processes, each told its index by
// JOB_COMPLETION_INDEX as a Kubernetes Indexed Job tells its pods, from one
// start time a few seconds ahead.
func runShards(t *testing.T, u *up, n int, out string, env func(i int) []string, sets ...string) {
	t.Helper()
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range n {
		cmds[i] = exec.CommandContext(ctx, bin, "run", scenarioName, "--file", scenarioFile(t), "--engine", "live",
			"--shards", fmt.Sprint(n), "--up", u.state, "--out", out, "--quiet")
		for _, kv := range sets {
			cmds[i].Args = append(cmds[i].Args, "--set", kv)
		}
		cmds[i].Env = append(os.Environ(), shard.EnvIndex+"="+fmt.Sprint(i), shard.EnvStartAt+"="+start)
		if env != nil {
			cmds[i].Env = append(cmds[i].Env, env(i)...)
		}
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("shard %d of %d: %v\n%s", i, n, err, outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// merge runs stormsim merge and returns its exit code and output.
func merge(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"merge", "--quiet"}, args...)...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), b.String()
}

// merged reads the report merge wrote under out.
func merged(t *testing.T, out string) *report.Report {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, scenarioName, "*-seed*", "report.json"))
	if len(files) != 1 {
		t.Fatalf("want one merged report under %s, found %v", out, files)
	}
	if latest := filepath.Join(out, scenarioName, "latest", "report.json"); !sameFile(files[0], latest) {
		t.Errorf("%s is not the merged run %s", latest, files[0])
	}
	return readReport(t, files[0])
}

func sameFile(a, b string) bool {
	x, err1 := os.Stat(a)
	y, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}

func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

func readMeta(t *testing.T, dir string) *shard.Meta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, shard.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var m shard.Meta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// Acceptance 1 and 3 of sharded runs: three shards as three processes
// against one stormsim up --no-schedule, a client drop on every shard and
// the restarts applied by shard 0 alone; merge joins them into one report
// whose totals are the sums of the shards' and that reconciles with up's
// counters; an incomplete or inconsistent set makes merge exit 2, naming
// the problem.
func TestShardsMerge(t *testing.T) {
	dir := t.TempDir()
	u := startUp(t, dir)
	out := filepath.Join(dir, "run")
	// Shard 2's host reads as saturated (the live engine's test hook adds
	// lateness to its samples alone; it changes nothing the clients do):
	// the merged run then gives no verdict, exit 97, unless
	// --no-saturation-check, and the shards block names the shard.
	runShards(t, u, 3, out, func(i int) []string {
		if i == 2 {
			return []string{"STORMSIM_INJECT_LATENESS=2s"}
		}
		return nil
	})
	mout := filepath.Join(dir, "merged")
	mergeWhileUpServes(t, u, dir, out, mout)

	var parts []*report.Report
	var metas []*shard.Meta
	for i := range 3 {
		sd := filepath.Join(out, shard.Name(i, 3))
		metas = append(metas, readMeta(t, sd))
		parts = append(parts, readReport(t, filepath.Join(sd, "report.json")))
		if _, err := os.Stat(filepath.Join(sd, shard.DoneFile)); err != nil {
			t.Errorf("shard %d: no done marker: %v", i, err)
		}
	}
	if code, text := merge(t, "--out", filepath.Join(dir, "saturated"), "--up-logs", u.logs, out); code != 97 {
		t.Errorf("merge of a set with a saturated shard: exit %d, want 97:\n%s", code, text)
	}
	m := merged(t, mout)
	for _, f := range []string{"report.json", "summary.md", "series.csv", "report.html", "results.bin", "history.json.gz"} {
		if _, err := os.Stat(filepath.Join(mout, scenarioName, "latest", f)); err != nil {
			t.Errorf("merge wrote no %s: %v", f, err)
		}
	}
	if len(m.Designs) != 1 {
		t.Fatalf("merged report has %d designs", len(m.Designs))
	}
	mt := m.Designs[0].Totals

	// Every client ran in exactly one shard, and the shards' totals add
	// up to the merged run's: the merge lost or doubled no history.
	clients := 0
	sum := map[string]int64{}
	for i, p := range parts {
		tt := p.Designs[0].Totals
		clients += metas[i].Clients
		for k, v := range map[string]int64{"calls": tt.Calls, "calls_completed": tt.CallsCompleted, "calls_failed": tt.CallsFailed,
			"events_delivered": tt.EventsDelivered, "events_duplicated": tt.EventsDuplicated, "drops": tt.Drops, "reconnects": tt.Reconnects,
			"resumes": tt.Resumes, "requests": tt.Requests, "http_404": tt.HTTP404} {
			sum[k] += v
		}
	}
	got := map[string]int64{"calls": mt.Calls, "calls_completed": mt.CallsCompleted, "calls_failed": mt.CallsFailed,
		"events_delivered": mt.EventsDelivered, "events_duplicated": mt.EventsDuplicated, "drops": mt.Drops, "reconnects": mt.Reconnects,
		"resumes": mt.Resumes, "requests": mt.Requests, "http_404": mt.HTTP404}
	for k, v := range sum {
		if got[k] != v {
			t.Errorf("merged %s = %d, the shards' sum is %d", k, got[k], v)
		}
	}
	if clients != 150 {
		t.Errorf("the shards ran %d clients between them, want the scenario's 150", clients)
	}
	if mt.Calls < 300 || mt.EventsDelivered < 3000 || mt.Resumes == 0 || mt.Drops == 0 {
		t.Errorf("too little happened to judge: %+v", mt)
	}
	// Sanity (identities of the checker, not evidence): conservation.
	if mt.EventsExpected != mt.EventsDelivered+mt.EventsLost+mt.EventsPending || mt.Calls != mt.CallsCompleted+mt.CallsFailed+mt.CallsPending {
		t.Errorf("conservation does not hold on the merged run: %+v", mt)
	}
	// The evidence: the union of the clients' histories against up's own
	// production logs and counters, sources the shards never read.
	rec := m.Designs[0].Reconciliation
	if rec == nil || !rec.OK || rec.NotReconcilable != "" || rec.CallsChecked != mt.Calls {
		t.Errorf("the merged run does not reconcile with up's counters: %+v", rec)
	}
	if m.Designs[0].EventsProduced == nil || *m.Designs[0].EventsProduced == 0 {
		t.Error("the merged run has no events produced from up's counters")
	}

	// The faults: the scenario's three, recorded once in the merged
	// report; the restarts applied by shard 0 alone (up's log shows each
	// once), the client drop by every shard to its own clients.
	if len(m.Faults) != 3 {
		t.Errorf("merged report lists %d faults, want the scenario's 3: %+v", len(m.Faults), m.Faults)
	}
	for i, mt := range metas {
		if (i == 0) != (len(mt.FaultsApplied) > 0) {
			t.Errorf("shard %d applied %v", i, mt.FaultsApplied)
		}
		log, _ := os.ReadFile(filepath.Join(out, shard.Name(i, 3), "live.log"))
		if !bytes.Contains(log, []byte("client-drop: ")) || bytes.Contains(log, []byte("client-drop: 0 streams")) {
			t.Errorf("shard %d dropped none of its clients' streams:\n%s", i, log)
		}
	}
	upLog, _ := os.ReadFile(filepath.Join(u.logs, "up.log"))
	for _, want := range []string{"on demand: replica 0 drains", "on demand: replica 1 killed"} {
		if n := bytes.Count(upLog, []byte(want)); n != 1 {
			t.Errorf("up's log has %q %d times, want once:\n%s", want, n, upLog)
		}
	}
	if m.Shards == nil || m.Shards.Count != 3 || len(m.Shards.Shards) != 3 {
		t.Fatalf("merged report's shards block: %+v", m.Shards)
	}
	for _, s := range m.Shards.Shards {
		if s.Late || s.NegativeLatencies != 0 {
			t.Errorf("shard %d: late %v (%.0f ms), %d negative latencies", s.Index, s.Late, s.StartOffsetMS, s.NegativeLatencies)
		}
		if saturated := len(s.Errors) > 0 && strings.HasPrefix(s.Errors[0], "host saturated: "); saturated != (s.Index == 2) {
			t.Errorf("shard %d: errors %q", s.Index, s.Errors)
		}
	}
	if m.Host == nil || !m.Host.Saturated {
		t.Errorf("the merged run's host block does not carry shard 2's saturation: %+v", m.Host)
	}
	// A merged report is a report like any other: compare reads it.
	cmp := exec.Command(bin, "compare", filepath.Dir(filepath.Join(mout, scenarioName, "latest", "report.json")), filepath.Join(mout, scenarioName, "latest"))
	if b, err := cmp.CombinedOutput(); err != nil {
		t.Errorf("compare of the merged run with itself: %v\n%s", err, b)
	}
	t.Logf("merged: %d calls, %d delivered, %d lost, %d resumes, %d 404s, %d events produced; reconciliation %+v",
		mt.Calls, mt.EventsDelivered, mt.EventsLost, mt.Resumes, mt.HTTP404, *m.Designs[0].EventsProduced, *rec)

	lateShard(t, out, dir)

	// Acceptance 3: each broken set makes merge exit 2, naming the problem.
	broken := func(name string, edit func(dir string)) string {
		d := filepath.Join(dir, "broken-"+name)
		if err := os.CopyFS(d, os.DirFS(out)); err != nil {
			t.Fatal(err)
		}
		edit(d)
		return d
	}
	editMeta := func(d string, i int, f func(m *shard.Meta)) {
		p := filepath.Join(d, shard.Name(i, 3), shard.MetaFile)
		m := readMeta(t, filepath.Dir(p))
		f(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		dir  string
		want string
	}{
		{"missing", broken("missing", func(d string) { os.RemoveAll(filepath.Join(d, shard.Name(2, 3))) }), "shard 2 of 3 is missing"},
		{"duplicate", broken("duplicate", func(d string) {
			os.CopyFS(filepath.Join(d, shard.Name(1, 3)+".run2"), os.DirFS(filepath.Join(d, shard.Name(1, 3))))
		}), "index 1 appears twice"},
		{"hash", broken("hash", func(d string) { editMeta(d, 1, func(m *shard.Meta) { m.ScenarioHash = "0123456789abcdef" }) }), "scenario hash differs"},
		{"start", broken("start", func(d string) { editMeta(d, 2, func(m *shard.Meta) { m.StartAt = m.StartAt.Add(time.Second) }) }), "start time differs"},
	} {
		code, text := merge(t, "--out", filepath.Join(dir, "out-"+c.name), c.dir)
		if code != 2 || !strings.Contains(text, c.want) {
			t.Errorf("%s: merge exit %d, want 2 naming %q:\n%s", c.name, code, c.want, text)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "out-"+c.name, "*", "*", "*")); len(files) != 0 {
			t.Errorf("%s: merge refused the set but wrote %v", c.name, files)
		}
	}
}

// mergeWhileUpServes merges the shards in out as docs/distributed.md's
// recipe does, while up still serves: a merge without --wait cannot
// reconcile (up writes counts.json when it stops) and says so on one line
// and in summary.md, which claims no counters; a merge --wait started
// before up stops waits for counts.json, says what it waits for, and
// reconciles once up is stopped. Its run, in mout, is the one the caller
// judges.
func mergeWhileUpServes(t *testing.T, u *up, dir, out, mout string) {
	t.Helper()
	early := filepath.Join(dir, "early")
	cmd := exec.Command(bin, "merge", "--out", early, "--up-logs", u.logs, "--no-saturation-check", "--no-charts", out)
	text, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(text), "reconciliation: not possible: counts.json is not in "+u.logs+" yet") ||
		!strings.Contains(string(text), "stop up (Ctrl-C)") {
		t.Errorf("merge while up serves: %v; want one line saying the reconciliation was not possible and to stop up:\n%s", err, text)
	}
	summary, _ := os.ReadFile(filepath.Join(early, scenarioName, "latest", "summary.md"))
	if bytes.Contains(summary, []byte("logs and counters")) || !bytes.Contains(summary, []byte("reconciliation: not possible: counts.json")) {
		t.Errorf("summary.md of a merge without up's counters claims them or does not say so:\n%s", summary)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wait := exec.CommandContext(ctx, bin, "merge", "--out", mout, "--wait", "2m", "--up-logs", u.logs, "--no-saturation-check", out)
	var stdout bytes.Buffer
	wait.Stdout = &stdout
	stderr, err := wait.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() && !strings.Contains(sc.Text(), "waiting up to") {
		said = append(said, sc.Text())
	}
	if !strings.Contains(sc.Text(), "counts.json, which stormsim up writes when it stops") {
		t.Errorf("merge --wait did not say it waits for up's counts.json:\n%s", strings.Join(said, "\n"))
	}
	u.stop(t)
	for sc.Scan() {
	}
	if err := wait.Wait(); err != nil || !strings.Contains(stdout.String(), "\nreconciliation: ok\n") {
		t.Fatalf("merge --wait once up stopped: %v; want reconciliation: ok:\n%s", err, stdout.String())
	}
	if summary, _ := os.ReadFile(filepath.Join(mout, scenarioName, "latest", "summary.md")); !bytes.Contains(summary, []byte("reconciliation: ok")) {
		t.Errorf("summary.md of the reconciled merge does not say so:\n%s", summary)
	}
}

// lateShard merges a copy of the set in out whose shard 1 says it started
// 2.5 s after the barrier: merge goes on, and the report marks the shard
// late and says so, rather than averaging it away.
func lateShard(t *testing.T, out, dir string) {
	t.Helper()
	d := filepath.Join(dir, "late")
	if err := os.CopyFS(d, os.DirFS(out)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, shard.Name(1, 3))
	m := readMeta(t, p)
	m.StartOffsetMS = 2500
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(p, shard.MetaFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	mout := filepath.Join(dir, "merged-late")
	if code, text := merge(t, "--out", mout, "--no-saturation-check", d); code != 0 {
		t.Fatalf("merge of a set with a late shard: exit %d:\n%s", code, text)
	}
	r := merged(t, mout)
	for _, s := range r.Shards.Shards {
		if s.Late != (s.Index == 1) {
			t.Errorf("shard %d: late %v at %.0f ms", s.Index, s.Late, s.StartOffsetMS)
		}
	}
	if n := strings.Join(r.Designs[0].Notes, "\n"); !strings.Contains(n, "shard 1 of 3") || !strings.Contains(n, "started 2500 ms after the start time") {
		t.Errorf("no note names the late shard:\n%s", n)
	}
}

// Acceptance 2 of sharded runs: the same scenario run by one process and
// split three ways agrees under the agreement rules (agree.Compare, with
// the scenario's tolerances), each judged by merge with up's logs. Each
// client's draws are keyed by its id, so only timing differs. The runs are
// longer and have more clients than TestShardsMerge's, for samples large
// enough that every compared row is conclusive (at 150 clients for 20 s,
// drops_resumed and reissued_per_100 were inconclusive).
func TestShardsAgree(t *testing.T) {
	sets := []string{"duration=60s", "workload.clients=300"}
	runMerged := func(n int) *report.Report {
		dir := t.TempDir()
		u := startUp(t, dir, sets...)
		out := filepath.Join(dir, "run")
		runShards(t, u, n, out, nil, sets...)
		u.stop(t)
		mout := filepath.Join(dir, "merged")
		if code, text := merge(t, "--out", mout, "--up-logs", u.logs, out); code != 0 {
			t.Fatalf("merge of %d shards: exit %d:\n%s", n, code, text)
		}
		return merged(t, mout)
	}
	one := runMerged(1)
	three := runMerged(3)
	f, err := scenario.Load(scenarioFile(t), &scenario.Options{Set: sets, Target: scenarioName})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario(scenarioName)
	a := agree.Compare(one, three, agree.TolerancesOf(sc))
	t.Logf("unsharded vs 3 shards: %s\n%s", a.Summary(), a.Markdown())
	if a.Failed > 0 || a.Inconclusive > 0 {
		t.Errorf("one process and three shards do not agree: %s", a.Summary())
	}
	o, th := one.Designs[0].Totals, three.Designs[0].Totals
	if o.Calls == 0 || th.Calls == 0 {
		t.Fatalf("empty runs: %d and %d calls", o.Calls, th.Calls)
	}
}
