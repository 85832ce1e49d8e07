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
