package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/report"
)

// storeKillScenario is a short live run of a design whose sessions and
// events are in Redis; %s is its duration.
const storeKillScenario = `
[scenario.t]
duration = "%s"
drain = "3s"
replicas = 2
designs = ["redis-shared"]
[scenario.t.workload]
clients = 40
arrival_rate = 40
think = "300ms"
events_min = 10
events_max = 20
`

// storeOutage is the scheduled store outage, from 1 s to 2 s.
const storeOutage = `
[[scenario.t.faults]]
kind = "store-outage"
at = "1s"
duration = "1s"
`

// TestStoreKilled SIGKILLs the private redis-server of a live run (a real
// `stormsim run --engine live` process) a few seconds in. The run still
// ends well, and says what happened: a note in the design's row naming the
// Redis, the time and the cause, an unscheduled store-unreachable entry in
// report.json's faults (the chart mark), and the same line in live.log. The
// scheduled store outage before it is not taken for one. go-redis's own
// complaints, from the runner and from the replicas, are in live.log and
// not on the terminal.
func TestStoreKilled(t *testing.T) {
	t.Parallel() // make test: see the Makefile's note on the live stage
	dir := t.TempDir()
	file := filepath.Join(dir, "t.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(storeKillScenario, "12s")+storeOutage), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "run", "t", "--file", file, "--engine", "live", "--out", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()
	rpid, _ := waitChildren(t, cmd.Process.Pid, 2, 2*time.Minute)
	// The run starts once both replicas listen; 6 s after they exist it is
	// past the scheduled outage (1 s to 2 s) on a quiet machine. On a busy
	// one the kill may fall inside it: the watcher then dates the outage
	// from the outage's end, which the checks below allow.
	time.Sleep(6 * time.Second)
	if err := syscall.Kill(rpid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing redis-server %d: %v", rpid, err)
	}
	select {
	case err := <-done:
		done <- err
		// 97: the run fell behind its schedule (producers blocked on the
		// dead or stopped store count as late), so it gives no verdict; it
		// writes its report all the same, and that is what is checked here.
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 97) {
			t.Fatalf("stormsim run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("stormsim run had not ended 3 minutes after its Redis was killed\nstderr:\n%s", stderr.String())
	}

	run := filepath.Join(out, "t", "latest")
	r, err := report.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	var marks []report.Fault
	scheduled := false
	for _, f := range r.Faults {
		switch f.Kind {
		case report.KindStoreUnreachable:
			marks = append(marks, f)
		case "store-outage":
			scheduled = !f.Unscheduled
		}
	}
	if len(marks) != 1 || !scheduled {
		t.Fatalf("faults %+v: want the scheduled store-outage and one unscheduled store-unreachable mark", r.Faults)
	}
	m := marks[0]
	if !m.Unscheduled || m.Label != "redis-shared: redis unreachable" || m.AtS < 2 || m.AtS > 15 || m.UntilS < m.AtS {
		t.Errorf("mark %+v: want unscheduled, labelled, from 2 s (the scheduled outage's end) or later, within the run", m)
	}
	notes := strings.Join(r.Designs[0].Notes, "\n")
	re := regexp.MustCompile(`redis at 127\.0\.0\.1:[0-9]+ unreachable from ([0-9]+\.[0-9]) s: connection refused; not back by the end of the run`)
	sub := re.FindStringSubmatch(notes)
	if sub == nil || sub[1] != fmt.Sprintf("%.1f", m.AtS) {
		t.Errorf("notes %q: want one matching %s, at the mark's %.1f s", notes, re, m.AtS)
	}
	if ids := report.RecoveryFaults(r.Faults); len(ids) != len(r.Faults)-1 {
		t.Errorf("recovery is computed for faults %v of %+v: want every fault but the mark", ids, r.Faults)
	}
	page, err := os.ReadFile(filepath.Join(run, "report.html"))
	if err != nil || !bytes.Contains(page, []byte("redis-shared: redis unreachable")) {
		t.Errorf("report.html does not list the mark (%v)", err)
	}

	log, err := os.ReadFile(filepath.Join(run, "live.log"))
	if err != nil {
		t.Fatal(err)
	}
	if sub != nil && !bytes.Contains(log, []byte(sub[0])) {
		t.Errorf("live.log does not have the note %q:\n%s", sub[0], firstLines(log, 20))
	}
	if !regexp.MustCompile(`(?m)^live redis-shared: [0-9.]+s: replica [01]: go-redis: `).Match(log) {
		t.Errorf("live.log has no go-redis line from a replica:\n%s", firstLines(log, 20))
	}
	for _, bad := range []string{"redis: ", "go-redis", "dial tcp", "connection refused", "connection pool"} {
		if strings.Contains(stderr.String(), bad) {
			t.Errorf("stderr has %q; go-redis's lines belong in live.log:\n%s", bad, firstLines(stderr.Bytes(), 10))
		}
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// TestRedisURL runs a Redis design on an existing Redis given as
// RedisAddr (what run --redis-url sets): no redis-server of its own is
// started, the events land in the given Redis, and a scenario with a store
// fault is refused before anything starts.
func TestRedisURL(t *testing.T) {
	srv, err := redisd.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "t.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(storeKillScenario, "4s")+storeOutage), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := loadFile(t, file, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	url := "redis://" + srv.Addr() + "/0"
	_, err = Run(context.Background(), sc, &Options{Bin: bin, File: file, RedisAddr: url})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.ExitCode() != 2 || !errors.Is(err, topo.ErrNotOurs) ||
		!strings.Contains(err.Error(), `faults[0] (kind "store-outage")`) || !strings.Contains(err.Error(), "--redis-url") {
		t.Fatalf("a store fault on a Redis stormsim did not start: got %v, want it refused (exit 2), naming the fault and --redis-url", err)
	}
	if kids := childrenOf(os.Getpid()); len(kids) != 1 {
		t.Errorf("children after the refusal: %v; want only the test's redis-server", kids)
	}

	sc.Faults = nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	others := make(chan []int, 1)
	go func() { // every redis-server the run starts, while it runs
		var seen []int
		defer func() { others <- seen }()
		for ctx.Err() == nil {
			for p, comm := range childrenOf(os.Getpid()) {
				if comm == "redis-server" && p != srv.PID() {
					seen = append(seen, p)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var logBuf bytes.Buffer
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: file, RedisAddr: url, Log: &logBuf})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if seen := <-others; len(seen) > 0 {
		t.Errorf("the run started redis-servers of its own: %v", seen)
	}
	d := out.Report.Designs[0]
	if d.Totals.EventsDelivered == 0 || d.Totals.StorePeakBytes == 0 {
		t.Errorf("delivered %d, store peak %d: want events, kept in the given Redis", d.Totals.EventsDelivered, d.Totals.StorePeakBytes)
	}
	for _, f := range out.Report.Faults {
		if f.Unscheduled {
			t.Errorf("unscheduled mark %+v on a Redis that stayed up", f)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	keys, _, err := rdb.Scan(context.Background(), 0, "stormsim:*", 1000).Result()
	if err != nil || len(keys) == 0 {
		t.Errorf("SCAN stormsim:* in the given Redis: %d keys, %v; want the run's", len(keys), err)
	}
	if !strings.Contains(strings.Join(d.Notes, " "), "--redis-url") {
		t.Errorf("notes %q: want one saying store_bytes counts the whole given Redis", d.Notes)
	}
}
