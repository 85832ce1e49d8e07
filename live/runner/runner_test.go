package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/workload"
)

var bin string

// TestMain builds the stormsim binary the replicas run.
func TestMain(m *testing.M) {
	floorChild() // a child of BenchmarkRelayFloor runs its role and exits
	testbin.Main(m, "../..", &bin)
}

// small is live-smoke cut down for in-process runs under the race detector.
var small = []string{"workload.clients=30", "drain=3s", "workload.drop_every=20s"}

func load(t testing.TB, name string, sets []string) *scenario.Scenario {
	t.Helper()
	f, err := scenario.Load("../../scenarios.toml", &scenario.Options{Set: sets, Target: name})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestRunInProcess runs two designs of a small live-smoke at once in the
// test process: the histories join with the production logs, the totals
// conserve events, every request is a vegeta result, and nothing is left
// running.
func TestRunInProcess(t *testing.T) {
	t.Parallel() // make test: see the Makefile's note on the live stage
	// A 4 s call timeout: calls of 10 to 30 events at 5 a second run 2 to
	// 6 s, so about half of them time out, most with their stream open.
	// Half the clients are the go-sdk's, which apply the same timeout.
	sets := append(slices.Clone(small), "client.call_timeout=4s", "client.impl=go-sdk", "client.impl_share=0.5")
	sc := load(t, "live-smoke", sets)
	abs, _ := filepath.Abs("../../scenarios.toml")
	var buf bytes.Buffer
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Set: sets,
		Designs: []string{"memory-sticky", "redis-shared"}, Parallel: 2, Results: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Report.Designs) != 2 || out.Report.Engine != "live" {
		t.Fatalf("%d designs, engine %s", len(out.Report.Designs), out.Report.Engine)
	}
	for _, d := range out.Report.Designs {
		h := out.Histories[d.Name]
		tt := d.Totals
		if tt.Calls == 0 || tt.EventsDelivered == 0 || len(h.Produced) == 0 {
			t.Errorf("%s: calls %d, delivered %d, %d production lines", d.Name, tt.Calls, tt.EventsDelivered, len(h.Produced))
		}
		if tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
			t.Errorf("%s: conservation: %+v", d.Name, tt)
		}
		// Every receipt joins a call and an attempt the replicas produced.
		calls := map[[2]int32]bool{}
		for _, c := range h.Calls {
			calls[[2]int32{c.Client, c.Seq}] = true
		}
		prod := map[[4]int32]bool{}
		for _, p := range h.Produced {
			prod[[4]int32{p.Client, p.Seq, p.Attempt, p.Index}] = true
		}
		for _, rc := range h.Receipts {
			if !calls[[2]int32{rc.Client, rc.Seq}] || !prod[[4]int32{rc.Client, rc.Seq, rc.Attempt, rc.Index}] {
				t.Fatalf("%s: receipt %+v joins no call or no produced event", d.Name, rc)
			}
		}
		if len(h.Faults) != 5 { // graceful stop and start, hard stop and start, the client drop
			t.Errorf("%s: %d fault steps applied: %+v", d.Name, len(h.Faults), h.Faults)
		}
		// A call timeout that ends an open stream is a drop, at the call's
		// end, of a call that failed.
		ends := map[[2]int32]history.Call{}
		for _, c := range h.Calls {
			ends[[2]int32{c.Client, c.Seq}] = c
		}
		timeouts, sdkTimeouts := 0, 0
		for _, x := range h.Drops {
			if x.Cause != history.DropTimeout {
				continue
			}
			timeouts++
			if workload.Pick(sc.Seed, implPick, uint64(x.Client)) < 0.5 {
				sdkTimeouts++
			}
			if c := ends[[2]int32{x.Client, x.Seq}]; c.Outcome != clients.Failed || c.End < 0 || x.T > c.End || c.End-x.T > int64(100*time.Millisecond) {
				t.Errorf("%s: timeout drop %+v of call %+v", d.Name, x, c)
			}
		}
		if sdkTimeouts == 0 || timeouts == sdkTimeouts || tt.CallsFailed < int64(timeouts) || tt.Drops < int64(timeouts) {
			t.Errorf("%s: %d timeout drops (%d of go-sdk clients), %d calls failed, %d drops", d.Name, timeouts, sdkTimeouts, tt.CallsFailed, tt.Drops)
		}
	}
	dec := vegeta.NewDecoder(&buf)
	n := 0
	var res vegeta.Result
	for dec.Decode(&res) == nil {
		n++
	}
	if want := len(out.Histories["memory-sticky"].Requests) + len(out.Histories["redis-shared"].Requests); n != want {
		t.Errorf("results.bin holds %d results, want %d", n, want)
	}
}

// TestRunCancelled cancels a live run midway: Run returns the context's
// error and every process it started is gone.
func TestRunCancelled(t *testing.T) {
	sc := load(t, "live-smoke", small)
	abs, _ := filepath.Abs("../../scenarios.toml")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Second, cancel)
	before := children(t)
	_, err := Run(ctx, sc, &Options{Bin: bin, File: abs, Set: small, Designs: []string{"redis-shared"}})
	if err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	limit := wait.For(wait.Ready)
	deadline := time.Now().Add(limit)
	for {
		left := 0
		for p := range children(t) {
			if !before[p] && redisd.Alive(p) {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for the cancelled run's processes to exit; %d did not", limit, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// children lists the PIDs whose parent is this process.
func children(t *testing.T) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		var pid, ppid int
		var comm, state string
		if n, _ := fmt.Sscan(string(b), &pid, &comm, &state, &ppid); n == 4 && ppid == me {
			out[pid] = true
		}
	}
	return out
}
