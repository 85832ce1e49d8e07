package scenario

import (
	"fmt"
	"slices"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/report"
)

// Workload kinds.
const (
	// KindSessions is the default workload: clients that open sessions and
	// make calls whose answers stream events.
	KindSessions = "sessions"
	// KindRequests is the open-loop request workload: arrival_rate single
	// requests a second (at most clients of them), no session set-up,
	// served by the design's replica.workers for replica.service_time, the
	// client's per-attempt request_timeout and request_retries, and the
	// triggers of faults/trigger.go. Both engines run it: the live engine
	// on its own request server (live/replica/requests.go).
	KindRequests = "requests"
)

// WorkloadKinds and ArrivalKinds list the valid names.
var (
	WorkloadKinds = []string{KindSessions, KindRequests}
	ArrivalKinds  = []string{"even", "poisson", ArrivalsClosed}
)

// ArrivalsClosed makes the request workload closed-loop: workload.clients
// clients join at arrival_rate a second (evenly spaced); each keeps at
// most one logical request outstanding, retries it under the client's
// request keys, and after an answer (or after giving it up) thinks for
// workload.think (think_dist "fixed" or "exp") before its next one. A
// client that backs off sends nothing meanwhile. Each client holds a
// connection: its first request on one is a handshake
// (replica.handshake_time), and the reconnect trigger drops them all.
const ArrivalsClosed = "closed"

// Requests reports whether s runs the open-loop request workload.
func (s *Scenario) Requests() bool { return s.Workload.Kind == KindRequests }

// Closed reports whether s runs the request workload's closed-loop clients.
func (s *Scenario) Closed() bool { return s.Requests() && s.Workload.Arrivals == ArrivalsClosed }

// requestWorkload checks what the request workload needs and what it
// cannot carry: one replica, workers and a service time for every design,
// and faults that are triggers; and that the session workload gets no
// trigger.
func (ld *loader) requestWorkload(s *Scenario, layers []*layer, scLayer *layer) {
	w := &s.Workload
	if w.Kind != "" && !slices.Contains(WorkloadKinds, w.Kind) {
		ld.errorf(origin(layers, "workload", "kind"), "%q is not one of %v", w.Kind, WorkloadKinds)
		return
	}
	if w.Arrivals != "" && !slices.Contains(ArrivalKinds, w.Arrivals) {
		ld.errorf(origin(layers, "workload", "arrivals"), "%q is not one of %v", w.Arrivals, ArrivalKinds)
	}
	if w.Arrivals == ArrivalsClosed && !s.Requests() {
		ld.errorf(origin(layers, "workload", "arrivals"), "%q: closed-loop clients are a mode of workload.kind = %q", w.Arrivals, KindRequests)
	}
	for i, f := range s.Faults {
		_, trig := f.(faults.Trigger)
		where := fmt.Sprintf("%s.faults[%d]", scLayer.where, i)
		switch {
		case trig && !s.Requests():
			ld.errorf(where, "kind: %q acts on the request workload only (workload.kind = %q)", f.Kind(), KindRequests)
		case !trig && s.Requests():
			ld.errorf(where, "kind: %q does not apply to workload.kind = %q (valid there: load-spike, slowdown, capacity-cut, outage, reconnect)", f.Kind(), KindRequests)
		case f.Kind() == "reconnect" && !s.Closed():
			ld.errorf(where, "kind: %q drops the connections of closed-loop clients: it needs workload.arrivals = %q", f.Kind(), ArrivalsClosed)
		}
	}
	if !s.Requests() {
		return
	}
	if s.Replicas != 1 {
		ld.errorf(origin(layers, "replicas"), "%d: workload.kind = %q models one server (replicas = 1)", s.Replicas, KindRequests)
	}
	for _, d := range s.Designs {
		all := append(slices.Clone(layers), ld.designLayer(d.Name)...)
		if d.Replica.Workers < 1 {
			ld.errorf(origin(all, "replica", "workers"), "design %s: %d: workload.kind = %q needs at least one worker", d.Name, d.Replica.Workers, KindRequests)
		}
		if d.Replica.ServiceTime <= 0 {
			ld.errorf(origin(all, "replica", "service_time"), "design %s: %v: workload.kind = %q needs a positive service time", d.Name, d.Replica.ServiceTime, KindRequests)
		}
		if d.Replica.HandshakeTime > 0 && !s.Closed() {
			ld.errorf(origin(all, "replica", "handshake_time"), "design %s: %v: only closed-loop clients hold connections to handshake (workload.arrivals = %q)", d.Name, d.Replica.HandshakeTime, ArrivalsClosed)
		}
		if d.Own != nil {
			ld.errorf(origin(all, "server"), "design %s: workload.kind = %q runs on stormsim's own request server (in either engine), not against a server you bring", d.Name, KindRequests)
		}
	}
}

// RequestSeries is an empty series for a run of the request workload s,
// one step of s.Step to the horizon, as both engines fill it: Goodput,
// Attempts, and Reconnects holding the retries; the session series stay 0.
func RequestSeries(s *Scenario) report.Series {
	step := int64(s.Step)
	n := int((int64(Horizon(s)) + step - 1) / step)
	return report.Series{
		StepS:         s.Step.Seconds(),
		ActiveStreams: make([]int64, n), Reconnects: make([]int64, n), SessionRequests: make([]int64, n),
		HTTP404: make([]int64, n), EventsLost: make([]int64, n), StoreOps: make([]int64, n), StoreBytes: make([]int64, n),
		Goodput: make([]int64, n), Attempts: make([]int64, n), JudgeUntilS: s.Duration.Seconds(),
	}
}

// RequestRow is the report row of design d's run of the request workload,
// from its series and totals, with the recovery after each of fs: the
// one row both engines write.
func RequestRow(d *Design, series report.Series, t *report.RequestTotals, fs []report.Fault) report.Design {
	rd := report.Design{
		Name: d.Name, Mode: d.Mode, Sessions: d.Sessions, Events: d.Events, LB: d.LB,
		Profile: d.Client.Profile, Era: d.Era, Series: series, Requests: t,
		ReplayLatencyMS: report.Summarise(nil), RecoveryLatencyMS: report.Summarise(nil),
	}
	rd.Notes = append(rd.Notes, "workload.kind = \"requests\": single requests with no session; the session totals and latencies do not apply (0), the requests block and the goodput series hold the run")
	// The request workload's arrivals are a steady stream from the start:
	// no ramp to leave out of a baseline (workload.SteadyFromS).
	rd.RecoveryAfterFaultS = report.RecoveryAfterFaults(&rd.Series, fs, 0)
	return rd
}
