// Package report defines the one Report type every engine writes and every
// consumer (plots, thresholds, compare, plan, agreement) reads, with its
// writers (report.json, summary.md, series.csv) and its reader.
//
// The metric names and their meaning follow docs/domain.md §6. Conservation,
//
//	events_expected = events_delivered + events_lost + events_pending
//
// holds by construction in both engines (each undelivered index of a call is
// lost or pending), a sanity assertion; the independent checks are the
// simulator's per-event oracle and the live engine's Reconciliation.
package report

import (
	"fmt"
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
	// Shards, in a report stormsim merge joined, is the shards it joined.
	Shards *Shards `json:"shards,omitempty"`
	// Interrupted, in a live report, says that a signal stopped the run
	// before its end: its figures are of the histories recorded until
	// then, and it gives no verdict.
	Interrupted *Interruption `json:"interrupted,omitempty"`
}

// Interruption is how far a live run got before SIGINT or SIGTERM stopped
// it: the load stopped then, every call open then is pending, and the
// designs that had not started are not in the report.
type Interruption struct {
	Design string   `json:"design"`            // the design whose run the signal stopped
	AtS    float64  `json:"at_s"`              // how far into that design's run, s
	NotRun []string `json:"not_run,omitempty"` // designs that never started, or whose judging the signal stopped
}

