package runner

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/report"
)

// hostileBin builds testdata/hostile once per test binary.
func hostileBin(t *testing.T) string { return testbin.Build(t, ".", "./testdata/hostile") }

// startHostile starts testdata/hostile, the program exe, in mode on
// loopback, with flags added, and returns its endpoint and how to stop it.
func startHostile(exe, mode, other string, flags ...string) (string, func(), error) {
	cmd := exec.Command(exe, append([]string{"-listen", "127.0.0.1:0", "-mode", mode, "-other", other}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	kill := func() { cmd.Process.Kill(); cmd.Wait() } //nolint:errcheck // killed on purpose
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		kill()
		return "", nil, fmt.Errorf("hostile %s: %q, %v", mode, line, err)
	}
	return "http://" + addr + "/mcp", kill, nil
}

// otherHost listens on 127.0.0.2, another host than the target's, and
// counts every request that reaches it.
func otherHost() (string, *atomic.Int64, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("127.0.0.2 is needed as another host on loopback: %w", err)
	}
	n := new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "the other host", http.StatusTeapot)
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	return "http://" + ln.Addr().String() + "/mcp", n, func() { srv.Close() }, nil
}

// hostileCase is one mode of testdata/hostile and what a run against it
// must show.
type hostileCase struct {
	mode string
	code int    // the exit code: 99 when calls failed (calls_failed_max = 0)
	note string // a note of the design names the cause
	// check, if set, looks at the design's totals.
	check func(t *testing.T, d *report.Design)
}

// noneCompleted: a result the server sent with the wrong id answers nothing.
func noneCompleted(t *testing.T, d *report.Design) {
	if d.Totals.CallsCompleted != 0 || d.Totals.Calls == 0 {
		t.Errorf("%d of %d calls counted completed: want 0 of some", d.Totals.CallsCompleted, d.Totals.Calls)
	}
}

// fewResumes: a retry hint that overflows cannot make the native clients
// resume faster than their backoff allows: the hint, clamped to 10
// minutes, outlasts the call, so at most one resume per call.
func fewResumes(t *testing.T, d *report.Design) {
	if d.Totals.Resumes > d.Totals.Calls {
		t.Errorf("%d resumes for %d calls: want at most one per call", d.Totals.Resumes, d.Totals.Calls)
	}
}

