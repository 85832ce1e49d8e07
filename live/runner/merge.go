package runner

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// Part is one shard of a sharded run, as stormsim merge read it.
type Part struct {
	Dir       string // the shard's folder
	Meta      *shard.Meta
	Histories map[string]*check.History // history.json.gz
	Report    *report.Report            // the shard's own report.json
}

// MergeOptions tunes Merge.
type MergeOptions struct {
	// UpLogs is the logs folder of the stormsim up the shards ran
	// against: its production logs and counts.json make the merged run
	// judged with the server's side and reconciled. "" judges the clients'
	// side alone.
	UpLogs string
	// StartTolerance is how late a shard may start before the report
	// calls it late.
	StartTolerance time.Duration
	// Results, if set, receives the merged HTTP exchanges (results.bin).
	Results io.Writer
}

// Merge judges the union of the shards' histories as one run of sc, as if
// one machine had run every client. parts is a complete set, checked by
// shard.Check, in index order.
func Merge(ctx context.Context, sc *scenario.Scenario, parts []Part, opts *MergeOptions) (*Output, error) {
	return nil, errors.New("live: merge: not yet")
}
