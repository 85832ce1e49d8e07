//go:build race

package calibrate

// raceOn: the race detector slows the Go client several times over, and
// the client, not Redis, then sets the measured rates and latencies.
const raceOn = true
