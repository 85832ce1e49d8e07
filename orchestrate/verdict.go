package orchestrate

import (
	"fmt"
	"strings"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/report"
)

// The exit codes a verdict gives (docs/reference.md, "Exit codes").
const (
	ExitOK           = 0
	ExitError        = 1 // a regression against a baseline, or a baseline missing
	ExitSaturated    = 97
	ExitDisagreement = agree.ExitCode // 98
	ExitThreshold    = 99
)

// Scope says what a verdict is over, which decides the precedence of its
// findings.
type Scope uint8

const (
	// OneRun is one scenario's run, over its seeds and engines (run,
	// merge). A saturated live host makes every other finding of the run
	// unjudgeable, so no verdict (97) comes first, then a disagreement of
	// the engines (98), a failed threshold (99), a moved baseline (1).
	OneRun Scope = iota
	// Nightly is many scenarios, each run on its own (nightly). A
	// scenario that failed is a verdict whatever another scenario's host
	// did, so a failed threshold, a disagreement and a moved baseline come
	// before a scenario that gave no verdict.
	Nightly
)

// Findings is what a run, or a night of runs, found that bears on its
// exit code: each one nil when not found, else the error to report.
type Findings struct {
	Saturated    error // no verdict: a live host fell behind its schedule (97)
	Disagreement error // the engines disagree beyond tolerance (98)
	Breach       error // a threshold failed (99)
	Baselines    error // a baseline moved or is missing (1)
}

// Verdict returns the finding that decides the exit: the first found in
// scope's precedence, or nil when nothing was found. The one difference
// between the scopes is here, in the order.
func (f Findings) Verdict(scope Scope) error {
	order := []error{f.Saturated, f.Disagreement, f.Breach, f.Baselines}
	if scope == Nightly {
		order = []error{f.Breach, f.Disagreement, f.Baselines, f.Saturated}
	}
	for _, err := range order {
		if err != nil {
			return err
		}
	}
	return nil
}

// HostSaturated is the error of a live run whose host fell behind its
// schedule: no verdict, exit 97.
type HostSaturated struct {
	seeds   []uint64
	reasons []string
	advice  string
	both    bool
}

func (e *HostSaturated) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stormsim: host saturated: the live run fell behind its own schedule")
	if len(e.seeds) > 0 {
		fmt.Fprintf(&b, " (seed %s)", joinSeeds(e.seeds))
	}
	b.WriteString(", so it gives no verdict")
	if e.both {
		b.WriteString(": neither the agreement nor the thresholds were judged")
	} else {
		b.WriteString(": the thresholds were not judged")
	}
	for _, r := range e.reasons {
		b.WriteString("\n  " + r)
	}
	fmt.Fprintf(&b, "\n%s\n(report.json's host block has the figures; --no-saturation-check judges the run anyway)", e.advice)
	return b.String()
}

// ExitCode makes the CLI exit 97.
func (e *HostSaturated) ExitCode() int { return ExitSaturated }

// Saturated is a *HostSaturated when any live report's host was
// saturated, else nil; both says the run compared two engines.
func Saturated(lives []*report.Report, both bool) error {
	var e *HostSaturated
	for _, r := range lives {
		if r == nil || r.Host == nil || !r.Host.Saturated {
			continue
		}
		if e == nil {
			e = &HostSaturated{reasons: r.Host.Reasons, advice: r.Host.Advice, both: both}
		}
		e.seeds = append(e.seeds, r.Seed)
	}
	if e == nil {
		return nil
	}
	return e
}

func joinSeeds(s []uint64) string {
	var parts []string
	for _, x := range s {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}
