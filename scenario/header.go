package scenario

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/stormsim/stormsim/report"
)

// ErrNoDesigns is returned by an engine when the design subset matches
// nothing.
var ErrNoDesigns = errors.New("scenario: no designs to run")

// Horizon is the time a run covers: the scenario plus its drain.
func Horizon(sc *Scenario) time.Duration { return sc.Duration + sc.Drain }

// DesignSeed derives a design's RNG seed from the run seed and its name, so
// a design's row does not depend on which other designs run.
func DesignSeed(seed uint64, design string) (uint64, uint64) {
	h := sha256.Sum256([]byte(design))
	return seed ^ binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])
}

// Hash is the scenario's fingerprint: a hash of its resolved settings.
func Hash(sc *Scenario) string {
	b, err := json.Marshal(sc)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Header is a report for sc with no designs yet: what every engine writes
// first, the fault schedule included.
func Header(sc *Scenario, engine string) *report.Report {
	r := &report.Report{
		Schema: report.Schema, StormsimVersion: report.Version, Scenario: sc.Name,
		Description: sc.Description, ScenarioHash: Hash(sc), Engine: engine, Seed: sc.Seed,
		DurationS: sc.Duration.Seconds(), Faults: []report.Fault{}, Designs: []report.Design{},
		Notes: sc.WarningTexts(nil),
	}
	ctxF := sc.FaultContext()
	for _, f := range sc.Faults {
		sp := f.Span(ctxF)
		r.Faults = append(r.Faults, report.Fault{Kind: f.Kind(), Label: sp.Label, AtS: sp.At.Seconds(), UntilS: sp.Until.Seconds()})
	}
	return r
}
