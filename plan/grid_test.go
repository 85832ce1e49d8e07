package plan

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// The same seed gives the same files whatever the number of jobs: each
// simulation is one design at one point, and the rows are put in order.
func TestRunJobsDeterministic(t *testing.T) {
	t.Parallel()
	var files []map[string][]byte
	for _, jobs := range []int{1, 2, 5} {
		res := runGrid(t, jobs, nil, "workload.clients=50..200@3", "store.redis_ttl=30s,60s")
		fs, err := Files(res, Recommend(res, res.Grid.Goals(nil), 200))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs)
	}
	for _, name := range []string{JSONName, CSVName, MarkdownName} {
		for i := 1; i < len(files); i++ {
			if !bytes.Equal(files[0][name], files[i][name]) {
				t.Errorf("%s differs between runs with different jobs", name)
			}
		}
	}
}

// Points are laid out load-first, and every point's scenario has its
// values applied; the notes name a design that hides a swept key.
func TestGridPoints(t *testing.T) {
	t.Parallel()
	a, _ := ParseSweep("workload.clients=10,20,30")
	b, _ := ParseSweep("workload.event_rate=1,2")
	tgt := 25.0
	g, err := NewGrid(loader(t, "plain"), []Axis{a, b}, &GridOptions{Base: []string{"duration=30s"}, Designs: []string{"redis-events", "stateless"}, Target: &tgt})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Axes[0].Values; len(got) != 4 || got[2] != 25 {
		t.Errorf("the target was not added to the load axis: %v", got)
	}
	if len(g.Points) != 8 || g.Loads() != 4 || g.Groups() != 2 {
		t.Fatalf("%d points, %d loads, %d groups", len(g.Points), g.Loads(), g.Groups())
	}
	for i, p := range g.Points {
		wantClients, wantRate := g.Axes[0].Values[i%4], g.Axes[1].Values[i/4]
		if p.Scenario.Workload.Clients != int(wantClients) || p.Scenario.Workload.EventRate != wantRate || p.Scenario.Duration.Seconds() != 30 {
			t.Errorf("point %d: clients %d, rate %g, duration %v; want %g, %g, 30s", i, p.Scenario.Workload.Clients, p.Scenario.Workload.EventRate, p.Scenario.Duration, wantClients, wantRate)
		}
	}
	if g.GroupLabel(1) != "workload.event_rate=2" {
		t.Errorf("group label %q", g.GroupLabel(1))
	}
	// The scenario's order, not the flag's.
	if strings.Join(g.Designs, ",") != "stateless,redis-events" {
		t.Errorf("designs %v", g.Designs)
	}
	if _, err := NewGrid(loader(t, "plain"), []Axis{a}, &GridOptions{Designs: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `--designs: scenario plain has no design "nope"`) {
		t.Errorf("unknown design: %v", err)
	}
	// A value the scenario rejects names the point and the key.
	bad, _ := ParseSweep("workload.clients=0,10")
	if _, err := NewGrid(loader(t, "plain"), []Axis{bad}, nil); err == nil || !strings.Contains(err.Error(), "grid point workload.clients=0") || !strings.Contains(err.Error(), "--set workload.clients") {
		t.Errorf("bad point: %v", err)
	}
}

// A design whose own table sets a swept key is named in the notes, and so
// are clients that never arrive.
func TestGridNotes(t *testing.T) {
	t.Parallel()
	a, _ := ParseSweep("store.redis_ttl=30s,60s")
	g, err := NewGrid(loader(t, "plain"), []Axis{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Notes) != 0 {
		t.Errorf("notes without an override: %v", g.Notes)
	}
	g, err = NewGrid(loader(t, "plain"), []Axis{a}, &GridOptions{Base: []string{`designs=["redis-events","redis-pinned"]`}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Notes) != 1 || !strings.Contains(g.Notes[0], "design redis-pinned sets store.redis_ttl = 5s in its own table") {
		t.Errorf("notes: %v", g.Notes)
	}
	c, _ := ParseSweep("workload.clients=10,100000")
	g, err = NewGrid(loader(t, "plain"), []Axis{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Notes) != 1 || !strings.Contains(g.Notes[0], "only 2999 of 100000 clients arrive") {
		t.Errorf("notes: %v", g.Notes)
	}
}

// A cancelled run returns the context's error and no result.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	a, _ := ParseSweep("workload.clients=10,20")
	g, err := NewGrid(loader(t, "plain"), []Axis{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, g, nil)
	if res != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v, %v", res, err)
	}
}
