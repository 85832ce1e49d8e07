package protocol

import (
	"time"

	"github.com/stormsim/stormsim/topology"
)

// CloseOnDrain reports whether a draining replica closes its open streams
// with a retry hint at once, rather than when their calls end or it exits:
// with drain_close = "start", or "auto" when the streams can resume on
// another replica (shared sessions), and only in an era that lets a server
// close a stream with a hint.
func (c Caps) CloseOnDrain(drainClose string) bool {
	now := drainClose == topology.DrainCloseStart ||
		((drainClose == topology.DrainCloseAuto || drainClose == "") && c.Shared)
	return now && c.PollClose
}

// CloseOnExit reports whether a replica that exits closes its streams with
// a retry hint (a graceful exit in an era with polling) rather than
// dropping them.
func (c Caps) CloseOnExit(graceful bool) bool { return graceful && c.PollClose }

// DrainHint is the retry hint of the i-th stream a drain closes: the hint
// jittered by the spread and, with an admission bucket, each group of
// admit_bucket streams told to come back one interval after the previous.
func DrainHint(rc *topology.ReplicaConfig, i int, rnd func() float64) time.Duration {
	hint := Hint(rc.RetryHint, rc.RetryHintSpread, rnd)
	if rc.AdmitBucket > 0 {
		hint += time.Duration(i/rc.AdmitBucket) * rc.AdmitInterval
	}
	return hint
}

// OrphanEnd is when a stream that follows a dead call from another replica
// ends: once the call's lease has run out after its producer died at
// death (nanoseconds), and not before from.
func OrphanEnd(rc *topology.ReplicaConfig, death, from int64) int64 {
	return max(from, death+int64(rc.OrphanLease))
}
