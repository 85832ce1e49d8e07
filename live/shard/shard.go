// Package shard is what one shard of a sharded live run leaves behind, and
// how a set of shards is found and checked before stormsim merge joins
// them: every index once, the same count, scenario hash and start time.
//
// A shard of a run split N ways writes OUT/shard-<i>-of-<N>/: shard.json
// (its Meta), history.json.gz (check.EncodeHistories), results.bin (its
// HTTP exchanges, vegeta's format), report.json (its own clients judged
// alone), live.log, scenarios.toml (the file it loaded, so that merge
// loads the same scenario) and, written last, the done marker DoneFile.
package shard

import (
	"fmt"
	"time"
)

// Files a shard's folder holds.
const (
	MetaFile     = "shard.json"
	DoneFile     = "done"
	ScenarioFile = "scenarios.toml"
)

// EnvIndex is the variable a Kubernetes Indexed Job sets in each pod: the
// pod's completion index, 0..N-1.
const EnvIndex = "JOB_COMPLETION_INDEX"

// EnvStartAt is the variable that stands for run --start-at.
const EnvStartAt = "STORMSIM_START_AT"

// Meta is shard.json: who the shard was, what it ran and when it started.
type Meta struct {
	Index int `json:"index"` // 0..Count-1
	Count int `json:"count"`
	// Scenario, ScenarioHash and Seed name what ran; Set are the --set
	// overrides it was loaded with (with ScenarioFile, merge loads the same).
	Scenario     string   `json:"scenario"`
	ScenarioHash string   `json:"scenario_hash"`
	Seed         uint64   `json:"seed"`
	Set          []string `json:"set,omitempty"`
	Design       string   `json:"design"`
	Target       string   `json:"target"`         // the URL every shard's clients aimed at
	Tool         string   `json:"tool,omitempty"` // an own server's tool the clients called
	Up           string   `json:"up,omitempty"`   // the state file of the stormsim up it ran against
	// StartAt is the barrier every shard waited for; the run's clock
	// starts there (t0). Started is when this shard's clock read it
	// passed; StartOffsetMS = Started - StartAt, > 0 for a late start.
	StartAt       time.Time `json:"start_at"`
	Started       time.Time `json:"started"`
	StartOffsetMS float64   `json:"start_offset_ms"`
	Finished      time.Time `json:"finished"`
	// Identity: where it ran.
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// Clients are the client ids this shard ran: id % Count == Index.
	Clients int `json:"clients"`
	// FaultsApplied are the server-side fault steps this shard carried
	// out (shard 0 only); the others record the schedule and apply none.
	FaultsApplied []string `json:"faults_applied,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

// Name is the folder of shard i of n.
func Name(i, n int) string { return fmt.Sprintf("shard-%d-of-%d", i, n) }
