package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// Part is one shard of a sharded run, as stormsim merge read it.
type Part struct {
	Dir       string // the shard's folder
	Meta      *shard.Meta
	Histories map[string]*history.History // history.json.gz
	Report    *report.Report              // the shard's own report.json
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

// DefaultStartTolerance is how late a shard may start, by default, before
// a merged report calls it late.
const DefaultStartTolerance = time.Second

// UpCountsFile is the counters a stormsim up writes to its logs folder
// when it stops.
const UpCountsFile = "counts.json"

// UpCounts is counts.json: every reference replica's counters at the end,
// the processes whose counters could not be read, or why the design keeps
// none.
type UpCounts struct {
	Counts          []*replica.Counts `json:"counts"`
	Missing         []string          `json:"missing"`
	NotReconcilable string            `json:"not_reconcilable,omitempty"`
}

// Merge judges the union of the shards' histories as one run of sc, as if
// one machine had run every client: the same checker over every client's
// history, the HTTP exchanges of all of them. parts is a complete set,
// checked by shard.Check, in index order; only shard 0's fault record is
// kept (it applied the server-side faults; each shard applied the client
// drops to its own clients).
func Merge(ctx context.Context, sc *scenario.Scenario, parts []Part, opts *MergeOptions) (*Output, error) {
	if opts == nil {
		opts = &MergeOptions{}
	}
	if opts.StartTolerance <= 0 {
		o := *opts
		o.StartTolerance = DefaultStartTolerance
		opts = &o
	}
	if len(parts) == 0 {
		return nil, errors.New("live: merge: no shards")
	}
	m0 := parts[0].Meta
	designs, err := sc.Select([]string{m0.Design})
	if err != nil || len(designs) != 1 {
		return nil, fmt.Errorf("live: merge: the shards ran design %q, which scenario %s does not have", m0.Design, sc.Name)
	}
	d := designs[0]
	t0 := m0.StartAt
	h := &history.History{}
	owner := map[int32]int{} // client -> its shard
	for i, p := range parts {
		ph := p.Histories[d.Name]
		if ph == nil {
			return nil, fmt.Errorf("live: merge: %s holds no history of design %s", p.Dir, d.Name)
		}
		if i == 0 {
			*h = history.History{Horizon: ph.Horizon, Step: ph.Step, Interval: ph.Interval, Stored: ph.Stored, NoStore: ph.NoStore,
				HaveProduction: ph.HaveProduction, ByEventID: ph.ByEventID, Faults: ph.Faults}
		}
		for _, c := range ph.Calls {
			owner[c.Client] = i
		}
		h.Join(ph)
	}
	in := &evidence{d: d, t0: t0, endpoint: m0.Target, tool: m0.Tool, faults: scenario.Header(sc, "live").Faults, steadyS: workload.SteadyFromS(sc),
		noCounts: "the shards ran against a server stormsim keeps no counters of"}
	negative := make([]int, len(parts))
	notes, err := upLogs(sc, d, h, owner, negative, in, opts)
	if err != nil {
		return nil, err
	}
	in.upLogNotes, in.sayReconciliation = notes, opts.UpLogs != ""
	notes = nil

	r := scenario.Header(sc, "live")
	r.Shards, notes = shardsBlock(parts, negative, r, opts)
	if sc.ProbesFor(d) {
		notes = append(notes, "the isolation probes do not run in a sharded run (each shard would probe its own clients' sessions only): run the scenario unsharded to probe")
	}
	in.shardNotes = notes
	row, res, err := judge(ctx, h, in)
	if err != nil {
		return nil, err
	}
	r.Designs = append(r.Designs, row)
	if opts.Results != nil {
		enc := vegeta.NewEncoder(opts.Results)
		for i := range res {
			if err := enc.Encode(&res[i]); err != nil {
				return nil, fmt.Errorf("live: merge: writing results: %w", err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &Output{Report: r, Histories: map[string]*history.History{d.Name: h}, Results: map[string]int{d.Name: len(res)}}, nil
}

// upLogs reads a stormsim up's production logs and counters into the
// merged history h and the evidence in, when the merge has them
// (--up-logs), and counts per shard the events received before up
// produced them (negative); it returns the notes on them.
func upLogs(sc *scenario.Scenario, d *scenario.Design, h *history.History, owner map[int32]int, negative []int, in *evidence, opts *MergeOptions) ([]string, error) {
	var notes []string
	t0, m0Target := in.t0, in.endpoint
	if opts.UpLogs != "" && d.Own == nil {
		prod, _, err := readLogs(opts.UpLogs, t0)
		if err != nil {
			return nil, fmt.Errorf("live: merge: up's production logs in %s: %w", opts.UpLogs, err)
		}
		// An up that served clients before this run holds their events
		// too, under the same call tokens: they are not this run's.
		kept, before := prod[:0], 0
		for _, p := range prod {
			if p.T < 0 {
				before++
				continue
			}
			kept = append(kept, p)
		}
		if before > 0 {
			notes = append(notes, fmt.Sprintf("up's production logs hold %d events produced before the run's start, left out: that up served other clients first, so its counters cannot be held to this run (run a fresh up per run)", before))
		}
		h.Produced, h.HaveProduction = kept, true
		producedAt := map[[4]int32]int64{}
		for _, p := range kept {
			if !p.Start {
				producedAt[[4]int32{p.Client, p.Seq, p.Attempt, p.Index}] = p.T
			}
		}
		for _, r := range h.Receipts {
			if at, ok := producedAt[[4]int32{r.Client, r.Seq, r.Attempt, r.Index}]; ok && r.T < at {
				negative[owner[r.Client]]++
			}
		}
		in.up = upNote(m0Target, true)
		b, err := os.ReadFile(filepath.Join(opts.UpLogs, UpCountsFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			in.noCounts = fmt.Sprintf("%s is not in %s yet: stormsim up writes it when it stops; stop up (Ctrl-C) and merge again, or merge with --wait, which waits for it", UpCountsFile, opts.UpLogs)
		case err != nil:
			return nil, fmt.Errorf("live: merge: %w", err)
		default:
			var c UpCounts
			if err := json.Unmarshal(b, &c); err != nil {
				return nil, fmt.Errorf("live: merge: %s: %w", filepath.Join(opts.UpLogs, UpCountsFile), err)
			}
			if c.NotReconcilable != "" {
				in.noCounts = c.NotReconcilable
			} else {
				in.counts, in.noCounts = countsOf(c.Counts, c.Missing, sc, d, t0), ""
			}
		}
		if before > 0 {
			in.counts, in.noCounts = nil, "up's counters include clients from before this run"
		}
	} else if d.Own == nil {
		in.up = upNote(m0Target, false)
		in.noCounts = "merged without --up-logs: the clients' side alone"
	}
	if d.Own == nil && d.Server == topology.ServerGoSDK {
		in.noCounts = "the go-sdk replica keeps no counters stormsim can read: the SDK exposes no count of the events it produced or sent"
	}
	return notes, nil
}

// shardsBlock is the report's shards block and the notes on late shards
// and on shards whose clock is behind up's; the run's host verdict is
// saturated if any shard's was (set on r).
func shardsBlock(parts []Part, negative []int, r *report.Report, opts *MergeOptions) (*report.Shards, []string) {
	var notes []string
	m0 := parts[0].Meta
	blk := &report.Shards{Count: m0.Count, StartAt: m0.StartAt, StartToleranceMS: float64(opts.StartTolerance) / 1e6}
	for i, p := range parts {
		m := p.Meta
		sr := report.ShardRow{Index: m.Index, Folder: p.Dir, Host: m.Host, PID: m.PID, Clients: m.Clients, Started: m.Started,
			StartOffsetMS: m.StartOffsetMS, Late: m.StartOffsetMS > float64(opts.StartTolerance)/1e6,
			NegativeLatencies: negative[i], FaultsApplied: m.FaultsApplied, Errors: m.Errors}
		blk.Shards = append(blk.Shards, sr)
		if sr.Late {
			notes = append(notes, fmt.Sprintf("shard %d of %d (%s) started %.0f ms after the start time, beyond the tolerance of %v: its clients arrived late",
				m.Index, m.Count, m.Host, m.StartOffsetMS, opts.StartTolerance))
		}
		if negative[i] > 0 {
			notes = append(notes, fmt.Sprintf("shard %d of %d (%s): %d events received before up produced them, by the two clocks: the shard's clock is behind up's",
				m.Index, m.Count, m.Host, negative[i]))
		}
		if p.Report != nil && p.Report.Host != nil && (r.Host == nil || p.Report.Host.Saturated && !r.Host.Saturated) {
			r.Host = p.Report.Host // the run as a whole fell behind if any shard did
		}
	}
	return blk, notes
}
