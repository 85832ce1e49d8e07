package topo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/live/internal/logbuf"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/redisd"
)

// These tests run `stormsim up` and `stormsim fault` as the processes a
// user runs, and reach the topology as an outside client does: through the
// endpoint, with the official go-sdk client or plain HTTP.

// upProc is a running `stormsim up`.
type upProc struct {
	t        *testing.T
	cmd      *exec.Cmd
	endpoint string
	state    string
	logs     string
	slots    map[int]int   // slot → pid, as the listing printed them
	stdout   logbuf.Buffer // everything it printed, the listing included
	stderr   logbuf.Buffer // its log
	exited   chan struct{}
	err      error // its exit, once exited is closed
	seen     time.Time
	mu       sync.Mutex
	pids     map[int]bool // every process it printed: replicas (restarts too) and redis
}

// startUp starts `stormsim up ARGS --logs DIR` and reads its listing up to
// the endpoint line. Cleanup stops it (SIGTERM) if it still runs and
// checks that every process it printed is gone.
func startUp(t *testing.T, args ...string) *upProc {
	t.Helper()
	p := &upProc{t: t, slots: map[int]int{}, pids: map[int]bool{}, exited: make(chan struct{}), logs: t.TempDir()}
	p.cmd = exec.Command(bin, append(append([]string{"up"}, args...), "--logs", p.logs)...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.cleanup)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.stdout.Write([]byte(line + "\n"))
			f := strings.Fields(line)
			p.mu.Lock()
			switch {
			case len(f) == 5 && f[0] == "slot" && f[2] == "pid":
				slot, _ := strconv.Atoi(f[1])
				pid, _ := strconv.Atoi(f[3])
				p.pids[pid] = true
				if p.endpoint == "" {
					p.slots[slot] = pid
				}
			case len(f) == 4 && (f[0] == "redis" || f[0] == "lb") && f[1] == "pid":
				pid, _ := strconv.Atoi(f[2])
				p.pids[pid] = true
			case len(f) == 2 && f[0] == "state:":
				p.state = f[1]
			case len(f) == 2 && f[0] == "endpoint:":
				p.endpoint = f[1]
				p.seen = time.Now()
				close(ready)
			}
			p.mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-p.exited:
		t.Fatalf("stormsim up exited before its endpoint line (%v): %s", p.err, p.stderr.String())
	case <-time.After(wait.For(wait.Ready)):
		t.Fatalf("waited %v for stormsim up's endpoint line; its log: %s", wait.For(wait.Ready), p.stderr.String())
	}
	if len(p.slots) == 0 || p.state == "" {
		t.Fatalf("stormsim up printed no slot or no state line: %s", p.stdout.String())
	}
	return p
}

func (p *upProc) cleanup() {
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(wait.For(wait.Ready)):
			p.cmd.Process.Kill()
			<-p.exited
			p.t.Errorf("stormsim up did not stop within %v of SIGTERM", wait.For(wait.Ready))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for pid := range p.pids {
		if redisd.Alive(pid) {
			p.t.Errorf("process %d outlived stormsim up", pid)
		}
	}
}

// upStateFile is the part of up's state file the tests read.
type upStateFile struct {
	Control  string      `json:"control"`
	Logs     string      `json:"logs"`
	Replicas []SlotState `json:"replicas"`
	Stopped  bool        `json:"stopped"`
}

func (p *upProc) readState() upStateFile {
	p.t.Helper()
	b, err := os.ReadFile(p.state)
	if err != nil {
		p.t.Fatal(err)
	}
	var s upStateFile
	if err := json.Unmarshal(b, &s); err != nil {
		p.t.Fatalf("state file: %v: %s", err, b)
	}
	return s
}

