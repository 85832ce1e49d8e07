package sim

import (
	"context"
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

func shippedNames(t testing.TB) []string {
	t.Helper()
	f, err := scenario.Load(shippedFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f.Names()
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

func design(t testing.TB, out *Output, name string) *report.Design {
	t.Helper()
	d := out.Report.Design(name)
	if d == nil {
		t.Fatalf("no design %s in the report", name)
	}
	return d
}
