package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// evidence is everything a design's run leaves, besides its history, that
// the judge reads: the run's frame (the design, its clock, its target),
// the server side's own counts, what the topology, the store watch, the
// store sampler, the fault hooks, the guard and the isolation probes saw.
// A run's steps gather it (liveRun.collect); Merge builds it from the
// shards and up's logs. The metrics the checker cannot count from the
// history (the store's peak, the events leaked, the recovery after each
// fault) come from it, in judge, not patched into the row afterwards.
type evidence struct {
	d        *scenario.Design
	t0       time.Time      // the run's clock: the history's times are from it
	endpoint string         // the URL the clients aimed at
	tool     string         // an own server's tool
	faults   []report.Fault // the scenario's schedule, for the recovery after each fault
	steadyS  float64        // when the load reached its level (workload.SteadyFromS), the recovery's earliest baseline

	counts *check.ServerCounts // nil: not reconcilable, for noCounts
	// listen is the listen block (listen.go), nil when no client listened;
	// listenNote says why it does not reconcile, or is missing.
	listen      *report.Listen
	listenNote  string
	noCounts    string
	exits       []topo.Exit
	neverReady  []neverReadySlot
	storeNotes  []string
	hookNotes   []string
	guardNotes  []string      // what the clients refused from the server
	iso         *isolation    // the isolation probes; nil when they did not run
	sampler     *storeSampler // nil when the store was not sampled
	sharedRedis bool          // store_bytes counts a Redis others share (--redis-url)
	// up, when the clients aimed at a stormsim up's topology, is the note
	// that says so and how the run was judged.
	up string

	// A merged run's: notes on up's logs; whether the reconciliation's
	// line is a note even when it holds; the shards' notes.
	upLogNotes        []string
	sayReconciliation bool
	shardNotes        []string
}

// judge judges a design's history with its evidence into its report row
// and its HTTP exchanges as vegeta Results: a run's, or the union of a
// sharded run's.
func judge(ctx context.Context, h *history.History, ev *evidence) (report.Design, []vegeta.Result, error) {
	d := ev.d
	j, err := history.JudgeContext(ctx, h)
	if err != nil {
		return report.Design{}, nil, fmt.Errorf("live: design %s: judging its history (%d calls, %d receipts) stopped: %w", d.Name, len(h.Calls), len(h.Receipts), err)
	}
	res := vegetaResults(d.Name, ev.t0, ev.endpoint, h)
	var m vegeta.Metrics
	for i := range res {
		m.Add(&res[i])
	}
	m.Close()
	row := report.Design{
		Name: d.Name, Mode: d.Mode, Sessions: d.Sessions, Events: d.Events, LB: d.LB,
		Profile: d.Client.Profile, Era: d.Era, Totals: j.Totals, Series: j.Series,
		ReplayLatencyMS:   report.Summarise(j.Replay),
		RecoveryLatencyMS: report.Summarise(j.Recovery),
		HTTP:              &m,
	}
	row.Server, row.Notes = report.ServerNotes(d.Server, "live")
	row.EventsProduced, row.Reconciliation = reconcile(h, j, ev.counts, ev.noCounts)
	row.Cancelled = cancelledOf(ev.counts, d)
	if row.Listen = ev.listen; ev.listenNote != "" {
		row.Notes = append(row.Notes, ev.listenNote)
	}
	if r := row.Reconciliation; r.NotReconcilable == "" && !r.OK {
		row.Notes = append(row.Notes, fmt.Sprintf("reconciliation: %d mismatches between the histories and the replicas' own counts (report.json, \"reconciliation\")", r.MismatchCount))
	}
	if own := d.Own; own != nil && own.URL != "" {
		// The clients talked to the URL: no design of stormsim's, no LB.
		row.Target, row.LB = own.URL, "none"
		row.Mode, row.Sessions, row.Events = "own server", "own server", "own server"
	}
	row.Notes = append(row.Notes, ev.storeNotes...)
	if ev.sharedRedis {
		row.Notes = append(row.Notes, "store_bytes counts every stormsim event stream in the Redis given by --redis-url, other designs' and earlier runs' included")
	}
	ev.storeBytes(&row, h)
	ev.ownServer(&row, h)
	row.Notes = append(row.Notes, ev.guardNotes...)
	if n := failedCauses(h); n != "" {
		row.Notes = append(row.Notes, n)
	}
	if n := unansweredNote(h); n != "" {
		row.Notes = append(row.Notes, n)
	}
	if n := resumeRateNote(h, d); n != "" {
		row.Notes = append(row.Notes, n)
	}
	ev.iso.fill(&row)
	ev.replicasNeverReady(&row)
	if n := row.UnknownNote(); n != "" {
		row.Notes = append(row.Notes, n)
	}
	ev.merged(&row)
	row.RecoveryAfterFaultS = report.RecoveryAfterFaults(&row.Series, ev.faults, ev.steadyS)
	return row, res, nil
}