// waitLog waits until up's log has a line containing want, and returns it.
func (p *upProc) waitLog(want string) string {
	p.t.Helper()
	deadline := time.Now().Add(wait.For(wait.Ready))
	for {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, want) {
				return l
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waited %v for %q in up's log: %s", wait.For(wait.Ready), want, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for up to stop on its own.
func (p *upProc) waitExit() {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(wait.For(wait.Ready)):
		p.t.Fatalf("stormsim up did not stop on its own within %v; its log: %s", wait.For(wait.Ready), p.stderr.String())
	}
}

// fault runs `stormsim fault --up STATE ARGS` and returns its output.
func (p *upProc) fault(args ...string) string {
	p.t.Helper()
	out, err := exec.Command(bin, append([]string{"fault", "--up", p.state}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("stormsim fault %v: %v: %s", args, err, out)
	}
	return string(out)
}

// recorder is an outside client's HTTP transport that notes, per session
// id, the slot the LB sent each request to and the statuses it got.
type recorder struct {
	mu       sync.Mutex
	slot     map[string]string // session → the slot that minted it
	statuses map[string][]int  // session → every status, in order
}

func newRecorder() *recorder {
	return &recorder{slot: map[string]string{}, statuses: map[string][]int{}}
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	sid := req.Header.Get("Mcp-Session-Id")
	r.mu.Lock()
	if sid == "" {
		if sid = resp.Header.Get("Mcp-Session-Id"); sid != "" {
			r.slot[sid] = resp.Header.Get(lb.ReplicaHeader)
		}
	}
	if sid != "" {
		r.statuses[sid] = append(r.statuses[sid], resp.StatusCode)
	}
	r.mu.Unlock()
	return resp, nil
}

// sdkConnect opens a go-sdk client session on endpoint (the SDK's defaults:
// a standalone SSE stream, 5 retries) over rt.
func sdkConnect(ctx context.Context, endpoint string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "stormsim-up-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}}, nil)
}

// stream calls the replicas' stream tool for a few events.
func stream(ctx context.Context, s *mcp.ClientSession) error {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{"events": 3, "interval_ms": 10}})
	if err == nil && res.IsError {
		err = fmt.Errorf("the tool answered an error: %v", res.Content)
	}
	return err
}

// sdkSessions starts n go-sdk sessions at once, each of which initializes,
// calls the tool and closes, and returns the errors.
func sdkSessions(endpoint string, n int) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := sdkConnect(ctx, endpoint, http.DefaultTransport)
			if err == nil {
				err = stream(ctx, s)
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errs
}

// Acceptance 1: after a SIGKILL of one replica from outside, 20 new go-sdk
// sessions started 2 s later all succeed; the LB took the dead replica out
// of its pool. Three runs of up: the default health check; the passive
// check alone (probes off), which must find the death by itself; and fast
// probes with no request sent, which must find it by themselves.
func TestUpOutsideKill(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	for _, tc := range []struct {
		name string
		set  string
		want string // in the log line that takes slot 1 out of the pool
	}{
		{"default", "health_check.interval=1s", "out of the LB's pool"},
		{"passive", "health_check.interval=0s", "out of the LB's pool: passive check: connection refused"},
		{"active", "health_check.interval=100ms", "out of the LB's pool: active check: 2 probes failed in a row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startUp(t, "steady", "--design", "memory-sticky", "--file", abs, "--no-schedule", "--set", tc.set)
			pid := p.slots[1]
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if tc.name == "active" {
				// No request at all: the probes alone must notice.
				line := p.waitLog(fmt.Sprintf("slot 1 pid %d %s", pid, tc.want))
				t.Logf("%s", line)
			}
			time.Sleep(2 * time.Second)
			failed := 0
			for i, err := range sdkSessions(p.endpoint, 20) {
				if err != nil {
					failed++
					t.Errorf("session %d: %v", i, err)
				}
			}
			t.Logf("%d of 20 sessions started 2 s after the kill failed", failed)
			t.Logf("%s", p.waitLog(fmt.Sprintf("slot 1 pid %d %s", pid, tc.want)))
			if s := p.readState(); s.Replicas[1].InPool || s.Replicas[1].State != SlotExited || s.Replicas[1].Exit != "signal: killed" {
				t.Errorf("state of slot 1: %+v", s.Replicas[1])
			}
		})
	}
}

