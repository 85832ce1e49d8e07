package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/stormsim/stormsim/orchestrate"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// nightlyEngine is the engine a nightly or baseline run gives sc: the
// --engine flag when set, else the scenario's [nightly] table, else the
// simulator; and how many seeds a live run takes (--seeds when above 0).
func nightlyEngine(sc *scenario.Scenario, engine string, seeds int) (string, int) {
	if engine == "" {
		engine = sc.Nightly.Engine
	}
	if engine == "" {
		engine = "sim"
	}
	if engine == "sim" {
		return "sim", 1
	}
	n := max(1, sc.Nightly.Seeds, sc.ExpectSeeds)
	if seeds > 0 {
		n = seeds
	}
	return engine, n
}

// baselinePath is where a scenario's baseline for an engine lives: the
// simulator's <scenario>.json, the live engine's <scenario>.live.json.
func baselinePath(dir, name, engine string) string {
	if engine == "live" {
		return filepath.Join(dir, name+".live.json")
	}
	return filepath.Join(dir, name+".json")
}

// runOn runs sc on engine: the simulator as runSeeds does, or the live
// engine at seeds seeds (seed, seed+1, ...) with the designs of its
// [nightly] table (all when it names none), the report then being the
// first seed's with every seed's metrics attached (over_seeds) and the
// host block of a seed whose host was saturated, if any was.
func (f *scenarioFlags) runOn(ctx context.Context, sc *scenario.Scenario, engine string, seeds int) (*report.Report, error) {
	if engine == "sim" {
		return f.runSeeds(ctx, sc)
	}
	live, err := (&runFlags{file: f.file}).liveOptions([]string{"live"}, nil)
	if err != nil {
		return nil, fmt.Errorf("live, seed %d: %w", sc.Seed, err)
	}
	designs, ok := sc.NightlyDesigns()
	if !ok {
		var run []string
		for _, d := range sc.Designs {
			run = append(run, d.Name)
		}
		return nil, usageError{fmt.Errorf("%s: scenario.%s.nightly.designs: none of %s is among the designs run (%s)",
			f.file, sc.Name, strings.Join(sc.Nightly.Designs, ", "), strings.Join(run, ", "))}
	}
	var reps []*report.Report
	for i := range seeds {
		esc, sets := sc, []string(f.set)
		if i > 0 {
			sets = withSeed(f.set, sc.Seed+uint64(i))
			var err error
			if esc, err = loadScenario(f.file, sc.Name, sets); err != nil {
				return nil, usageError{err}
			}
		}
		rep, _, err := orchestrate.RunEngine(ctx, "live", esc, sets, &orchestrate.Options{Designs: designs, Live: live})
		if err != nil {
			return nil, fmt.Errorf("live, seed %d: %w", esc.Seed, err)
		}
		reps = append(reps, rep)
	}
	if len(reps) == 1 {
		return reps[0], nil
	}
	top := report.WithOverSeeds(reps)
	for _, r := range reps {
		if r.Host != nil && r.Host.Saturated {
			top.Host = r.Host // any seed saturated: the run as a whole was
		}
	}
	return top, nil
}