// storeBytes fills the store's size per step and its peak from the
// sampler, or says why they are unknown.
func (ev *evidence) storeBytes(row *report.Design, h *history.History) {
	switch {
	case ev.sampler != nil && ev.sampler.measured:
		ev.sampler.fill(row.Series.StoreBytes)
		row.Totals.StorePeakBytes = slices.Max(append(row.Series.StoreBytes, 0))
	case ev.sampler != nil && ev.d.Own == nil: // an own server's store is in ClientSideUnknown
		row.Unknown = append(row.Unknown, "store_peak_bytes")
		row.Notes = append(row.Notes, "store_bytes and store_peak_bytes are unknown: the go-sdk replica's in-memory event store does not report its size")
	case ev.up != "" && h.HaveProduction:
		row.Unknown = append(row.Unknown, "store_peak_bytes", "store_peak_ops_per_s")
	case ev.up != "":
		row.Judged, row.Unknown = report.JudgedClientSide, slices.Clone(report.ClientSideUnknown)
	}
	if ev.up != "" {
		row.Notes = append(row.Notes, ev.up)
	}
}

// ownServer judges a server the user brings from the clients' side: what
// it cannot know, and the notes on its tool, exits and fault hooks.
func (ev *evidence) ownServer(row *report.Design, h *history.History) {
	own := ev.d.Own
	if own == nil {
		return
	}
	row.Judged, row.Unknown = report.JudgedClientSide, report.ClientSideUnknown
	notes, noProgress := ownNotes(own, ev.tool, h)
	if noProgress {
		row.Unknown = append(slices.Clone(report.ClientSideUnknown), report.NoProgressUnknown...)
	}
	if !own.HonoursEvents() {
		for _, k := range report.LengthUnknown {
			if !slices.Contains(row.Unknown, k) {
				row.Unknown = append(slices.Clone(row.Unknown), k)
			}
		}
	}
	row.Notes = append(row.Notes, notes...)
	for _, x := range ev.exits {
		row.Notes = append(row.Notes, fmt.Sprintf("at %.1f s %s", x.At.Sub(ev.t0).Seconds(), x))
	}
	row.Notes = append(row.Notes, ev.hookNotes...)
}

// replicasNeverReady counts the replicas a fault started that never
// became ready as down, from the fault to the end of the run.
func (ev *evidence) replicasNeverReady(row *report.Design) {
	if len(ev.neverReady) == 0 {
		return
	}
	row.ReplicasNeverReady = len(ev.neverReady)
	row.Series.ReplicasDown = make([]int64, len(row.Series.ActiveStreams))
	for _, nr := range ev.neverReady {
		for i := range row.Series.ReplicasDown {
			// Down at the end of step i from the fault on.
			if float64(i+1)*row.Series.StepS > nr.from.Seconds() {
				row.Series.ReplicasDown[i]++
			}
		}
		row.Notes = append(row.Notes, nr.note())
	}
}

// merged adds a merged run's notes, in order: up's logs, the
// reconciliation's line, the shards.
func (ev *evidence) merged(row *report.Design) {
	row.Notes = append(row.Notes, ev.upLogNotes...)
	if r := row.Reconciliation; ev.sayReconciliation && r != nil && (r.OK || r.NotReconcilable != "") {
		row.Notes = append(row.Notes, r.Line()) // the mismatches have a note of their own
	}
	row.Notes = append(row.Notes, ev.shardNotes...)
}
