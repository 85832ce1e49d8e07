package orchestrate

import (
	"errors"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// moved is nightly's finding of a baseline that moved: exit 1.
type moved struct{}

func (moved) Error() string { return "moved from its baseline" }
func (moved) ExitCode() int { return ExitError }

// exitOf is the code a verdict exits with: 0 for none.
func exitOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return ExitOK
	}
	var ec interface{ ExitCode() int }
	if !errors.As(err, &ec) {
		t.Fatalf("%v carries no exit code", err)
	}
	return ec.ExitCode()
}

// findings builds the findings a command reports from the exit codes it
// found, with the errors the commands return for each.
func findings(t *testing.T, codes []int) Findings {
	t.Helper()
	var f Findings
	for _, c := range codes {
		switch c {
		case ExitSaturated:
			f.Saturated = Saturated([]*report.Report{{Seed: 42, Host: &report.Host{Saturated: true, Reasons: []string{"timers late"}}}}, false)
		case ExitDisagreement:
			f.Disagreement = &agree.Disagreement{A: &agree.Agreement{Failed: 1}}
		case ExitThreshold:
			f.Breach = &expect.Breach{Failed: []expect.Result{{}}}
		case ExitError:
			f.Baselines = moved{}
		default:
			t.Fatalf("no finding exits %d", c)
		}
	}
	return f
}

// TestVerdict holds the exit precedence of run, merge and nightly: each
// command with what it can find, alone and together.
func TestVerdict(t *testing.T) {
	t.Parallel()
	scope := map[string]Scope{"run": OneRun, "merge": OneRun, "nightly": Nightly}
	for _, tc := range []struct {
		cmd   string
		found []int
		want  int
	}{
		// run: nothing found
		{"run", nil, ExitOK},
		// run: each alone
		{"run", []int{ExitSaturated}, ExitSaturated},
		{"run", []int{ExitDisagreement}, ExitDisagreement},
		{"run", []int{ExitThreshold}, ExitThreshold},
		// run: a saturated host judges nothing else
		{"run", []int{ExitThreshold, ExitSaturated}, ExitSaturated},
		{"run", []int{ExitDisagreement, ExitSaturated}, ExitSaturated},
		{"run", []int{ExitDisagreement, ExitThreshold, ExitSaturated}, ExitSaturated},
		// run: the engines disagreeing makes the thresholds moot
		{"run", []int{ExitThreshold, ExitDisagreement}, ExitDisagreement},
		// run: the one-run order puts a moved baseline last
		{"run", []int{ExitError, ExitThreshold}, ExitThreshold},
		{"run", []int{ExitError}, ExitError},
		// merge: nothing, each alone, both
		{"merge", nil, ExitOK},
		{"merge", []int{ExitSaturated}, ExitSaturated},
		{"merge", []int{ExitThreshold}, ExitThreshold},
		{"merge", []int{ExitThreshold, ExitSaturated}, ExitSaturated},
		// nightly: nothing found
		{"nightly", nil, ExitOK},
		// nightly: each alone
		{"nightly", []int{ExitSaturated}, ExitSaturated},
		{"nightly", []int{ExitThreshold}, ExitThreshold},
		{"nightly", []int{ExitError}, ExitError},
		// nightly: a failed threshold anywhere wins over the rest
		{"nightly", []int{ExitSaturated, ExitThreshold}, ExitThreshold},
		{"nightly", []int{ExitError, ExitThreshold}, ExitThreshold},
		{"nightly", []int{ExitSaturated, ExitError, ExitThreshold}, ExitThreshold},
		// nightly: a moved baseline is a verdict; a saturated scenario is none
		{"nightly", []int{ExitSaturated, ExitError}, ExitError},
		// nightly: a disagreement, should a scenario find one, sits after thresholds
		{"nightly", []int{ExitDisagreement, ExitThreshold}, ExitThreshold},
		{"nightly", []int{ExitSaturated, ExitDisagreement, ExitError}, ExitDisagreement},
	} {
		if got := exitOf(t, findings(t, tc.found).Verdict(scope[tc.cmd])); got != tc.want {
			t.Errorf("%s finding %v exits %d, want %d", tc.cmd, tc.found, got, tc.want)
		}
	}
}

// TestSaturated names every saturated seed and only those.
func TestSaturated(t *testing.T) {
	t.Parallel()
	if err := Saturated([]*report.Report{{Seed: 1}, nil, {Seed: 2, Host: &report.Host{}}}, true); err != nil {
		t.Fatalf("no host saturated, got %v", err)
	}
	sat := &report.Host{Saturated: true, Reasons: []string{"producers late"}, Advice: "fewer clients"}
	err := Saturated([]*report.Report{{Seed: 1, Host: sat}, {Seed: 2}, {Seed: 3, Host: sat}}, true)
	if err == nil {
		t.Fatal("two saturated seeds gave no error")
	}
	msg := err.Error()
	for _, want := range []string{"(seed 1, 3)", "neither the agreement nor the thresholds", "producers late", "fewer clients"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
}

// TestRunVerdict holds run's own judging to the precedence: a run of both
// engines at one seed, with a saturated live host, a failed agreement and
// a failed threshold in every combination.
func TestRunVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sat, disagree, breach bool
		want                  int
	}{
		{false, false, false, ExitOK},          // nothing found
		{true, false, false, ExitSaturated},    // saturated alone
		{false, true, false, ExitDisagreement}, // disagreement alone
		{false, false, true, ExitThreshold},    // threshold alone
		{true, true, true, ExitSaturated},      // a saturated host judges nothing
		{true, false, true, ExitSaturated},     // nor the thresholds
		{false, true, true, ExitDisagreement},  // disagreeing engines make thresholds moot
		{true, true, false, ExitSaturated},     // nor the agreement
	} {
		sc := &scenario.Scenario{Name: "s"}
		if tc.breach {
			sc.Expect = []scenario.Check{{Metric: "no-such-metric", Op: "max"}}
		}
		live := &report.Report{Seed: 1, Designs: []report.Design{{Name: "d"}}}
		if tc.sat {
			live.Host = &report.Host{Saturated: true}
		}
		s := &state{
			o:       &Options{Scenario: sc, Seeds: 1, Engine: "both", Thresholds: true, SaturationCheck: true},
			engines: Engines("both"),
			jobs:    []job{{engine: "sim"}, {engine: "live"}},
			all:     map[string][]*report.Report{"sim": {{Seed: 1, Designs: []report.Design{{Name: "d"}}}}, "live": {live}},
			dir:     t.TempDir(),
		}
		s.agreement = &agree.Agreement{}
		if tc.disagree {
			s.agreement.Failed = 1
		}
		if got := exitOf(t, s.judge()); got != tc.want {
			t.Errorf("run with %+v exits %d, want %d", tc, got, tc.want)
		}
	}
}
