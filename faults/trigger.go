package faults

import (
	"fmt"
	"time"
)

// Triggers of the open-loop request workload: each holds for a window and
// then ends. They act on the request workload's load and workers only, so
// the loader accepts them with workload.kind = "requests" alone, and that
// workload accepts no other kind (Trigger). The simulator's request
// engine and the live request server apply them alike.
//
//	[[scenario.NAME.faults]]
//	kind = "outage"        # or load-spike, slowdown, capacity-cut (reconnect: at only)
//	at = "30s"
//	duration = "10s"

// Step kinds of the triggers. Fraction carries the factor the step sets
// (1 at the end of the window).
const (
	// StepLoadFactor multiplies the request arrival rate by Fraction.
	StepLoadFactor StepKind = 64 + iota
	// StepServiceFactor multiplies every service time started from now by
	// Fraction.
	StepServiceFactor
	// StepWorkersFactor leaves Fraction of the workers serving; a worker
	// over the count finishes its request first. An outage sets 0.
	StepWorkersFactor
	// StepDropConnections drops every closed-loop client's connection at
	// once; the server loses its queue (Reconnect).
	StepDropConnections
)

// Trigger is a fault kind of the request workload.
type Trigger interface {
	Fault
	// Trigger marks the kind; it does nothing.
	Trigger()
}

// checkWindow checks what every trigger has: when it starts (at) and how
// long it holds (duration).
func checkWindow(c *checks, ctx Context, at, d time.Duration) {
	c.at(at, ctx)
	c.positive("duration", d)
}

// windowSteps sets factor f at at and takes it back at at+d.
func windowSteps(k StepKind, f float64, at, d time.Duration) []Step {
	return []Step{{At: at, Kind: k, Fraction: f}, {At: at + d, Kind: k, Fraction: 1}}
}

// LoadSpike multiplies the request arrival rate by Factor for Duration.
type LoadSpike struct {
	Kind_    string        `toml:"kind" json:"kind"`
	Factor   float64       `toml:"factor" json:"factor"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
}

// Slowdown multiplies the service time of every request a worker starts
// within the window by Factor.
type Slowdown struct {
	Kind_    string        `toml:"kind" json:"kind"`
	Factor   float64       `toml:"factor" json:"factor"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
}

// CapacityCut leaves Keep (a fraction) of the workers serving for
// Duration, as a CPU cut to Keep of its share would.
type CapacityCut struct {
	Kind_    string        `toml:"kind" json:"kind"`
	Keep     float64       `toml:"keep" json:"keep"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
}

// Outage stops every worker for Duration. Requests still arrive and wait
// in the queue (a stalled process, or a network outage whose requests TCP
// delivers when it heals); their clients time out meanwhile.
type Outage struct {
	Kind_    string        `toml:"kind" json:"kind"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
}

// Reconnect drops every client's connection at the same instant, as a
// proxy restart or a deploy does: the restarted server's request queue is
// lost, every client abandons what it waited for and reconnects at once,
// and its first request on the new connection is a handshake
// (replica.handshake_time). Only closed-loop clients
// (workload.arrivals = "closed") hold connections, so the loader accepts
// it with those alone.
type Reconnect struct {
	Kind_ string        `toml:"kind" json:"kind"`
	At    time.Duration `toml:"at" json:"at"`
}

var (
	_ Trigger = (*Reconnect)(nil)
	_ Trigger = (*LoadSpike)(nil)
	_ Trigger = (*Slowdown)(nil)
	_ Trigger = (*CapacityCut)(nil)
	_ Trigger = (*Outage)(nil)
)

func init() {
	Register("load-spike", func() Fault { return &LoadSpike{} })
	Register("slowdown", func() Fault { return &Slowdown{} })
	Register("capacity-cut", func() Fault { return &CapacityCut{} })
	Register("outage", func() Fault { return &Outage{} })
	Register("reconnect", func() Fault { return &Reconnect{} })
}

