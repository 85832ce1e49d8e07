package sim

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stormsim/stormsim/scenario"
)

// Conservation holds for every design of every shipped scenario, as it
// ships (the runs other tests share). It is an identity of the engine (lost
// and pending are E minus what the same call delivered), kept as a sanity
// assertion; TestOracle is the check of the counts themselves.
func TestConservation(t *testing.T) {
	t.Parallel()
	for _, name := range shippedNames(t) {
		conserves(t, name, shared(t, load(t, name)))
	}
}

// TestConservationProfiles is TestConservation with every shipped scenario
// run again at each client profile: 104 runs, in make test-long.
func TestConservationProfiles(t *testing.T) {
	t.Parallel()
	for _, name := range shippedNames(t) {
		for _, profile := range []string{"compliant", "go-sdk", "ts-sdk", "stuck"} {
			conserves(t, name+"/"+profile, shared(t, load(t, name, "client.profile="+profile)))
		}
	}
}

// conserves checks the identities of conservation on every design of out.
func conserves(t *testing.T, name string, out *Output) {
	t.Helper()
	for _, d := range out.Report.Designs {
		tt := d.Totals
		where := name + "/" + d.Name
		if tt.EventsExpected == 0 || tt.EventsDelivered == 0 {
			t.Errorf("%s: expected %d delivered %d: nothing ran", where, tt.EventsExpected, tt.EventsDelivered)
		}
		if got := tt.EventsDelivered + tt.EventsLost + tt.EventsPending; got != tt.EventsExpected {
			t.Errorf("%s: delivered %d + lost %d + pending %d = %d, want expected %d",
				where, tt.EventsDelivered, tt.EventsLost, tt.EventsPending, got, tt.EventsExpected)
		}
		if got := tt.LostByCause.Sum(); got != tt.EventsLost {
			t.Errorf("%s: lost by cause sums to %d, want %d", where, got, tt.EventsLost)
		}
		if got := tt.CallsCompleted + tt.CallsFailed + tt.CallsPending; got != tt.Calls {
			t.Errorf("%s: completed %d + failed %d + pending %d = %d, want calls %d",
				where, tt.CallsCompleted, tt.CallsFailed, tt.CallsPending, got, tt.Calls)
		}
		var lost int64
		for _, v := range d.Series.EventsLost {
			lost += v
		}
		if lost != tt.EventsLost {
			t.Errorf("%s: series events_lost sums to %d, totals say %d", where, lost, tt.EventsLost)
		}
		if tt.EventsReplayed > 0 && tt.Resumes == 0 {
			t.Errorf("%s: %d events replayed without a resume", where, tt.EventsReplayed)
		}
	}
}

// For every shipped scenario: the same seed gives the same bytes (the run
// other tests share against one of its own), another
// seed changes the numbers, and running one design alone (or the designs one
// at a time) gives rows identical to the full run's.
func TestDeterminism(t *testing.T) {
	t.Parallel()
	for _, name := range shippedNames(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc := load(t, name)
			full := shared(t, sc).Report
			a, _ := full.JSON()
			b, _ := run(t, load(t, name)).Report.JSON() // a run of its own, not the shared one
			if !bytes.Equal(a, b) {
				t.Errorf("two runs with seed 42 differ")
			}
			c := run(t, load(t, name, "seed=43")).Report
			for i := range full.Designs {
				if cmp.Equal(full.Designs[i].Totals, c.Designs[i].Totals) && cmp.Equal(full.Designs[i].Series, c.Designs[i].Series) {
					t.Errorf("%s: seed 43 gives the same totals and series as seed 42", full.Designs[i].Name)
				}
			}
			last := sc.Designs[len(sc.Designs)-1].Name
			out, err := Run(context.Background(), sc, &Options{Designs: []string{last}, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*full.Design(last), out.Report.Designs[0]); diff != "" {
				t.Errorf("design %s differs when run alone (-full +alone):\n%s", last, diff)
			}
		})
	}
}

// An unknown design in the subset is an error that lists the valid ones.
func TestDesignSubsetUnknown(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), load(t, "steady"), &Options{Designs: []string{"nope"}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("redis-shared")) {
		t.Fatalf("err = %v, want one listing the scenario's designs", err)
	}
}

// Cancelling the context stops the run with an error, not a partial report.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := Run(ctx, load(t, "steady"), nil); err == nil || out != nil {
		t.Fatalf("Run on a cancelled context = %v, %v; want nil and an error", out, err)
	}
}

// Designs run in parallel give the same report as designs run one by one,
// with the progress callback called from every goroutine. Run under -race.
func TestRunParallel(t *testing.T) {
	t.Parallel()
	sc := load(t, "deploy-restart", "workload.clients=300")
	var mu sync.Mutex
	var done time.Duration
	par, err := Run(context.Background(), sc, &Options{Parallel: len(sc.Designs), Progress: func(d time.Duration) {
		mu.Lock()
		done += d
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := Run(context.Background(), sc, &Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seq.Report, par.Report); diff != "" {
		t.Errorf("parallel run differs (-sequential +parallel):\n%s", diff)
	}
	if want := scenario.Horizon(sc) * time.Duration(len(sc.Designs)); done != want {
		t.Errorf("progress reported %v, want %v", done, want)
	}
}
