package sim

import (
	"context"
	"sync"
	"testing"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

const shippedFile = "../scenarios.toml"

// load resolves a shipped scenario with optional --set overrides.
func load(t testing.TB, name string, set ...string) *scenario.Scenario {
	t.Helper()
	f, err := scenario.Load(shippedFile, &scenario.Options{Set: set, Target: name})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	sc, err := f.Scenario(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// shippedNames are the shipped scenarios of the session workload, which
// the facts and invariants of sessions and calls are about; the request
// workload's scenarios have their own tests (requests_test.go).
func shippedNames(t testing.TB) []string {
	t.Helper()
	f, err := scenario.Load(shippedFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range f.Names() {
		if sc, err := f.Scenario(n); err != nil || !sc.Requests() {
			names = append(names, n)
		}
	}
	return names
}

func run(t testing.TB, sc *scenario.Scenario, designs ...string) *Output {
	t.Helper()
	opts := &Options{}
	if len(designs) > 0 {
		opts.Designs = designs
	}
	out, err := Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatalf("run %s: %v", sc.Name, err)
	}
	return out
}

// sharedRun is one simulation of a resolved scenario, computed once.
type sharedRun struct {
	once sync.Once
	out  *Output
	err  error
}

// runs holds every simulation shared computed, by scenario name and Hash
// (the resolved settings: seed and overrides included).
var runs sync.Map // string → *sharedRun

// shared is run(t, sc) with every design, computed once per test binary
// however many tests ask for the same resolved scenario, so the shipped
// scenarios (thundering-herd above all) are simulated once, not once per
// test. A design's row does not depend on which others run (DesignSeed;
// TestDeterminism holds it), so a test that reads a few designs reads them
// here. The Output is shared: callers read it and change nothing.
func shared(t testing.TB, sc *scenario.Scenario) *Output {
	t.Helper()
	h := scenario.Hash(sc)
	if h == "" {
		return run(t, sc)
	}
	v, _ := runs.LoadOrStore(sc.Name+"/"+h, &sharedRun{})
	r := v.(*sharedRun)
	r.once.Do(func() { r.out, r.err = Run(context.Background(), sc, nil) })
	if r.err != nil {
		t.Fatalf("run %s: %v", sc.Name, r.err)
	}
	return r.out
}

func design(t testing.TB, out *Output, name string) *report.Design {
	t.Helper()
	d := out.Report.Design(name)
	if d == nil {
		t.Fatalf("no design %s in the report", name)
	}
	return d
}
