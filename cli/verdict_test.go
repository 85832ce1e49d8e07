package cli

import (
	"errors"
	"testing"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// exitOf is the code Main exits with for a command's error.
func exitOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return ExitOK
	}
	var ec exitCoder
	if !errors.As(err, &ec) {
		t.Fatalf("%v carries no exit code", err)
	}
	return ec.ExitCode()
}

// TestNightlyVerdict holds nightly's exit to its precedence: a failure in
// any scenario before a scenario that gave no verdict (docs/nightly.md).
func TestNightlyVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		thresholds, baselines, noVerdict int
		want                             int
	}{
		{0, 0, 0, ExitOK},        // all passed
		{2, 0, 0, ExitThreshold}, // a threshold failed
		{0, 1, 0, ExitError},     // a baseline moved
		{0, 0, 1, ExitSaturated}, // a scenario gave no verdict
		{1, 1, 0, ExitThreshold}, // thresholds before baselines
		{1, 0, 1, ExitThreshold}, // a failure elsewhere wins over no verdict
		{0, 1, 1, ExitError},     // a moved baseline too
		{1, 1, 1, ExitThreshold}, // all three
	} {
		nt := &night{thresholdsFailed: tc.thresholds, baselinesFailed: tc.baselines, noVerdict: tc.noVerdict}
		if got := exitOf(t, nt.verdict(3)); got != tc.want {
			t.Errorf("nightly with %+v exits %d, want %d", tc, got, tc.want)
		}
	}
}

// TestMergeVerdict holds merge's exit to run's precedence: a saturated
// shard host (97) before a failed threshold (99), and --no-saturation-check
// judging the thresholds anyway.
func TestMergeVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sat, breach, noSat bool
		want               int
	}{
		{false, false, false, ExitOK},       // nothing found
		{true, false, false, ExitSaturated}, // saturated alone
		{false, true, false, ExitThreshold}, // threshold alone
		{true, true, false, ExitSaturated},  // saturated wins
		{true, true, true, ExitThreshold},   // unless the check is off
		{true, false, true, ExitOK},         // which leaves nothing
	} {
		sc := &scenario.Scenario{Name: "s"}
		if tc.breach {
			sc.Expect = []scenario.Check{{Metric: "no-such-metric", Op: "max"}}
		}
		rep := &report.Report{Scenario: "s", Designs: []report.Design{{Name: "d"}}}
		if tc.sat {
			rep.Host = &report.Host{Saturated: true}
		}
		f := &mergeFlags{quiet: true, noSat: tc.noSat}
		if got := exitOf(t, f.verdict(&Env{}, sc, rep, t.TempDir(), 2)); got != tc.want {
			t.Errorf("merge with %+v exits %d, want %d", tc, got, tc.want)
		}
	}
}
