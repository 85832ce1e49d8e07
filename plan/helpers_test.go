package plan

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stormsim/stormsim/scenario"
)

// testFile holds the scenarios the plan tests sweep.
const testFile = "testdata/plan.toml"

type scenarioT = scenario.Scenario

var errStop = errors.New("test loader: stop")

// loader resolves scenario name of testFile with --set overrides.
func loader(t testing.TB, name string) Loader {
	t.Helper()
	data, err := os.ReadFile(testFile)
	if err != nil {
		t.Fatal(err)
	}
	return func(set []string) (*scenario.Scenario, error) {
		f, err := scenario.Parse(testFile, data, &scenario.Options{Set: set, Target: name})
		if err != nil {
			return nil, err
		}
		return f.Scenario(name)
	}
}

// runGrid sweeps "plain" with the base overrides and the sweeps, jobs at a
// time.
func runGrid(t testing.TB, jobs int, base []string, sweeps ...string) *Result {
	t.Helper()
	var axes []Axis
	for _, s := range sweeps {
		ax, err := ParseSweep(s)
		if err != nil {
			t.Fatal(err)
		}
		axes = append(axes, ax)
	}
	g, err := NewGrid(loader(t, "plain"), axes, &GridOptions{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), g, &Options{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// row returns the row of design at the point with these axis values.
func row(t testing.TB, res *Result, design string, values ...float64) *Row {
	t.Helper()
	for i := range res.Rows {
		r := &res.Rows[i]
		p := res.Grid.Points[r.Point]
		if r.Design != design || len(p.Values) != len(values) {
			continue
		}
		match := true
		for j, v := range values {
			match = match && p.Values[j] == v
		}
		if match {
			return r
		}
	}
	t.Fatalf("no row for %s at %v", design, values)
	return nil
}
