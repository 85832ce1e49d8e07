//go:build !linux

package sim

import "time"

// threadCPU reports that this system's thread CPU clock is not read here.
func threadCPU() (time.Duration, bool) { return 0, false }
