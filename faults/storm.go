package faults

import (
	"fmt"
	"time"
)

// Scale changes the number of replica slots to Replicas at At. Under hash
// routing some sessions then hash to another replica. Removed replicas stop
// gracefully (drain) or, by default, hard, as a scale-down that kills its
// pods does.
type Scale struct {
	Kind_    string        `toml:"kind" json:"kind"`
	At       time.Duration `toml:"at" json:"at"`
	Replicas int           `toml:"replicas" json:"replicas"`
	Graceful bool          `toml:"graceful" json:"graceful"`
}

var _ Fault = (*Scale)(nil)

func (f *Scale) Kind() string { return "scale" }

func (f *Scale) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	if f.Replicas < 1 || f.Replicas > 1000 {
		c.add("replicas", "%d is not in 1..1000", f.Replicas)
	}
	return c.errs
}

func (f *Scale) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepScale, Replicas: f.Replicas, Graceful: f.Graceful}}
}

func (f *Scale) Span(ctx Context) Span {
	return Span{Label: fmt.Sprintf("scale %d → %d replicas", ctx.Replicas, f.Replicas), At: f.At, Until: f.At}
}

// Partition makes a replica unreachable from the load balancer for
// Duration: its streams through the LB break and requests routed to it fail
// until the LB notices (see LBHealthDelay). The process keeps running.
type Partition struct {
	Kind_    string        `toml:"kind" json:"kind"`
	Replica  int           `toml:"replica" json:"replica"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
}

var _ Fault = (*Partition)(nil)

func (f *Partition) Kind() string { return "partition" }

func (f *Partition) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.replica(f.Replica, ctx)
	c.positive("duration", f.Duration)
	return c.errs
}

func (f *Partition) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepPartition, Replica: f.Replica}, {At: f.At + f.Duration, Kind: StepHeal, Replica: f.Replica}}
}

func (f *Partition) Span(Context) Span {
	return Span{Label: fmt.Sprintf("replica %d partitioned", f.Replica), At: f.At, Until: f.At + f.Duration}
}

// Latency adds Extra to every network round trip for Duration.
type Latency struct {
	Kind_    string        `toml:"kind" json:"kind"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
	Extra    time.Duration `toml:"extra" json:"extra"`
}

var _ Fault = (*Latency)(nil)

func (f *Latency) Kind() string { return "latency" }

func (f *Latency) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.positive("duration", f.Duration)
	c.positive("extra", f.Extra)
	return c.errs
}

func (f *Latency) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepLatency, Extra: f.Extra}, {At: f.At + f.Duration, Kind: StepLatency, Extra: -f.Extra}}
}

func (f *Latency) Span(Context) Span {
	return Span{Label: fmt.Sprintf("+%v network latency", f.Extra), At: f.At, Until: f.At + f.Duration}
}

// StoreOutage makes every store call fail after the store timeout for
// Duration. Appends that fail leave gaps a later replay reports as purged.
type StoreOutage struct {
	Kind_    string        `toml:"kind" json:"kind"`
	At       time.Duration `toml:"at" json:"at"`
	Duration time.Duration `toml:"duration" json:"duration"`
}

var _ Fault = (*StoreOutage)(nil)

func (f *StoreOutage) Kind() string { return "store-outage" }

func (f *StoreOutage) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.positive("duration", f.Duration)
	return c.errs
}

func (f *StoreOutage) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepStoreDown}, {At: f.At + f.Duration, Kind: StepStoreUp}}
}

func (f *StoreOutage) Span(Context) Span {
	return Span{Label: "store unreachable", At: f.At, Until: f.At + f.Duration}
}

// StoreRestart restarts the store at At: without persistence it comes back
// empty, every stream and shared session gone.
type StoreRestart struct {
	Kind_      string        `toml:"kind" json:"kind"`
	At         time.Duration `toml:"at" json:"at"`
	Persistent bool          `toml:"persistent" json:"persistent"`
}

var _ Fault = (*StoreRestart)(nil)

func (f *StoreRestart) Kind() string { return "store-restart" }

func (f *StoreRestart) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	return c.errs
}

func (f *StoreRestart) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepStoreRestart, Persistent: f.Persistent}}
}

func (f *StoreRestart) Span(Context) Span {
	what := "store restarts empty"
	if f.Persistent {
		what = "store restarts (persistent)"
	}
	return Span{Label: what, At: f.At, Until: f.At}
}

// LBHealthDelay sets, from At on, how long the load balancer takes to notice
// that a replica died or became unreachable; until then it keeps routing
// requests there, and they fail.
type LBHealthDelay struct {
	Kind_ string        `toml:"kind" json:"kind"`
	At    time.Duration `toml:"at" json:"at"`
	Delay time.Duration `toml:"delay" json:"delay"`
}

var _ Fault = (*LBHealthDelay)(nil)

func (f *LBHealthDelay) Kind() string { return "lb-health-delay" }

func (f *LBHealthDelay) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.nonNeg("delay", f.Delay)
	return c.errs
}

func (f *LBHealthDelay) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepHealthDelay, Extra: f.Delay}}
}

func (f *LBHealthDelay) Span(Context) Span {
	return Span{Label: fmt.Sprintf("LB notices failures after %v", f.Delay), At: f.At, Until: f.At}
}

func init() {
	Register("scale", func() Fault { return &Scale{} })
	Register("partition", func() Fault { return &Partition{} })
	Register("latency", func() Fault { return &Latency{} })
	Register("store-outage", func() Fault { return &StoreOutage{} })
	Register("store-restart", func() Fault { return &StoreRestart{} })
	Register("lb-health-delay", func() Fault { return &LBHealthDelay{} })
}
