package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/report"
)

// run --target refuses, before anything starts, a fault that needs the
// server's processes, naming it and the way out; --engine sim refuses the
// flag itself.
func TestRunTargetRefusesProcessFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		// byo-example restarts replica 1: a URL gives no process to kill
		{[]string{"--engine", "live"}, `faults[1] (kind "restart") needs control of the server's processes`},
		// the simulator has no server to aim at
		{nil, "--target aims the live clients at a server"},
	} {
		args := append([]string{"run", "byo-example", "--file", "../examples/byo-example.toml", "--target", "http://127.0.0.1:1/mcp", "--out", t.TempDir()}, tc.args...)
		code, _, stderr := runArgs(t, context.Background(), args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// run SCENARIO --target URL with a scenario the file does not define names
// that problem, not a --set the user never gave (--target is applied as
// one).
func TestRunTargetUnknownScenario(t *testing.T) {
	t.Parallel()
	code, _, stderr := runArgs(t, context.Background(), "run", "my-scenario", "--file", shipped, "--engine", "live",
		"--target", "http://127.0.0.1:1/mcp", "--out", t.TempDir())
	if code != 2 || !strings.Contains(stderr, `no scenario "my-scenario" (defined: steady,`) || strings.Contains(stderr, "--set") {
		t.Errorf("exit %d, stderr %q; want 2 naming the unknown scenario and no --set", code, stderr)
	}
}

// countingServer is the reference replica (memory store) behind a handler
// that counts what reaches it: every request, the initializes of the
// isolation probes (by their clientInfo name), and every request that
// carries a Last-Event-ID header.
type countingServer struct {
	mu                           sync.Mutex
	requests, probeInits, lastID int
}

func (c *countingServer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		c.mu.Lock()
		c.requests++
		if bytes.Contains(body, []byte(runner.ProbeClientName)) {
			c.probeInits++
		}
		if len(r.Header.Values("Last-Event-ID")) > 0 {
			c.lastID++
		}
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *countingServer) counts() (int, int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.probeInits, c.lastID
}

// Acceptance 3 of the isolation probes: with --target no probe is sent
// unless isolation.probes is set. A server that counts what reaches it
// sees exactly the clients' requests (the report's requests; with no drops
// none of them carries Last-Event-ID) without the opt-in, and the clients'
// plus the probes' (three probe initializes, and the resumes the probes
// present) with it.
func TestRunTargetProbesOptIn(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.toml")
	os.WriteFile(file, []byte(`
[scenario.t]
duration = "6s"
drain = "3s"
designs = ["memory-sticky"]
[scenario.t.workload]
clients = 10
arrival_rate = 10
think = "300ms"
events_min = 5
events_max = 10
[scenario.t.server.tool]
name = "stream"
`), 0o644)
	for _, probes := range []bool{false, true} {
		cs := &countingServer{}
		rep := replica.New(replica.Config{Sessions: "local", Events: "memory", Store: store.NewMemory(10<<20, 64)})
		srv := httptest.NewServer(cs.wrap(rep))
		out := filepath.Join(dir, strconv.FormatBool(probes))
		args := []string{"run", "t", "--file", file, "--engine", "live", "--target", srv.URL, "--out", out, "--no-charts", "--no-saturation-check", "--quiet"}
		if probes {
			args = append(args, "--set", "isolation.probes=true")
		}
		code, _, stderr := runArgs(t, context.Background(), args...)
		rep.Kill()
		srv.Close()
		if code != 0 {
			t.Fatalf("probes %v: exit %d: %s", probes, code, stderr)
		}
		r, err := report.Read(filepath.Join(out, "t", "latest"))
		if err != nil {
			t.Fatal(err)
		}
		d := r.Designs[0]
		total, inits, lastID := cs.counts()
		t.Logf("probes %v: the server saw %d requests (%d probe initializes, %d with Last-Event-ID); the report: %d client requests, isolation %+v",
			probes, total, inits, lastID, d.Totals.Requests, d.Isolation)
		if !probes {
			if inits != 0 || lastID != 0 || int64(total) != d.Totals.Requests || d.Isolation != nil || !d.IsUnknown("events_leaked") {
				t.Errorf("without the opt-in: %d probe initializes, %d Last-Event-IDs, %d requests seen for %d sent, isolation %+v: want no probe at all",
					inits, lastID, total, d.Totals.Requests, d.Isolation)
			}
			continue
		}
		// Each probe opens its sessions (several, when the target does not
		// name its replicas): the server saw one initialize per session.
		if d.Isolation == nil || d.Isolation.Probes != 3 || int64(inits) != d.Isolation.Sessions || lastID == 0 || int64(total) != d.Totals.Requests+d.Isolation.Requests || d.Totals.EventsLeaked != 0 {
			t.Errorf("with isolation.probes = true: %d probe initializes, %d Last-Event-IDs, %d requests seen; isolation %+v: want 3 probes, one initialize per probe session, their requests beside the clients', 0 leaked",
				inits, lastID, total, d.Isolation)
		}
	}
}
