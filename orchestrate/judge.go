package orchestrate

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/scenario"
)

// KeepWarnings keeps, in each scenario, the warnings that concern the
// designs run (nil: all of them) or no design at all: what goes to the
// terminal and into the reports' notes.
func KeepWarnings(designs []string, scs ...*scenario.Scenario) {
	for _, s := range scs {
		var keep []scenario.Warning
		for _, w := range s.Warnings {
			if w.Design == "" || designs == nil || slices.Contains(designs, w.Design) {
				keep = append(keep, w)
			}
		}
		s.Warnings = keep
	}
}

// judge prints each engine's table and where its files went, judges the
// thresholds, and gives the verdict.
func (s *state) judge() error {
	var failed []expect.Result
	var err error
	if s.o.Seeds > 1 {
		failed, err = s.reportSeeds()
	} else {
		failed, err = s.reportOne()
	}
	if err != nil {
		return err
	}
	var f Findings
	if s.o.SaturationCheck {
		f.Saturated = Saturated(s.all["live"], len(s.engines) > 1)
	}
	if s.agreement != nil && f.Saturated == nil {
		// A saturated host leaves the agreement unjudged and unprinted.
		if s.o.Stdout != nil {
			fmt.Fprintf(s.o.Stdout, "\nagreement: %s: %s\n", s.agreement.Summary(), filepath.Join(s.dir, "agreement.md"))
		}
		if s.agreement.Failed > 0 {
			f.Disagreement = &agree.Disagreement{A: s.agreement}
		}
	}
	if len(failed) > 0 {
		f.Breach = &expect.Breach{Failed: failed}
	}
	return f.Verdict(OneRun)
}

// reportOne prints each job's table and judges its thresholds: a run of
// one seed.
func (s *state) reportOne() ([]expect.Result, error) {
	var failed []expect.Result
	for i, jb := range s.jobs {
		rep := s.all[jb.engine][i/len(s.engines)]
		var results []expect.Result
		if s.o.Thresholds {
			results = expect.Evaluate(rep, s.o.Scenario.Expect)
		}
		failed = append(failed, expect.Failed(results)...)
		w := s.o.Stdout
		if w == nil {
			continue
		}
		sub := filepath.Join(s.dir, jb.prefix)
		if len(s.engines) > 1 {
			fmt.Fprintln(w)
		}
		if err := rep.WriteTable(w); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "\nreport: %s\n", filepath.Join(sub, "report.json"))
		if s.o.Charts {
			fmt.Fprintf(w, "charts: %s\n", filepath.Join(sub, plots.PageName))
		}
		if len(results) > 0 {
			fmt.Fprintf(w, "thresholds: %d checked, %d failed\n", len(results), len(expect.Failed(results)))
		}
	}
	return failed, nil
}

// reportSeeds prints each engine's table over the seeds and judges the
// thresholds: on the means when the scenario's expect table asks for
// seeds, else at every seed. It returns the failed checks.
func (s *state) reportSeeds() ([]expect.Result, error) {
	sc, w := s.o.Scenario, s.o.Stdout
	var failed []expect.Result
	for _, engine := range s.engines {
		top := s.tops[engine]
		var results []expect.Result
		how := fmt.Sprintf("at each of the %d seeds", s.o.Seeds)
		if s.o.Thresholds {
			if sc.ExpectSeeds > 1 {
				results = expect.Evaluate(top, sc.Expect)
				how = fmt.Sprintf("on the means over %d seeds", s.o.Seeds)
				if s.o.Seeds != sc.ExpectSeeds {
					how += fmt.Sprintf(" (the scenario's expect table asks for %d)", sc.ExpectSeeds)
				}
			} else {
				for _, r := range s.all[engine] {
					results = append(results, expect.Evaluate(r, sc.Expect)...)
				}
			}
		}
		failed = append(failed, expect.Failed(results)...)
		if w == nil {
			continue
		}
		if len(s.engines) > 1 {
			fmt.Fprintln(w)
		}
		if err := top.WriteSeedTable(w); err != nil {
			return nil, err
		}
		if ors := top.OverSeeds.Orderings; len(ors) > 0 {
			fmt.Fprintf(w, "\norderings over %s:\n", Plural(len(top.OverSeeds.Seeds), "seed"))
			for _, o := range ors {
				fmt.Fprintf(w, "  %s\n", o)
			}
		}
		sub := s.dir
		if len(s.engines) > 1 {
			sub = filepath.Join(s.dir, engine)
		}
		fmt.Fprintf(w, "\nreport: %s (each seed's run in %s)\n", filepath.Join(sub, "report.json"), filepath.Join(s.dir, "seed-<S>"))
		if len(results) > 0 {
			fmt.Fprintf(w, "thresholds: %d checked %s, %d failed\n", len(results), how, len(expect.Failed(results)))
		}
	}
	return failed, nil
}

// Plural is n and the noun, with an s when n is not 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