// hostileModes are the modes of testdata/hostile with what a run against
// each must show, with native and with go-sdk clients; severe ones run in
// make test, the others in make test-long (TestHostileLong). The native
// clients' notes name the protocol error or limit; a go-sdk client's own
// error is in the top causes of failed calls.
var hostileModes = []struct {
	severe bool
	cases  [3]hostileCase // native, go-sdk, ts-sdk
	sets   []string
}{
	{true, [3]hostileCase{
		{"wrong-id", 99, "responses with the id of another request (wrong id)", noneCompleted},
		{"wrong-id", 99, "failed calls, top causes", noneCompleted},
		{"wrong-id", 99, "failed calls, top causes", noneCompleted}}, nil},
	{true, [3]hostileCase{
		{"redirect-cross", 99, "redirect to another origin", noneCompleted},
		{"redirect-cross", 99, "redirect to another origin", noneCompleted},
		{"redirect-cross", 99, "redirect to another origin", noneCompleted}}, nil},
	{true, [3]hostileCase{
		{"retry-overflow", 99, "each was clamped to 10m0s", fewResumes},
		// The SDK reads the hint itself, and its ms-to-Duration product
		// wraps around: unclamped, it resumed at once, up to its 5 retries.
		// Its transport clamps the retry field before the SDK reads it.
		{"retry-overflow", 99, "each was clamped to 10m0s", fewResumes},
		// The proxy clamps the retry field it passes to Node: the SDK waits
		// a hint out with setTimeout, which takes a delay above 2^31-1 ms
		// as 1 ms (unclamped, 369 resumes for 20 calls in one run).
		{"retry-overflow", 99, "each was clamped to 10m0s", fewResumes}}, nil},
	{true, [3]hostileCase{
		{"huge-event", 99, "limits.event_bytes = 262144 was exceeded", noneCompleted},
		{"huge-event", 99, "failed calls, top causes", noneCompleted},
		// The proxy reads the stream it passes on within the limits.
		{"huge-event", 99, "limits.event_bytes = 262144 was exceeded", noneCompleted}}, nil},
	{true, [3]hostileCase{
		{"endless", 99, "limits.events_per_call = 1000 was exceeded", noneCompleted},
		// The SDK hands notifications over slower than the server sends
		// them: the call timeout may end the call first.
		{"endless", 99, "failed calls, top causes", noneCompleted},
		{"endless", 99, "limits.events_per_call = 1000 was exceeded", noneCompleted}}, nil},
	{true, [3]hostileCase{
		{"huge-body", 99, "limits.body_bytes = 262144 was exceeded", noneCompleted},
		{"huge-body", 99, "limits.body_bytes = 262144 was exceeded", noneCompleted},
		{"huge-body", 99, "limits.body_bytes = 262144 was exceeded", noneCompleted}}, nil},
	{false, [3]hostileCase{
		{"retry-fast", 99, "request rate: design memory-sticky", nil},
		{"retry-fast", 99, "request rate: design memory-sticky", nil},
		{"retry-fast", 99, "request rate: design memory-sticky", nil}}, nil},
	{false, [3]hostileCase{
		{"unsolicited", 99, "responses to a request never sent (unsolicited)", noneCompleted},
		{"unsolicited", 99, "failed calls, top causes", noneCompleted},
		{"unsolicited", 99, "failed calls, top causes", noneCompleted}}, nil},
	{false, [3]hostileCase{
		{"invalid-json", 99, "messages that are not valid JSON", noneCompleted},
		{"invalid-json", 99, "failed calls, top causes", noneCompleted},
		{"invalid-json", 99, "failed calls, top causes", noneCompleted}}, nil},
	{false, [3]hostileCase{
		{"redirect-same", 0, "hops within the origin were followed", nil},
		{"redirect-same", 0, "hops within the origin were followed", nil},
		{"redirect-same", 0, "hops within the origin were followed", nil}}, nil},
	{false, [3]hostileCase{
		{"huge-line", 99, "limits.line_bytes = 262144 was exceeded", noneCompleted},
		{"huge-line", 99, "failed calls, top causes", noneCompleted},
		{"huge-line", 99, "limits.line_bytes = 262144 was exceeded", noneCompleted}}, nil},
	{false, [3]hostileCase{
		{"huge-id", 99, "limits.id_bytes = 1024 was exceeded", noneCompleted},
		{"huge-id", 0, "", nil},        // the go-sdk client keeps only the last id, and the events are within MaxEventSize
		{"huge-id", 0, "", nil}}, nil}, // so does the TypeScript SDK's
	{false, [3]hostileCase{
		{"huge-session", 99, "limits.session_id_bytes = 1024 was exceeded", noneCompleted},
		{"huge-session", 99, "limits.session_id_bytes = 1024 was exceeded", noneCompleted},
		{"huge-session", 99, "limits.session_id_bytes = 1024 was exceeded", noneCompleted}}, nil},
	{false, [3]hostileCase{
		{"index-2e9", 0, "pointed past the call's asked length", nil},
		{"index-2e9", 0, "pointed past the call's asked length", nil},
		{"index-2e9", 0, "pointed past the call's asked length", nil}}, []string{`server.tool.progress="index"`}},
	{false, [3]hostileCase{
		// The native and go-sdk clients do not ask for gzip and read the
		// body as it came, within the body limit; the ts-sdk proxy refuses
		// a compressed body before Node sees it.
		{"gzip-bomb", 99, "limits.body_bytes = 262144 was exceeded", noneCompleted},
		{"gzip-bomb", 99, "limits.body_bytes = 262144 was exceeded", noneCompleted},
		{"gzip-bomb", 99, "limits.body_bytes = 262144 was exceeded", noneCompleted}}, nil},
}

