package sim

import (
	"time"

	"github.com/stormsim/stormsim/scenario"
)

// Per-client costs of the simulator's state, measured as peak RSS over
// deploy-restart at 20,000 and 200,000 clients (about 1.6-1.9 KiB per client
// per design there, with 5 to 6 calls each), rounded up.
const (
	estimateClientBytes = 1 << 10
	estimateCallBytes   = 256
	estimateBaseBytes   = 64 << 20
)

// MemoryEstimate is a rough upper estimate, in bytes, of the memory the
// simulator needs to run n designs of sc: every arriving client's state
// and its calls' attempts, held for every design until the report is
// written. It is for a warning before a run that cannot fit, not a
// measurement.
func MemoryEstimate(sc *scenario.Scenario, n int) int64 {
	w := &sc.Workload
	call := time.Duration(float64(w.EventsMin+w.EventsMax) / 2 / w.EventRate * float64(time.Second))
	calls := float64(scenario.Horizon(sc))/float64(max(call+w.Think, time.Millisecond)) + 1
	if w.CallsPerClient > 0 {
		calls = min(calls, float64(w.CallsPerClient))
	}
	per := estimateClientBytes + calls*estimateCallBytes
	return estimateBaseBytes + int64(float64(scenario.Arrivable(sc))*per*float64(n))
}