// Acceptance 2: after an outside SIGTERM of one replica, no new request
// goes to it. Slot 1 is kept draining by a long call; once its drain began
// (up's log says so), 30 new sessions and calls all succeed, none answered
// by slot 1 and none moved off it (the LB sent none there), while its
// process still runs and its long call still finishes.
func TestUpOutsideSIGTERM(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	p := startUp(t, "steady", "--design", "memory-sticky", "--file", abs, "--no-schedule")
	// Sticky round robin: the first three sessions go to slots 0, 1, 2.
	var long *http.Response
	for i := 0; i < 3 && long == nil; i++ {
		r := postJSON(t, p.endpoint, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
		r.Body.Close()
		if r.Header.Get(lb.ReplicaHeader) == "1" {
			long = postJSON(t, p.endpoint, r.Header.Get("Mcp-Session-Id"), map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
				"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 40, "interval_ms": 100}}})
		}
	}
	if long == nil || long.StatusCode != 200 {
		t.Fatalf("no long call on slot 1: %v", long)
	}
	defer long.Body.Close()
	body := bufio.NewReader(long.Body)
	if _, err := body.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := p.slots[1]
	sent := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(fmt.Sprintf("slot 1 pid %d draining (SIGTERM from outside): left the LB's pool", pid))
	t.Logf("the LB took slot 1 out %v after the SIGTERM", time.Since(sent).Round(time.Millisecond))
	for i := 0; i < 30; i++ {
		r := postJSON(t, p.endpoint, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
		r.Body.Close()
		sid := r.Header.Get("Mcp-Session-Id")
		c := postJSON(t, p.endpoint, sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
			"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 1, "interval_ms": 0}}})
		b, _ := io.ReadAll(c.Body)
		c.Body.Close()
		for _, resp := range []*http.Response{r, c} {
			if resp.StatusCode != 200 || resp.Header.Get(lb.ReplicaHeader) == "1" || strings.Contains(resp.Header.Get(lb.MovedHeader), "1") {
				t.Errorf("request %d: %d from slot %s, moved from %q", i, resp.StatusCode, resp.Header.Get(lb.ReplicaHeader), resp.Header.Get(lb.MovedHeader))
			}
		}
		if !strings.Contains(string(b), `"result"`) {
			t.Errorf("call %d: no result: %s", i, b)
		}
	}
	if !redisd.Alive(pid) {
		t.Error("the draining replica is gone already: the test proves nothing about routing")
	}
	rest, _ := io.ReadAll(body)
	if !strings.Contains(string(rest), `"result"`) {
		t.Errorf("the draining replica's long call did not finish: %q", rest)
	}
	if s := p.readState(); s.Replicas[1].InPool || s.Replicas[1].PID != pid {
		t.Errorf("state of slot 1: %+v", s.Replicas[1])
	}
}

// Acceptance 3: `stormsim fault … restart 1` restarts slot 1 (a drain, then
// a fresh process) and `restart 2 --hard` slot 2 (a kill); up's log and
// state file show it, and a go-sdk session on either slot gets 404 after
// (memory-sticky: the session lived in the old process), while one on slot
// 0 still works.
func TestUpFaultRestart(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	p := startUp(t, "steady", "--design", "memory-sticky", "--file", abs, "--no-schedule")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec := newRecorder()
	on := map[string]*mcp.ClientSession{}
	for i := 0; i < 3; i++ {
		s, err := sdkConnect(ctx, p.endpoint, rec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := stream(ctx, s); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		on[rec.slot[s.ID()]] = s
		rec.mu.Unlock()
	}
	if len(on) != 3 {
		t.Fatalf("sessions on slots %v, want one on each of 0, 1, 2", on)
	}
	before := p.readState()
	out := p.fault("restart", "1")
	if !strings.Contains(out, "applied: replica 1 drains (SIGTERM)\napplied: replica 1 started") {
		t.Errorf("stormsim fault restart 1 printed %q", out)
	}
	out = p.fault("restart", "2", "--hard")
	if !strings.Contains(out, "applied: replica 2 killed (SIGKILL)\napplied: replica 2 started") {
		t.Errorf("stormsim fault restart 2 --hard printed %q", out)
	}
	after := p.readState()
	for _, slot := range []int{1, 2} {
		b, a := before.Replicas[slot], after.Replicas[slot]
		if a.PID == b.PID || a.State != SlotServing || !a.InPool {
			t.Errorf("slot %d in the state file: before %+v, after %+v", slot, b, a)
		}
		p.waitLog(fmt.Sprintf("slot %d pid %d serving %s", slot, a.PID, a.URL))
	}
	p.waitLog("on demand: replica 1 drains (SIGTERM)")
	p.waitLog("on demand: replica 2 killed (SIGKILL)")
	if !strings.Contains(p.stdout.String(), fmt.Sprintf("slot 1 pid %d %s\n", after.Replicas[1].PID, after.Replicas[1].URL)) {
		t.Errorf("no slot line for the new process of slot 1 on stdout: %s", p.stdout.String())
	}
	for _, slot := range []string{"1", "2"} {
		s := on[slot]
		err := stream(ctx, s)
		rec.mu.Lock()
		got404 := false
		for _, code := range rec.statuses[s.ID()] {
			got404 = got404 || code == 404
		}
		rec.mu.Unlock()
		if err == nil || !got404 {
			t.Errorf("session on restarted slot %s: call error %v, a 404 seen %v; want a failure with 404", slot, err, got404)
		}
	}
	if err := stream(ctx, on["0"]); err != nil {
		t.Errorf("session on slot 0, not restarted: %v", err)
	}
}

// Acceptance 4 and 5. `up --once` serves the scenario's whole duration and
// drain, not just until the last fault step, and stops by itself: steady
// (no fault) shortened to 3 s + 1 s, and a scenario whose one fault ends
// 1 s in, whose schedule it applies. With --no-schedule, the same scenario
// applies no fault by itself: slot 1 keeps its process to the end.
func TestUpOnce(t *testing.T) {
	t.Parallel()
	steady, _ := filepath.Abs("../../scenarios.toml")
	faulty, _ := filepath.Abs("testdata/up.toml")
	for _, tc := range []struct {
		name     string
		args     []string
		schedule bool
	}{
		{"steady", []string{"steady", "--design", "memory-sticky", "--file", steady, "--set", "duration=3s", "--set", "drain=1s", "--once"}, false},
		{"schedule", []string{"up-faults", "--design", "memory-sticky", "--file", faulty, "--once"}, true},
		{"no-schedule", []string{"up-faults", "--design", "memory-sticky", "--file", faulty, "--once", "--no-schedule"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startUp(t, tc.args...)
			first := p.slots[1]
			// 0.5 s before the end of duration + drain (4 s), the
			// topology still serves.
			time.Sleep(time.Until(p.seen.Add(3500 * time.Millisecond)))
			r := postJSON(t, p.endpoint, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
			r.Body.Close()
			if r.StatusCode != 200 {
				t.Errorf("initialize 3.5 s in: %d", r.StatusCode)
			}
			p.waitExit()
			if p.err != nil {
				t.Errorf("stormsim up --once exited with %v", p.err)
			}
			log := p.stderr.String()
			if !strings.Contains(log, "served the whole 4s: stopping") {
				t.Errorf("log: %s", log)
			}
			killed := strings.Contains(log, "schedule, 500ms: replica 1 killed (SIGKILL)") && strings.Contains(log, "schedule, 1s: replica 1 started")
			st := p.readState()
			if tc.schedule != killed || tc.schedule != (st.Replicas[1].PID != first) {
				t.Errorf("schedule %v: the log shows the crash %v; slot 1 pid %d at the start, %d at the end; log: %s", tc.schedule, killed, first, st.Replicas[1].PID, log)
			}
			if !tc.schedule && strings.Contains(log, "schedule,") {
				t.Errorf("a fault step with no schedule: %s", log)
			}
			if !st.Stopped {
				t.Error("the state file does not say up stopped")
			}
			// The production logs and the counters are in the folder it named.
			for _, f := range []string{"replica-0.jsonl", "replica-1.jsonl", "up.log", "counts.json"} {
				if _, err := os.Stat(filepath.Join(p.logs, f)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
