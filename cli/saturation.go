package cli

import (
	"fmt"
	"os"
	"time"
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

// InterruptWithinEnv names the setting that bounds the keeping of a live
// run a signal interrupts (orchestrate.Options.InterruptWithin, a Go
// duration; 10 s when unset). A test sets it tiny to see a run whose
// histories could not be kept in time leave nothing.
const InterruptWithinEnv = "STORMSIM_INTERRUPT_WITHIN"

// interruptWithin reads InterruptWithinEnv; 0 when unset.
func interruptWithin() (time.Duration, error) {
	v := os.Getenv(InterruptWithinEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a duration above 0", InterruptWithinEnv, v)
	}
	return d, nil
}