// TestHostile runs the built stormsim, as a child process, against each of
// the six most severe modes of testdata/hostile with native and go-sdk
// clients, the twelve runs at once (they mostly wait): each run ends within
// duration + drain + 10 s, its peak RSS stays under 512 MiB, it exits as
// the mode says, a note names the cause, and no request reaches another
// host. A saturated host still gives a verdict (--no-saturation-check):
// what is judged here does not depend on timing.
func TestHostile(t *testing.T) {
	t.Parallel()
	testHostile(t, true)
}

// TestHostileLong is TestHostile for the other modes, and for every mode
// with ts-sdk clients, whose Node process must also stay under its heap
// limit (make test-long).
func TestHostileLong(t *testing.T) {
	testHostile(t, false)
}

func testHostile(t *testing.T, severe bool) {
	exe := hostileBin(t)
	type run struct {
		name string
		c    hostileCase
		impl string
		sets []string
		r    hostileRun
	}
	var runs []*run
	for _, m := range hostileModes {
		for i, impl := range []string{"native", "go-sdk", "ts-sdk"} {
			// make test: the severe modes with native and go-sdk clients;
			// make test-long: the rest, and every mode with ts-sdk clients.
			if (m.severe && impl != "ts-sdk") == severe {
				runs = append(runs, &run{name: m.cases[i].mode + "/" + impl, c: m.cases[i], impl: impl, sets: m.sets})
			}
		}
	}
	if !severe {
		needTS(t)
	}
	var wg sync.WaitGroup
	// As many runs at once as TestHostile makes, of which 3 with ts-sdk
	// clients: a Node process each, whose start-up on a loaded machine
	// counts in the run's time.
	sem, nodes := make(chan struct{}, 12), make(chan struct{}, 3)
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.impl == "ts-sdk" {
				nodes <- struct{}{}
				defer func() { <-nodes }()
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			r.r = runHostile(exe, r.c.mode, r.impl, t.TempDir(), r.sets)
		}()
	}
	wg.Wait()
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) { r.r.judge(t, r.c, r.impl) })
	}
}

// hostileRun is what one run of stormsim against testdata/hostile gave.
type hostileRun struct {
	err     error // the run could not be made or read
	code    int
	took    time.Duration
	rss     int64 // peak, bytes
	nodeRSS int64 // ts-sdk: the peak of the clients' Node process, bytes
	reached int64 // requests that reached the other host
	stderr  string
	d       *report.Design
	host    *report.Host
}

// runHostile starts testdata/hostile in mode, and the other host, and
// runs stormsim against it with impl clients, into out.
func runHostile(exe, mode, impl, out string, sets []string) (res hostileRun) {
	other, reached, stop, err := otherHost()
	if err != nil {
		return hostileRun{err: err}
	}
	defer stop()
	endpoint, kill, err := startHostile(exe, mode, other)
	if err != nil {
		return hostileRun{err: err}
	}
	defer kill()
	profile := "compliant"
	if impl != "native" {
		profile = impl
	}
	args := []string{"run", "hostile", "--file", "testdata/hostile.toml", "--engine", "live", "--out", out, "--no-charts", "--quiet",
		"--no-saturation-check", "--set", fmt.Sprintf("server.url=%q", endpoint), "--set", "client.impl=" + impl, "--set", "client.profile=" + profile}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err = cmd.Start(); err != nil {
		return hostileRun{err: err}
	}
	hwm := watchHWM(cmd.Process.Pid)
	nodeHWM := watchChildHWM(cmd.Process.Pid, "node")
	err = cmd.Wait()
	res.took, res.stderr = time.Since(start), stderr.String()
	res.rss, res.nodeRSS = hwm(), nodeHWM()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.code = ee.ExitCode()
	} else if err != nil {
		return hostileRun{err: err}
	}
	res.reached = reached.Load()
	rep, err := report.Read(filepath.Join(out, "hostile", "latest", "report.json"))
	if err != nil {
		res.err = err
		return res
	}
	res.d, res.host = &rep.Designs[0], rep.Host
	return res
}