// InterruptedBanner is the line a report's summary starts with when a
// signal stopped its run; "" when none did.
func (r *Report) InterruptedBanner() string {
	in := r.Interrupted
	if in == nil {
		return ""
	}
	s := fmt.Sprintf("INTERRUPTED: a signal stopped this live run %.1f s into design %s (of %g s): the figures are of the histories recorded until then, every call open then is pending, and the run gives no verdict.", in.AtS, in.Design, r.DurationS)
	if len(in.NotRun) > 0 {
		s += " Designs not run: " + strings.Join(in.NotRun, ", ") + "."
	}
	return s
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
	// LoadgenRequestsPerS is the HTTP requests the load generator's
	// clients sent (every request of the histories, redirect hops
	// included) over the run's wall time: what it asked of the server and
	// of itself.
	LoadgenRequestsPerS float64 `json:"loadgen_requests_per_s"`
	Cores               int     `json:"cores"`
	LoadAverage         float64 `json:"load_average_1m,omitempty"` // at the end of the run
	BoundsMS            struct {
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
	Server string `json:"server,omitempty"`
	// Target is the URL of a server the user brings that the clients
	// talked to directly (--target, server.url): the row is that server,
	// not the design it was named after, and there was no LB of stormsim's.
	Target string   `json:"target,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// ReplicasNeverReady counts the replicas a fault restarted that never
	// became ready again (live runs of a server the user brings): each is
	// in a note, a band on the charts and Series.ReplicasDown.
	ReplicasNeverReady int `json:"replicas_never_ready,omitempty"`
	// Judged is JudgedClientSide when the run was judged from the clients'
	// histories alone (a server the user brings keeps no production log
	// stormsim can read); Unknown then names the totals that could not be
	// known: null in report.json (MarshalJSON), n/a in the table and to
	// thresholds, named in a note (UnknownNote).
	Judged  string   `json:"judged,omitempty"`
	Unknown []string `json:"unknown,omitempty"`

	Totals Totals `json:"totals"`
	// Requests is the request workload's totals: runs of workload.kind =
	// "requests" only.
	Requests *RequestTotals `json:"requests,omitempty"`
	// Cancelled is what closing response streams cancelled on the
	// servers, in an era where that cancels the call (2026-07-28); nil
	// in the eras before, where an abandoned call runs on.
	Cancelled *Cancelled `json:"cancelled,omitempty"`
	// Listen is the notification workload's listen streams: nil when the
	// workload is off, and for a design whose era has no listen stream.
	Listen              *Listen         `json:"listen,omitempty"`
	ReplayLatencyMS     Latency         `json:"replay_latency_ms"`
	RecoveryLatencyMS   Latency         `json:"recovery_latency_ms"`
	RecoveryAfterFaultS []FaultRecovery `json:"recovery_after_fault_s"`
	Series              Series          `json:"series"`
	// HTTP is vegeta's summary of every HTTP exchange: live runs only.
	HTTP *vegeta.Metrics `json:"http,omitempty"`
	// Isolation is what the isolation probes sent and were sent: live
	// runs with probes only. Their requests are in no other field.
	Isolation *Isolation `json:"isolation,omitempty"`
	// EventsProduced, in a live run on stormsim's reference replica, is
	// how many events (1..E of every call attempt) the replicas' own
	// counters say they produced: the server side's count, not the
	// production log's.
	EventsProduced *int64 `json:"events_produced,omitempty"`
	// Reconciliation, in a live run, is the clients' histories held to
	// sources the checker does not judge from (live/check.Reconcile).
	Reconciliation *Reconciliation `json:"reconciliation,omitempty"`
}

// Isolation is a design's isolation probes: extra sessions that present
// other sessions' event ids, and forged ones, as Last-Event-ID. Any event
// of a stream the probing session does not own is a leak.
type Isolation struct {
	Probes      int              `json:"probes"`       // probes run, each in a session of its own
	Requests    int64            `json:"requests"`     // every request the probes sent
	StatusCodes map[string]int64 `json:"status_codes"` // their answers by status; "0" for none
	Presented   int64            `json:"presented"`    // resumes with another live session's event id
	// Sessions are the sessions the probes opened; Streams the other
	// sessions' streams whose earliest event id they presented.
	Sessions int64 `json:"sessions"`
	Streams  int64 `json:"streams"`
	// Routes counts how each probe reached the store of the streams it
	// presented: owner-replica (stormsim runs the topology, and the
	// probe's session was opened on the replica that served the stream),
	// shared-replica (through the endpoint, a session landed on a sighted
	// stream's replica), no-shared-replica (none did), replica-unknown (no
	// answer says which replica served it: several sessions presented the
	// ids), no-sighting (no other session's event id had been seen).
	Routes map[string]int `json:"routes,omitempty"`
	Events int64          `json:"events"` // events with data the probes received
	Leaked int64          `json:"leaked"` // of which from another session's stream: events_leaked
	// Leaks are the first leaked events, with the sessions involved.
	Leaks []Leak `json:"leaks,omitempty"`
}

// Leak is one event of another session that a probe was sent.
type Leak struct {
	Probe        string `json:"probe"`         // which probe: foreign-id, no-session, counter-moved, …
	LastEventID  string `json:"last_event_id"` // the Last-Event-ID it presented (cut at 120 bytes)
	EventID      string `json:"event_id"`      // the id of the event it was sent
	ProbeSession string `json:"probe_session"` // the session it presented ("" with none)
	OwnerSession string `json:"owner_session"` // the session whose call the event belongs to, "" when unknown
	Call         string `json:"call"`          // the owner's call: its progress token
}

// String is one line a person reads: which event went to whom.
func (l Leak) String() string {
	owner := l.OwnerSession
	if owner == "" {
		owner = "unknown"
	}
	probe := l.ProbeSession
	if probe == "" {
		probe = "none"
	}
	return "event " + l.EventID + " of session " + owner + " (call " + l.Call + ") sent to probe session " + probe +
		" (" + l.Probe + ", Last-Event-ID " + l.LastEventID + ")"
}

// Reconciliation is a live run's histories held to independent server-side
// counts: the replicas' in-memory counters and, for Redis, XINFO STREAM.
type Reconciliation struct {
	OK bool `json:"ok"`
	// NotReconcilable says why there was nothing to reconcile with (a
	// server whose counters stormsim cannot read); OK is false then.
	NotReconcilable string `json:"not_reconcilable,omitempty"`
	// Sources are the independent sources used.
	Sources []string `json:"sources,omitempty"`
	// Checked counts what was held to them.
	CallsChecked    int64      `json:"calls_checked"`
	EventsReceived  int64      `json:"events_received"`  // receipts held to the counters
	StreamsInRedis  int64      `json:"streams_in_redis"` // streams held to XINFO STREAM
	PurgedChecked   int64      `json:"purged_checked"`   // events lost as purged held to the counters
	PurgeAnswers    int64      `json:"purge_answers"`    // resumes answered 400 purged held to the stores
	UnproducedCalls int64      `json:"unproduced_calls"` // calls with unproduced events held to the killed attempts
	Unreconciled    int64      `json:"unreconciled"`     // calls no counter covers (Missing)
	Missing         []string   `json:"missing,omitempty"`
	MismatchCount   int64      `json:"mismatch_count"`
	Mismatches      []Mismatch `json:"mismatches,omitempty"` // the first 50
}

// Line is the reconciliation in one line, as merge prints it and its
// notes say it: "reconciliation: ok", its mismatches, or "not possible"
// and why.
func (r *Reconciliation) Line() string {
	switch {
	case r.NotReconcilable != "":
		return "reconciliation: not possible: " + r.NotReconcilable
	case r.OK:
		return "reconciliation: ok"
	}
	return fmt.Sprintf("reconciliation: %d mismatches between the histories and the replicas' own counts (report.json, \"reconciliation\")", r.MismatchCount)
}

// Mismatch is one disagreement between the histories and a server-side
// source, with the call it is about.
type Mismatch struct {
	Call   string `json:"call"`  // client.seq.attempt token, as in the production log
	Check  string `json:"check"` // phantom, production, result, unproduced, purged, redis
	Detail string `json:"detail"`
}

// JudgedClientSide marks a design judged from the client side alone.
const JudgedClientSide = "client-side"

// ClientSideUnknown are the totals a client-side judgement cannot know:
// they need the server's production log.
// (events_replayed too: which events on a resume stream had been produced
// before it was answered needs the production times).
// events_redone is known: the clients see a progress value come again on
// a later stream.
var ClientSideUnknown = []string{"events_unproduced", "events_wasted", "events_replayed", "lost_by_cause.unproduced", "store_peak_bytes", "store_peak_ops_per_s"}

// LengthUnknown are the totals a server whose tool is not told the call's
// length ({events} is not in server.tool.arguments) leaves unknown as well:
// a call's expected length is then known only once its result arrives.
var LengthUnknown = []string{"events_expected", "events_lost", "events_pending",
	"lost_by_cause.purged", "lost_by_cause.abandoned", "lost_by_cause.other", "lost_fraction"}

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
	if cause, ok := strings.CutPrefix(name, "lost_"); ok && cause != "fraction" && !strings.HasPrefix(cause, "by_cause.") {
		name = "lost_by_cause." + cause
	}
	return slices.Contains(d.Unknown, name)
}

// Cancelled counts the calls a server cancelled because their response
// stream closed before the result, and the work that saved.
type Cancelled struct {
	// Calls are the call attempts cancelled: a re-issued call whose
	// earlier attempt was cancelled counts once per attempt.
	Calls int64 `json:"calls"`
	// EventsSaved are the events those attempts never produced: without
	// cancellation they would have been produced for nobody.
	EventsSaved int64 `json:"events_saved"`
}

// Listen is the notification workload's listen streams
// (workload.notification_rate, at 2026-07-28: subscriptions/listen): how
// often they dropped and were re-opened, and the notifications the server
// sent to listening clients, those the clients received, and those lost
// because they were sent while a client's stream was down (the stream has
// no replay). The calls re-issued are Totals.CallsReissued, the calls
// cancelled and the events that saved the Cancelled block.
type Listen struct {
	// Opens are the listen requests sent; Reopens those sent after a drop
	// or a refusal; Reopened the streams a re-open request opened.
	Opens    int64 `json:"opens"`
	Reopens  int64 `json:"reopens"`
	Reopened int64 `json:"reopened"`
	// Drops are the open streams that ended without the client closing
	// them: a restart, a drain, a cut, a partition, a client drop.
	Drops int64 `json:"drops"`
	// ReopenPeakPerS is the re-listen peak: re-open requests per second in
	// the series step that had the most.
	ReopenPeakPerS float64 `json:"reopen_peak_per_s"`
	// Sent counts every notification due to a listening client, from its
	// first listen to the end of its listening, whether or not a stream
	// was open to carry it; Received those that reached it; Lost is
	// Sent − Received.
	Sent     int64 `json:"notifications_sent"`
	Received int64 `json:"notifications_received"`
	Lost     int64 `json:"notifications_lost"`
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

	// EventsLeaked counts the events of other sessions' streams that the
	// isolation probes were sent (live runs with probes only; see
	// Design.Isolation).
	EventsLeaked int64 `json:"events_leaked"`
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
	// Goodput is the goodput side of the recovery, for a series that has
	// goodput (the request workload): see GoodputRecovery.
	Goodput *GoodputRecovery `json:"goodput,omitempty"`
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
	// ReplicasDown, in a live run where a restarted replica never became
	// ready again, counts the slots down for good at each step: from
	// their fault to the end of the run. Absent when none was.
	ReplicasDown []int64 `json:"replicas_down,omitempty"`
	// Goodput and Attempts, in a run of the request workload: useful
	// completions (an answer its client was still waiting for) and
	// attempts sent (first attempts and retries) at each step. JudgeUntilS
	// is when arrivals stop (duration): goodput is judged before it, so
	// that the drain does not read as stuck.
	Goodput     []int64 `json:"goodput,omitempty"`
	Attempts    []int64 `json:"attempts,omitempty"`
	JudgeUntilS float64 `json:"judge_until_s,omitempty"`
}

// Columns returns the series in a fixed order with their names, for CSV
// writers and checks.
func (s *Series) Columns() ([]string, [][]int64) {
	names := []string{"active_streams", "reconnects", "session_requests", "http_404", "events_lost", "store_ops", "store_bytes"}
	cols := [][]int64{s.ActiveStreams, s.Reconnects, s.SessionRequests, s.HTTP404, s.EventsLost, s.StoreOps, s.StoreBytes}
	if s.ReplicasDown != nil {
		names, cols = append(names, "replicas_down"), append(cols, s.ReplicasDown)
	}
	if s.Goodput != nil {
		names, cols = append(names, "goodput", "attempts"), append(cols, s.Goodput, s.Attempts)
	}
	return names, cols
}

// Label is how tables name the row: the design, or for a server at a URL
// the URL and "own server".
func (d *Design) Label() string {
	if d.Target != "" {
		return d.Target + " (own server)"
	}
	return d.Name
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
