//go:build !unix

package runner

import "time"

// processCPU is unknown outside Unix: 0.
func processCPU() time.Duration { return 0 }