// judge checks a run against what its mode must show.
func (r *hostileRun) judge(t *testing.T, c hostileCase, impl string) {
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	const limit = 4*time.Second + 3*time.Second + 10*time.Second // duration + drain + 10 s
	if r.took > limit {
		t.Errorf("the run took %v: want within %v", r.took, limit)
	}
	if r.rss == 0 || r.rss >= 512<<20 {
		t.Errorf("peak RSS of the stormsim process %d MiB: want above 0 and under 512 MiB", r.rss>>20)
	}
	if impl == "ts-sdk" && (r.nodeRSS == 0 || r.nodeRSS >= tsHeapMiB<<20) {
		t.Errorf("peak RSS of the ts-sdk clients' Node process %d MiB: want above 0 and under its heap limit, %d MiB", r.nodeRSS>>20, tsHeapMiB)
	}
	if r.code != c.code {
		t.Errorf("exit %d: want %d\n%s", r.code, c.code, r.stderr)
	}
	if r.host == nil || r.host.LoadgenRequestsPerS <= 0 {
		t.Errorf("host block %+v: want the load generator's request rate", r.host)
	}
	if r.reached != 0 {
		t.Errorf("%d requests reached the other host: want 0", r.reached)
	}
	d := r.d
	if c.note != "" && !strings.Contains(strings.Join(d.Notes, "\n"), c.note) {
		t.Errorf("no note says %q:\n%s", c.note, strings.Join(d.Notes, "\n"))
	}
	// The request-rate guard speaks only when a server drives the clients
	// faster than any backoff.
	if notes := strings.Join(d.Notes, "\n"); !strings.Contains(c.note, "request rate:") && strings.Contains(notes, "request rate:") {
		t.Errorf("a request-rate note against mode %s:\n%s", c.mode, notes)
	}
	if c.check != nil {
		c.check(t, d)
	}
	t.Logf("%s/%s: exit %d in %v, peak RSS %d MiB (Node %d MiB); calls %d completed %d failed %d, resumes %d", c.mode, impl, r.code, r.took.Round(time.Millisecond),
		r.rss>>20, r.nodeRSS>>20, d.Totals.Calls, d.Totals.CallsCompleted, d.Totals.CallsFailed, d.Totals.Resumes)
}

// watchChildHWM is watchHWM for the children of process pid named comm
// (the ts-sdk clients' Node process): the highest peak any of them reached.
func watchChildHWM(pid int, comm string) func() int64 {
	var peak atomic.Int64
	done, stopped := make(chan struct{}), make(chan struct{})
	watching := map[int]func() int64{}
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
			for _, f := range tasks {
				b, _ := os.ReadFile(f)
				for _, c := range strings.Fields(string(b)) {
					var cp int
					fmt.Sscan(c, &cp) //nolint:errcheck // a pid
					name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cp))
					if _, ok := watching[cp]; !ok && strings.TrimSpace(string(name)) == comm {
						watching[cp] = watchHWM(cp)
					}
				}
			}
			select {
			case <-done:
				for _, stop := range watching {
					peak.Store(max(peak.Load(), stop()))
				}
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// watchHWM reads the peak resident set (VmHWM) of process pid from
// /proc every 10 ms until the returned function is called, which gives the
// highest value read. The rusage of a waited-for child cannot say it: Linux
// starts a child's maxrss at its parent's resident set when it execs (the
// raced test binary is hundreds of MiB), so it would measure this test, not
// the stormsim process.
func watchHWM(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	read := func() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				var kb int64
				if _, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb); err == nil && kb*1024 > peak.Load() {
					peak.Store(kb * 1024)
				}
			}
		}
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}
