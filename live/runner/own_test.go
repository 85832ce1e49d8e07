package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// ownServerBin builds examples/byo-server once per test binary, beside
// the stormsim binary, in the folder TestMain removes at the end.
func ownServerBin(t *testing.T) string { return testbin.Build(t, "../..", "./examples/byo-server") }

// processesRunning lists the live processes whose executable is exe, or
// whose command line mentions marker when it is not empty.
func processesRunning(exe, marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !redisd.Alive(pid) {
			continue
		}
		if p, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe != "" && p == exe {
			out = append(out, pid)
			continue
		}
		if marker != "" {
			if cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.Contains(string(cl), marker) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func loadFile(t *testing.T, file, name string, sets []string) (*scenario.Scenario, error) {
	t.Helper()
	f, err := scenario.Load(file, &scenario.Options{Set: sets, Target: name})
	if err != nil {
		return nil, err
	}
	return f.Scenario(name)
}

// TestOwnServerByoExample runs byo-example live with its go-sdk server as
// the command: after the hard restart of replica 1 every session that lived
// there gets 404 on its next request, as the real SDK answers, and the calls
// the client-drop fault cut resume with 200 and lose nothing. The run is
// judged from the client side, and no server process outlives it.
func TestOwnServerByoExample(t *testing.T) {
	exe := ownServerBin(t)
	file, _ := filepath.Abs("../../examples/byo-example.toml")
	sets := []string{"server.command=" + strconv.Quote(exe+" -port {port}")}
	sc, err := loadFile(t, file, "byo-example", sets)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: file, Set: sets, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(log.String())
	d := out.Report.Designs[0]
	h := out.Histories[d.Name]
	tt := d.Totals
	t.Logf("calls %d completed %d failed %d, 404s %d, resumes %d, drops %d, lost %d, delivered %d/%d",
		tt.Calls, tt.CallsCompleted, tt.CallsFailed, tt.HTTP404, tt.Resumes, tt.Drops, tt.EventsLost, tt.EventsDelivered, tt.EventsExpected)
	if d.Judged != report.JudgedClientSide || len(d.Unknown) == 0 || h.HaveProduction || len(h.Produced) != 0 {
		t.Errorf("judged %q, unknown %v, HaveProduction %v, %d production lines: want a client-side judgement", d.Judged, d.Unknown, h.HaveProduction, len(h.Produced))
	}
	if tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
		t.Errorf("conservation: %+v", tt)
	}
	for _, m := range []string{"events_unproduced", "events_wasted"} {
		if v, _ := d.Metric(m); v != nil {
			t.Errorf("%s = %v: a client-side judgement cannot know it", m, *v)
		}
	}
	// The calls re-issued after the restart's 404s get their progress
	// values again on a new attempt: redone, seen from the client side.
	if (tt.EventsRedone > 0) != (tt.CallsReissued > 0) {
		t.Errorf("redone %d with %d calls re-issued: want redone exactly when calls were re-issued", tt.EventsRedone, tt.CallsReissued)
	}

	// The hard restart: sessions answered by replica 1 before the kill get
	// 404 on their first session request after it.
	var kill int64 = -1
	for _, a := range h.Faults {
		if strings.Contains(a.Kind, "stop replica 1") || (strings.Contains(a.Kind, "replica 1") && strings.Contains(a.Kind, "kill")) {
			kill = a.At
		}
	}
	if kill < 0 {
		t.Fatalf("no hard stop of replica 1 among the applied faults: %+v", h.Faults)
	}
	onSlot := map[string]bool{}
	for _, q := range h.Requests {
		if q.Replica == 1 && q.Answered < kill && q.SessionID != "" && q.Status/100 == 2 {
			onSlot[q.SessionID] = true
		}
		if q.Kind == clients.ReqDelete && q.Answered < kill {
			delete(onSlot, q.SessionID)
		}
	}
	first := map[string]history.Request{}
	for _, q := range h.Requests {
		if q.Session && onSlot[q.SessionID] && q.Sent >= kill {
			if f, ok := first[q.SessionID]; !ok || q.Sent < f.Sent {
				first[q.SessionID] = q
			}
		}
	}
	n404 := 0
	for _, q := range first {
		if q.Status == 404 {
			n404++
		}
	}
	t.Logf("hard restart: %d sessions of replica 1 came back, %d of them got 404", len(first), n404)
	if len(first) == 0 || n404 != len(first) || tt.HTTP404 == 0 {
		t.Errorf("after the hard restart: %d sessions came back, %d got 404 (report: %d 404s); want every one", len(first), n404, tt.HTTP404)
	}

	// The client drop: calls whose only drop was the fault, and that ended
	// before the kill, resumed with 200 and lost nothing.
	type ck = [2]int32
	drops := map[ck][]history.Drop{}
	for _, x := range h.Drops {
		drops[ck{x.Client, x.Seq}] = append(drops[ck{x.Client, x.Seq}], x)
	}
	resumed := map[ck]bool{}
	for _, q := range h.Requests {
		if q.Kind == clients.ReqResume && q.Status == 200 {
			resumed[ck{q.Client, q.Seq}] = true
		}
	}
	recv := map[ck]map[int32]bool{}
	for _, r := range h.Receipts {
		k := ck{r.Client, r.Seq}
		if recv[k] == nil {
			recv[k] = map[int32]bool{}
		}
		if r.Index >= 1 {
			recv[k][r.Index] = true
		}
	}
	cut, ok := 0, 0
	for _, c := range h.Calls {
		k := ck{c.Client, c.Seq}
		ds := drops[k]
		if len(ds) != 1 || ds[0].Cause != history.DropFault || c.End < 0 || c.End >= kill {
			continue
		}
		cut++
		if resumed[k] && c.Outcome == clients.Completed && len(recv[k]) == int(c.E) {
			ok++
		} else {
			t.Errorf("call %v cut by the client drop: resumed %v, outcome %v, %d of %d events", k, resumed[k], c.Outcome, len(recv[k]), c.E)
		}
	}
	t.Logf("client drop: %d calls cut, %d resumed with every event", cut, ok)
	if cut < 5 {
		t.Errorf("only %d calls were cut by the client drop; the test judges too few", cut)
	}
	if tt.Resumes == 0 {
		t.Error("the report shows no resumes")
	}
	if left := processesRunning(exe, ""); len(left) > 0 {
		t.Errorf("server processes left running: %v", left)
	}
}

// failing is a scenario for a server command that fails: one replica, a
// short run.
const failing = `
[scenario.f]
duration = "6s"
drain = "2s"
replicas = 1
designs = ["memory-sticky"]
[scenario.f.server]
command = %s
ready_timeout = "2s"
[scenario.f.workload]
clients = 10
arrival_rate = 10
think = "200ms"
events_min = 5
events_max = 10
`

// TestOwnServerFailures: a server command that exits at once or never
// becomes ready is a clear error within its ready timeout; one that crashes
// in the middle of a run is reported (a note, a fault mark, an applied
// event), the run ends at its horizon, and nothing is left running.
func TestOwnServerFailures(t *testing.T) {
	exe := ownServerBin(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	marker := "stormsim-own-failure-" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name    string
		command string
		wantErr []string // nil: the run succeeds
	}{
		// exits at once, with a message on stderr
		{"exits", `sh -c "echo boom-{port} >&2; exit 3"`, []string{"exited before it was ready", "exit status 3", "boom-"}},
		// listens nowhere, and leaves a child in its process group
		{"never-ready", `sleep 300 & echo $$ $! >> ` + pidFile + `; exec sleep 301 # ` + marker + ` {port}`,
			[]string{"did not answer GET /mcp", "within the ready timeout (2s)"}},
		// serves, then is killed 3 s in (a crash from outside: the OOM killer)
		{"crashes", `(sleep 3; kill -KILL $$) & echo $! >> ` + pidFile + `; exec ` + exe + ` -port {port}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".toml")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(failing, strconv.Quote(tc.command))), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := loadFile(t, file, "f", nil)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := Run(context.Background(), sc, &Options{Bin: bin, File: file})
			wall := time.Since(start)
			t.Logf("%s: %v after %v", tc.name, err, wall.Round(time.Millisecond))
			// Not a speed test: a run that waited for the 300 s sleeps would
			// be hung on the command's children, and a minute tells the two
			// apart on a loaded machine.
			if limit := wait.For(time.Minute); wall > limit {
				t.Errorf("took %v, want well under the 300 s its children sleep (at most %v)", wall, limit)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				d := out.Report.Designs[0]
				crash := false
				for _, n := range d.Notes {
					if strings.Contains(n, "replica 0 (pid") && strings.Contains(n, "exited unexpectedly: signal: killed") {
						crash = true
					}
				}
				marked := false
				for _, f := range out.Report.Faults {
					marked = marked || (f.Kind == "exit" && f.AtS > 2 && f.AtS < 7) // killed about 3 s in
				}
				applied := false
				for _, a := range out.Histories[d.Name].Faults {
					applied = applied || strings.HasPrefix(a.Kind, "exit: replica 0")
				}
				t.Logf("notes %q; faults %+v; calls %d, failed %d, 503s %d", d.Notes, out.Report.Faults, d.Totals.Calls, d.Totals.CallsFailed, d.Totals.HTTP503)
				if !crash || !marked || !applied {
					t.Errorf("crash in a note %v, on the charts %v, among the applied faults %v: want all three", crash, marked, applied)
				}
				if d.Totals.HTTP503 == 0 {
					t.Error("no 503 after the only replica died")
				}
			}
			if left := processesRunning(exe, marker); len(left) > 0 {
				t.Errorf("processes left running: %v", left)
			}
			data, _ := os.ReadFile(pidFile)
			for _, f := range strings.Fields(string(data)) {
				if pid, _ := strconv.Atoi(f); redisd.Alive(pid) {
					t.Errorf("a child of the server command, pid %d, is still running", pid)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// TestOwnServerTarget aims the clients at a running `stormsim up` with
// server.url (what --target sets): a process fault is refused with a clear
// message when the scenario is loaded; client drops still work and are
// reported; the tool is found in tools/list.
func TestOwnServerTarget(t *testing.T) {
	t.Parallel() // make test: see the Makefile's note on the live stage
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	up := exec.CommandContext(ctx, bin, "up", "steady", "--design", "memory-sticky", "--file", abs, "--logs", t.TempDir())
	up.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	up.Cancel = func() error { return up.Process.Signal(syscall.SIGTERM) }
	stdout, _ := up.StdoutPipe()
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Wait() //nolint:errcheck // the exit after SIGTERM
	defer cancel()  // up stops every process it started
	endpoint := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "endpoint: "); ok {
				endpoint <- u
			}
		}
	}()
	var url string
	select {
	case url = <-endpoint:
	case <-time.After(wait.For(wait.Ready)):
		t.Fatalf("waited %v for stormsim up to print its endpoint; it did not", wait.For(wait.Ready))
	}
	target := []string{"server.url=" + strconv.Quote(url), `server.command=""`}

	// byo-example restarts a replica: refused.
	byo, _ := filepath.Abs("../../examples/byo-example.toml")
	_, err := loadFile(t, byo, "byo-example", target)
	t.Logf("refusal: %v", err)
	if err == nil || !strings.Contains(err.Error(), `--set server.url: faults[1] (kind "restart") needs control of the server's processes`) ||
		!strings.Contains(err.Error(), "fault_hook.restart") {
		t.Errorf("byo-example with a URL: got %v, want faults[1] refused, naming --set server.url and fault_hook.restart", err)
	}

	// A client drop runs, against the URL directly, and a restart with a
	// fault_hook runs the hook instead.
	dir := t.TempDir()
	file := filepath.Join(dir, "t.toml")
	os.WriteFile(file, []byte(`
[scenario.t]
duration = "10s"
drain = "4s"
designs = ["memory-sticky"]
[scenario.t.workload]
clients = 40
arrival_rate = 40
think = "300ms"
events_min = 15
events_max = 25
[[scenario.t.faults]]
kind = "client-drop"
at = "5s"
fraction = 0.5
away = "300ms"
[[scenario.t.faults]]
kind = "restart"
replica = 1
at = "2s"
[scenario.t.server.fault_hook]
restart = "echo $STORMSIM_FAULT $STORMSIM_REPLICA > hooked"
`), 0o644)
	sc, err := loadFile(t, file, "t", target)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(ctx, sc, &Options{Bin: bin, File: file, Set: target})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Report.Designs[0]
	h := out.Histories[d.Name]
	tt := d.Totals
	faultDrops := 0
	for _, x := range h.Drops {
		if x.Cause == history.DropFault {
			faultDrops++
		}
	}
	t.Logf("calls %d, fault drops %d, resumes %d, lost %d, 404s %d; notes %q", tt.Calls, faultDrops, tt.Resumes, tt.EventsLost, tt.HTTP404, d.Notes)
	if faultDrops < 5 || tt.Resumes < int64(faultDrops)/2 || tt.EventsLost != 0 || tt.HTTP404 != 0 {
		t.Errorf("client drop at a URL: %d fault drops, %d resumes, %d lost, %d 404s: want drops resumed, none lost", faultDrops, tt.Resumes, tt.EventsLost, tt.HTTP404)
	}
	if d.Judged != report.JudgedClientSide || !strings.Contains(strings.Join(d.Notes, " "), "tool stream") {
		t.Errorf("judged %q, notes %q: want client-side, with the tool found in tools/list", d.Judged, d.Notes)
	}
	applied := false
	for _, a := range h.Faults {
		applied = applied || a.Kind == "client-drop"
	}
	if !applied {
		t.Errorf("the client drop is not among the applied faults: %+v", h.Faults)
	}
	hooked, _ := os.ReadFile(filepath.Join(dir, "hooked"))
	label := ""
	for _, f := range out.Report.Faults {
		if f.Kind == "restart" {
			label = f.Label
		}
	}
	t.Logf("hook wrote %q; chart label %q", hooked, label)
	if strings.TrimSpace(string(hooked)) != "restart 1" || !strings.Contains(label, "(fault_hook)") ||
		!regexp.MustCompile(`fault_hook for restart \(faults\[1\]\) ran at 2\.[0-9] s`).MatchString(strings.Join(d.Notes, " ")) {
		t.Errorf("the restart's fault_hook: wrote %q, chart label %q, notes %q", hooked, label, d.Notes)
	}
}

// TestOwnServerNoProgress: a server that sends no progress notifications
// gets a note that only completion and latency can be judged, and the run
// still reports its calls and latency.
func TestOwnServerNoProgress(t *testing.T) {
	exe := ownServerBin(t)
	file := filepath.Join(t.TempDir(), "n.toml")
	cmd := strconv.Quote(exe + " -port {port} -progress=false")
	if err := os.WriteFile(file, []byte(strings.Replace(strings.Replace(failing, "[scenario.f]", "[scenario.f]\n", 1), "%s", cmd, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := loadFile(t, file, "f", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: file})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Report.Designs[0]
	t.Logf("calls %d completed %d, delivered %d of %d; notes %q", d.Totals.Calls, d.Totals.CallsCompleted, d.Totals.EventsDelivered, d.Totals.EventsExpected, d.Notes)
	if !strings.Contains(strings.Join(d.Notes, " "), "sent no progress notifications") || d.Totals.CallsCompleted == 0 || d.HTTP == nil || d.HTTP.Requests == 0 {
		t.Errorf("notes %q, %d calls completed, http %v: want the note, completed calls and the HTTP summary", d.Notes, d.Totals.CallsCompleted, d.HTTP)
	}
	// The event counts are unknown: n/a to thresholds and in the table,
	// while calls, 404s and latency are still judged.
	for _, m := range []string{"events_lost", "lost_fraction", "events_delivered", "lost_abandoned"} {
		if v, ok := d.Metric(m); !ok || v != nil {
			t.Errorf("%s reads %v, want n/a", m, v)
		}
	}
	for _, m := range []string{"calls_completed", "http_404", "recovery_latency_ms_p50"} {
		if _, ok := d.Metric(m); !ok || d.IsUnknown(m) {
			t.Errorf("%s is unknown", m)
		}
	}
	if _, rows := out.Report.TableRows(); rows[0][8] != "n/a" || rows[0][9] != "n/a" {
		t.Errorf("table row %q: want lost n/a", rows[0])
	}
}

// neverReady is a scenario whose server command comes up once per slot and
// never again: a restarted replica only sleeps (%s: ready_timeout).
const neverReady = `
[scenario.nr]
duration = "6s"
drain = "3s"
replicas = 2
designs = ["memory-sticky"]
[scenario.nr.server]
command = 'if [ -e started-{replica} ]; then echo warming the cache forever; exec sleep 300; fi; touch started-{replica}; exec %s -port {port} # %s'
ready_timeout = "%s"
[scenario.nr.workload]
clients = 10
arrival_rate = 10
think = "200ms"
events_min = 5
events_max = 10
event_rate = 20
[[scenario.nr.faults]]
kind = "restart"
replica = 1
at = "2s"
downtime = "500ms"
graceful = false
[scenario.nr.expect.memory-sticky]
calls_completed_min = 1
`

// TestOwnServerNeverReadyAgain: a replica a restart brings back that never
// becomes ready, whether its ready_timeout runs out during the run or the
// run ends first, is reported and not fatal: stormsim run exits 0 (no
// threshold fails) and writes a complete report with the note and its
// last output, replicas_never_ready = 1, the slot down from the fault to
// the end in series.replicas_down and a never-ready band; nothing it
// started is left running.
func TestOwnServerNeverReadyAgain(t *testing.T) {
	exe := ownServerBin(t)
	marker := "stormsim-never-ready-" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct{ name, timeout string }{
		{"ready-timeout", "2s"}, // gives up 2 s after the start, at 4.5 s
		{"run-ends", "60s"},     // still waiting when the run ends
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "nr.toml")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(neverReady, exe, marker, tc.timeout)), 0o644); err != nil {
				t.Fatal(err)
			}
			outDir := filepath.Join(dir, "out")
			cmd := exec.Command(bin, "run", "nr", "--file", file, "--engine", "live", "--out", outDir, "--quiet", "--no-saturation-check")
			msg, err := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			t.Logf("exit %d: %s", code, msg)
			if err != nil || code != 0 {
				t.Fatalf("stormsim run exited %d (%v): want 0", code, err)
			}
			run := filepath.Join(outDir, "nr", "latest")
			paths := []string{filepath.Join(run, "report.json")}
			for _, f := range []string{"summary.md", "series.csv", "report.html"} {
				if _, err := os.Stat(filepath.Join(run, f)); err != nil {
					t.Errorf("the run folder lacks %s: %v", f, err)
				}
			}
			r, err := report.Read(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			d := r.Designs[0]
			note := ""
			for _, n := range d.Notes {
				if strings.HasPrefix(n, "replica 1 never became ready again (last output: warming the cache forever)") {
					note = n
				}
			}
			band := false
			for _, f := range r.Faults {
				band = band || (f.Kind == report.KindNeverReady && f.AtS == 2 && f.UntilS == 9)
			}
			down := d.Series.ReplicasDown
			t.Logf("note %q; replicas_never_ready %d; replicas_down %v; faults %+v; calls %d completed %d",
				note, d.ReplicasNeverReady, down, r.Faults, d.Totals.Calls, d.Totals.CallsCompleted)
			if note == "" || d.ReplicasNeverReady != 1 || !band {
				t.Errorf("note %q, replicas_never_ready %d, band %v: want all three", note, d.ReplicasNeverReady, band)
			}
			step := d.Series.StepS
			if len(down) == 0 || len(down) != len(d.Series.ActiveStreams) {
				t.Fatalf("series.replicas_down %v", down)
			}
			for i, v := range down {
				if want := int64(0); float64(i+1)*step > 2 {
					want = 1
					if v != want {
						t.Errorf("replicas_down[%d] = %d, want %d (the fault is at 2 s)", i, v, want)
					}
				} else if v != want {
					t.Errorf("replicas_down[%d] = %d, want %d (the fault is at 2 s)", i, v, want)
				}
			}
			raw, _ := os.ReadFile(paths[0])
			if !strings.Contains(string(raw), `"replicas_never_ready": 1`) {
				t.Error(`report.json does not hold "replicas_never_ready": 1`)
			}
			csv, _ := os.ReadFile(filepath.Join(run, "series.csv"))
			if !strings.Contains(strings.SplitN(string(csv), "\n", 2)[0], "replicas_down") {
				t.Error("series.csv has no replicas_down column")
			}
			if left := processesRunning(exe, marker); len(left) > 0 {
				t.Errorf("processes left running: %v", left)
			}
		})
	}
}
