package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stormsim/stormsim/report"
)

// InjectLatenessEnv names the test hook that adds lateness to every sample
// a live run measures, so that its host reads as saturated on any machine
// (docs/reference.md, "Exit codes"). It is a Go duration, e.g. "2s".
const InjectLatenessEnv = "STORMSIM_INJECT_LATENESS"

func injectedLateness() (time.Duration, error) {
	v := os.Getenv(InjectLatenessEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q is not a duration of at least 0", InjectLatenessEnv, v)
	}
	return d, nil
}

// hostSaturated is the error of a live run whose host fell behind its
// schedule: no verdict, exit 97.
type hostSaturated struct {
	seeds   []uint64
	reasons []string
	advice  string
	both    bool
}

func (e *hostSaturated) Error() string {
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

func (e *hostSaturated) ExitCode() int { return ExitSaturated }

// saturated is a *hostSaturated when any live report's host was saturated.
func saturated(lives []*report.Report, both bool) error {
	var e *hostSaturated
	for _, r := range lives {
		if r == nil || r.Host == nil || !r.Host.Saturated {
			continue
		}
		if e == nil {
			e = &hostSaturated{reasons: r.Host.Reasons, advice: r.Host.Advice, both: both}
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
