package report

import "time"

// Shards is the shards block of a merged report: the run was split across
// Count processes (a Kubernetes Indexed Job's pods), each running the
// clients whose id % Count is its index, all against one target from one
// start time, and judged as one history by stormsim merge.
type Shards struct {
	Count   int       `json:"count"`
	StartAt time.Time `json:"start_at"`
	// StartToleranceMS is how late a shard may start before it is
	// reported late.
	StartToleranceMS float64    `json:"start_tolerance_ms"`
	Shards           []ShardRow `json:"shards"`
}

// ShardRow is one shard of a merged run.
type ShardRow struct {
	Index         int       `json:"index"`
	Folder        string    `json:"folder"`
	Host          string    `json:"host"`
	PID           int       `json:"pid"`
	Clients       int       `json:"clients"`
	Started       time.Time `json:"started"`
	StartOffsetMS float64   `json:"start_offset_ms"`
	Late          bool      `json:"late"` // started later than StartToleranceMS after StartAt
	// NegativeLatencies counts this shard's replay and recovery latencies
	// that came out below 0 against the faults shard 0 applied: its clock
	// is behind shard 0's.
	NegativeLatencies int      `json:"negative_latencies"`
	FaultsApplied     []string `json:"faults_applied,omitempty"`
	Errors            []string `json:"errors,omitempty"`
}
