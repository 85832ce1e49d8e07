// Package report defines the one Report type every engine writes and every
// consumer (plots, thresholds, compare, plan, agreement) reads, with its
// writers (report.json, summary.md, series.csv) and its reader.
//
// The metric names and their meaning follow docs/domain.md §6. Every count is made
// where it happens, by the engine, never derived from the other counts, so
// that Conservation is a real check:
//
//	events_expected = events_delivered + events_lost + events_pending
package report

import (
	"slices"
	"strings"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Schema is the version of report.json this package writes and reads.
const Schema = 1

// Version is stormsim's version, written into every report.
const Version = "0.1.0"

// Report is one run of one scenario: every design side by side.
type Report struct {
	Schema          int     `json:"schema"`
	StormsimVersion string  `json:"stormsim_version"`
	Scenario        string  `json:"scenario"`
	Description     string  `json:"description"`
	ScenarioHash    string  `json:"scenario_hash"`
	Engine          string  `json:"engine"`
	Seed            uint64  `json:"seed"`
	DurationS       float64 `json:"duration_s"`
	Faults          []Fault `json:"faults"`
	// Notes are warnings about the run as a whole: settings that loaded
	// but probably do not mean what they say, or a run too large for the
	// machine. A design's own notes are in its row.
	Notes   []string `json:"notes,omitempty"`
	Designs []Design `json:"designs"`
	// OverSeeds, in a run of several seeds, holds every design's metrics
	// at each seed and their mean, range and 95% interval; the rest of the
	// report is the first seed's run.
	OverSeeds *OverSeeds `json:"over_seeds,omitempty"`
	// Host, in a live report, is how well the machine kept to the run's
	// schedule, and whether it was too busy for the run to mean anything.
	Host *Host `json:"host,omitempty"`
}

// VerdictSaturated is Host.Verdict when the live engine fell behind its own
// schedule by more than the bounds allow: the run gives no verdict.
const VerdictSaturated = "host_saturated"

// Host is how late the live engine ran against its own schedule: client
// timers and scheduled drops, producers against their event schedule, the
// Go scheduler, and the load generator's CPU.
type Host struct {
	Verdict   string   `json:"verdict"` // "ok" or VerdictSaturated
	Saturated bool     `json:"host_saturated"`
	Reasons   []string `json:"reasons,omitempty"`
	Advice    string   `json:"advice,omitempty"`
	// TimerLatenessMS: client timers (think, backoff, call timeouts),
	// random drops and fault steps, fired late by this much.
	TimerLatenessMS Lateness `json:"timer_lateness_ms"`
	// ProducerLatenessMS: each event produced this late against its call's
	// schedule (start + index / event_rate), outside store faults.
	ProducerLatenessMS Lateness `json:"producer_lateness_ms"`
	// SchedLatencyMS: how long goroutines waited to run in the load
	// generator (runtime/metrics /sched/latencies:seconds).
	SchedLatencyMS Lateness `json:"sched_latency_ms"`
	// LoadgenCPUCores is the load generator's CPU time over the run's
	// wall time, in cores (of Cores).
	LoadgenCPUCores float64 `json:"loadgen_cpu_cores"`
	Cores           int     `json:"cores"`
	LoadAverage     float64 `json:"load_average_1m,omitempty"` // at the end of the run
	BoundsMS        struct {
		TimerP99    float64 `json:"timer_p99"`
		ProducerP99 float64 `json:"producer_p99"`
		SchedP99    float64 `json:"sched_p99"`
	} `json:"bounds_ms"`
	// InjectedLatenessMS is lateness added to every timer sample on
	// purpose (STORMSIM_INJECT_LATENESS, for tests); 0 in a real run.
	InjectedLatenessMS float64 `json:"injected_lateness_ms,omitempty"`
}

// Lateness summarises how late something ran, in milliseconds.
type Lateness struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// SaturationBanner is what the table, summary.md and report.html say
// first when the host was saturated; "" when it was not.
func (r *Report) SaturationBanner() string {
	h := r.Host
	if h == nil || !h.Saturated {
		return ""
	}
	return "HOST SATURATED: this live run fell behind its own schedule (" + strings.Join(h.Reasons, "; ") + "), so its figures say more about the machine than about the design, and it gives no verdict. " + h.Advice
}

// Fault is one entry of the fault schedule, as charts mark it, or
// something that happened to a live run unasked (Unscheduled: a replica
// that exited, the store becoming unreachable).
type Fault struct {
	Kind        string  `json:"kind"`
	Label       string  `json:"label"`
	AtS         float64 `json:"at_s"`
	UntilS      float64 `json:"until_s"`
	Unscheduled bool    `json:"unscheduled,omitempty"`
}

// Design is one row: a design's totals, latencies and series.
type Design struct {
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Sessions string `json:"sessions"`
	Events   string `json:"events"`
	LB       string `json:"lb"`
	Profile  string `json:"profile"`
	Era      string `json:"era"`
	// Server is the replica flavour when it is not stormsim's reference
	// replica ("go-sdk"); Notes say what that changes.
	Server string   `json:"server,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// Judged is JudgedClientSide when the run was judged from the clients'
	// histories alone (a server the user brings keeps no production log
	// stormsim can read); Unknown then names the totals that could not be
	// known, which are left at 0 and shown as n/a.
	Judged  string   `json:"judged,omitempty"`
	Unknown []string `json:"unknown,omitempty"`

	Totals              Totals          `json:"totals"`
	ReplayLatencyMS     Latency         `json:"replay_latency_ms"`
	RecoveryLatencyMS   Latency         `json:"recovery_latency_ms"`
	RecoveryAfterFaultS []FaultRecovery `json:"recovery_after_fault_s"`
	Series              Series          `json:"series"`
	// HTTP is vegeta's summary of every HTTP exchange: live runs only.
	HTTP *vegeta.Metrics `json:"http,omitempty"`
}

// JudgedClientSide marks a design judged from the client side alone.
const JudgedClientSide = "client-side"

// ClientSideUnknown are the totals a client-side judgement cannot know:
// they need the server's production log.
// (events_replayed too: which events on a resume stream had been produced
// before it was answered needs the production times).
var ClientSideUnknown = []string{"events_unproduced", "events_redone", "events_wasted", "events_replayed", "lost_by_cause.unproduced", "store_peak_bytes", "store_peak_ops_per_s"}

// NoProgressUnknown are the totals a server that sends no progress
// notifications leaves unknown as well: the clients see each call's result
// and nothing of its events.
var NoProgressUnknown = []string{"events_delivered", "events_lost", "events_pending", "events_duplicated",
	"events_out_of_order", "lost_by_cause.purged", "lost_by_cause.abandoned", "lost_by_cause.other", "lost_fraction"}

// IsUnknown reports whether d's judgement could not know metric name (a
// totals key, a lost_by_cause key or a metric derived from them).
func (d *Design) IsUnknown(name string) bool {
	if len(d.Unknown) == 0 {
		return false
	}
	if cause, ok := strings.CutPrefix(name, "lost_"); ok && cause != "fraction" {
		name = "lost_by_cause." + cause
	}
	return slices.Contains(d.Unknown, name)
}

// Totals are the counts of docs/domain.md §6.
type Totals struct {
	Calls            int64  `json:"calls"`
	CallsCompleted   int64  `json:"calls_completed"`
	CallsFailed      int64  `json:"calls_failed"`
	CallsPending     int64  `json:"calls_pending"`
	CallsReissued    int64  `json:"calls_reissued"`
	EventsExpected   int64  `json:"events_expected"`
	EventsDelivered  int64  `json:"events_delivered"`
	EventsReplayed   int64  `json:"events_replayed"`
	EventsLost       int64  `json:"events_lost"`
	EventsPending    int64  `json:"events_pending"`
	EventsDuplicated int64  `json:"events_duplicated"`
	EventsRedone     int64  `json:"events_redone"`
	EventsUnproduced int64  `json:"events_unproduced"`
	EventsWasted     int64  `json:"events_wasted"`
	EventsOutOfOrder int64  `json:"events_out_of_order"`
	LostByCause      Causes `json:"lost_by_cause"`

	Drops           int64   `json:"drops"`
	Reconnects      int64   `json:"reconnects"`
	Resumes         int64   `json:"resumes"`
	Requests        int64   `json:"requests"`
	SessionRequests int64   `json:"session_requests"`
	HTTP404         int64   `json:"http_404"`
	HTTP400         int64   `json:"http_400"`
	HTTP409         int64   `json:"http_409"`
	HTTP503         int64   `json:"http_503"`
	Rate404         float64 `json:"rate_404"`

	StorePeakBytes   int64   `json:"store_peak_bytes"`
	StorePeakOpsPerS float64 `json:"store_peak_ops_per_s"`
}

// Causes splits lost events by why they were lost.
type Causes struct {
	Purged     int64 `json:"purged"`
	Unproduced int64 `json:"unproduced"`
	Abandoned  int64 `json:"abandoned"`
	Other      int64 `json:"other"`
}

// Sum is the total of all causes.
func (c Causes) Sum() int64 { return c.Purged + c.Unproduced + c.Abandoned + c.Other }

// Latency summarises a latency distribution in milliseconds. With Count 0
// every quantile is null (nil), never 0 and never NaN.
type Latency struct {
	Count     int64     `json:"count"`
	P50       *float64  `json:"p50"`
	P90       *float64  `json:"p90"`
	P99       *float64  `json:"p99"`
	Max       *float64  `json:"max"`
	Histogram Histogram `json:"histogram"`
}

// Histogram counts samples per bucket; Counts[i] holds the samples in
// (LeMS[i-1], LeMS[i]]. The last bound is large enough for every sample.
type Histogram struct {
	LeMS   []float64 `json:"le_ms"`
	Counts []int64   `json:"counts"`
}

// FaultRecovery is the time to recover after one fault; nil when the rates
// never came back within the run.
type FaultRecovery struct {
	Fault   int      `json:"fault"`
	Seconds *float64 `json:"seconds"`
}

// Series holds per-step values; every slice has the same length.
type Series struct {
	StepS           float64 `json:"step_s"`
	ActiveStreams   []int64 `json:"active_streams"`
	Reconnects      []int64 `json:"reconnects"`
	SessionRequests []int64 `json:"session_requests"`
	HTTP404         []int64 `json:"http_404"`
	EventsLost      []int64 `json:"events_lost"`
	StoreOps        []int64 `json:"store_ops"`
	StoreBytes      []int64 `json:"store_bytes"`
}

// Columns returns the series in a fixed order with their names, for CSV
// writers and checks.
func (s *Series) Columns() ([]string, [][]int64) {
	return []string{"active_streams", "reconnects", "session_requests", "http_404", "events_lost", "store_ops", "store_bytes"},
		[][]int64{s.ActiveStreams, s.Reconnects, s.SessionRequests, s.HTTP404, s.EventsLost, s.StoreOps, s.StoreBytes}
}

// Design returns the design by name, or nil.
func (r *Report) Design(name string) *Design {
	for i := range r.Designs {
		if r.Designs[i].Name == name {
			return &r.Designs[i]
		}
	}
	return nil
}

// ServerNotes gives a design's Server and Notes for the replica flavour
// server, in a report of engine.
func ServerNotes(server, engine string) (string, []string) {
	var notes []string
	switch server {
	case "go-sdk":
		notes = []string{"go-sdk server: local sessions only (the SDK cannot share sessions between replicas)"}
	case "ts-sdk":
		notes = []string{"ts-sdk server: local sessions only, each with its own InMemoryEventStore without a cap (the SDK's example wiring)"}
	default:
		return "", nil
	}
	if engine == "sim" {
		notes = append(notes, "the simulator models the "+server+" server as the reference replica of the same design")
	}
	return server, notes
}