func (f *Reconnect) Kind() string { return "reconnect" }
func (f *Reconnect) Trigger()     {}
func (f *Reconnect) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	return c.errs
}
func (f *Reconnect) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepDropConnections}}
}
func (f *Reconnect) Span(Context) Span {
	return Span{Label: "every connection drops", At: f.At, Until: f.At}
}

func (f *LoadSpike) Kind() string { return "load-spike" }
func (f *LoadSpike) Trigger()     {}
func (f *LoadSpike) Validate(ctx Context) []error {
	var c checks
	checkWindow(&c, ctx, f.At, f.Duration)
	if f.Factor <= 0 || f.Factor > 1000 {
		c.add("factor", "%v is not in (0, 1000]", f.Factor)
	}
	return c.errs
}
func (f *LoadSpike) Steps(Context) []Step {
	return windowSteps(StepLoadFactor, f.Factor, f.At, f.Duration)
}
func (f *LoadSpike) Span(Context) Span {
	return Span{Label: fmt.Sprintf("load ×%g", f.Factor), At: f.At, Until: f.At + f.Duration}
}

func (f *Slowdown) Kind() string { return "slowdown" }
func (f *Slowdown) Trigger()     {}
func (f *Slowdown) Validate(ctx Context) []error {
	var c checks
	checkWindow(&c, ctx, f.At, f.Duration)
	if f.Factor <= 0 || f.Factor > 1000 {
		c.add("factor", "%v is not in (0, 1000]", f.Factor)
	}
	return c.errs
}
func (f *Slowdown) Steps(Context) []Step {
	return windowSteps(StepServiceFactor, f.Factor, f.At, f.Duration)
}
func (f *Slowdown) Span(Context) Span {
	return Span{Label: fmt.Sprintf("service ×%g", f.Factor), At: f.At, Until: f.At + f.Duration}
}

func (f *CapacityCut) Kind() string { return "capacity-cut" }
func (f *CapacityCut) Trigger()     {}
func (f *CapacityCut) Validate(ctx Context) []error {
	var c checks
	checkWindow(&c, ctx, f.At, f.Duration)
	if f.Keep < 0 || f.Keep >= 1 {
		c.add("keep", "%v is not in [0, 1) (the fraction of the workers that keep serving)", f.Keep)
	}
	return c.errs
}
func (f *CapacityCut) Steps(Context) []Step {
	return windowSteps(StepWorkersFactor, f.Keep, f.At, f.Duration)
}
func (f *CapacityCut) Span(Context) Span {
	return Span{Label: fmt.Sprintf("capacity cut to %g%%", 100*f.Keep), At: f.At, Until: f.At + f.Duration}
}

func (f *Outage) Kind() string { return "outage" }
func (f *Outage) Trigger()     {}
func (f *Outage) Validate(ctx Context) []error {
	var c checks
	checkWindow(&c, ctx, f.At, f.Duration)
	return c.errs
}
func (f *Outage) Steps(Context) []Step { return windowSteps(StepWorkersFactor, 0, f.At, f.Duration) }
func (f *Outage) Span(Context) Span    { return Span{Label: "outage", At: f.At, Until: f.At + f.Duration} }

// describeTrigger is Describe for the triggers' steps.
func describeTrigger(s Step) (string, bool) {
	switch s.Kind {
	case StepLoadFactor:
		return fmt.Sprintf("arrival rate ×%g", s.Fraction), true
	case StepServiceFactor:
		return fmt.Sprintf("service time ×%g", s.Fraction), true
	case StepWorkersFactor:
		return fmt.Sprintf("%g%% of the workers serve", 100*s.Fraction), true
	case StepDropConnections:
		return "every client's connection drops; the server's queue is lost", true
	}
	return "", false
}

// LiveKinds are the registered kinds a live topology of the session
// workload applies (a scenario run's, stormsim up's through stormsim
// fault), sorted: every kind but the request workload's triggers. Those
// the live engine applies on its request server and its arrivals
// (live/runner/requests.go), where a stormsim up has neither.
func LiveKinds() []string {
	var out []string
	for _, k := range Kinds() {
		if f, err := New(k); err == nil {
			if _, trigger := f.(Trigger); !trigger {
				out = append(out, k)
			}
		}
	}
	return out
}
