// Package faults holds the fault kinds a scenario can schedule, each
// registered under the name used in scenarios.toml.
//
// A fault turns its TOML block into a timeline of Steps ("replica 2 stops
// gracefully at 60 s", "30% of the clients with an open stream drop at
// 90 s"). Each engine has an executor for the steps: the simulator applies
// them in virtual time, the live engine sends signals and cuts connections.
// Adding a fault kind means adding one file that calls Register.
//
//	f, _ := faults.New("restart")          // then decode the TOML block into f
//	errs := f.Validate(faults.Context{Replicas: 3, Duration: 5 * time.Minute})
//	steps := f.Steps(ctx)
package faults

import (
	"fmt"
	"sort"
	"time"

	"github.com/stormsim/stormsim/internal/registry"
)

// Context is what a fault needs to know about its scenario.
type Context struct {
	Replicas int
	Duration time.Duration
}

// Fault is one entry of a scenario's fault schedule.
type Fault interface {
	// Kind is the registered name.
	Kind() string
	// Validate lists every problem; each error names its key (at, replica, ...).
	Validate(ctx Context) []error
	// Steps is the timeline this fault executes, in time order.
	Steps(ctx Context) []Step
	// Span labels the fault and gives the window it covers, for reports and charts.
	Span(ctx Context) Span
}

// Span is a fault as a report shows it. Until equals At for an instant.
type Span struct {
	Label string
	At    time.Duration
	Until time.Duration
}

// StepKind is what a step does.
type StepKind uint8

const (
	// StepStop stops the serving process of a replica slot: gracefully
	// (drain) or hard (SIGKILL).
	StepStop StepKind = iota + 1
	// StepStart starts a fresh process in a replica slot.
	StepStart
	// StepClientDrop drops Fraction of the clients that have an open stream;
	// they stay away for Away.
	StepClientDrop
	// StepScale sets the number of replica slots to Replicas; slots removed
	// stop gracefully or hard, slots added start fresh.
	StepScale
	// StepPartition makes a replica unreachable from the LB; StepHeal ends it.
	StepPartition
	StepHeal
	// StepLatency adds Extra to every network round trip until the matching
	// step with a negative Extra takes it away.
	StepLatency
	// StepStoreDown makes every store call fail after the store timeout;
	// StepStoreUp ends it.
	StepStoreDown
	StepStoreUp
	// StepStoreRestart restarts the store: it loses everything unless
	// Persistent.
	StepStoreRestart
	// StepHealthDelay sets how long the LB takes to notice a dead or
	// unreachable replica (Extra).
	StepHealthDelay
)

// Step is one action on the timeline.
type Step struct {
	At         time.Duration
	Kind       StepKind
	Replica    int
	Graceful   bool
	Fraction   float64
	Away       time.Duration
	Replicas   int
	Extra      time.Duration
	Persistent bool
	Fault      int // index of the fault in the scenario's schedule
}

var kinds = registry.New[func() Fault]("faults", "kind")

// Register adds a fault kind. It panics on a duplicate name.
func Register(kind string, f func() Fault) { kinds.Register(kind, f) }

// Kinds lists the registered kinds in order.
func Kinds() []string { return kinds.Names() }

// New returns a zero fault of the given kind, ready to be decoded into.
func New(kind string) (Fault, error) {
	f, err := kinds.Lookup(kind)
	if err != nil {
		return nil, err
	}
	return f(), nil
}

// Timeline returns the steps of every fault, ordered by time (stable for
// equal times, so the schedule's order breaks ties).
func Timeline(fs []Fault, ctx Context) []Step {
	var steps []Step
	for i, f := range fs {
		for _, s := range f.Steps(ctx) {
			s.Fault = i
			steps = append(steps, s)
		}
	}
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].At < steps[b].At })
	return steps
}

// checks collects validation problems for one fault.
type checks struct{ errs []error }

func (c *checks) add(key, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

func (c *checks) at(at time.Duration, ctx Context) {
	switch {
	case at < 0:
		c.add("at", "%v is negative", at)
	case at >= ctx.Duration:
		c.add("at", "%q is after the scenario ends (%v)", at.String(), ctx.Duration)
	}
}

func (c *checks) replica(r int, ctx Context) {
	if r < 0 || r >= ctx.Replicas {
		c.add("replica", "%d is not a replica (the scenario has %d: 0..%d)", r, ctx.Replicas, ctx.Replicas-1)
	}
}

func (c *checks) positive(key string, d time.Duration) {
	if d <= 0 {
		c.add(key, "%v must be positive", d)
	}
}

func (c *checks) nonNeg(key string, d time.Duration) {
	if d < 0 {
		c.add(key, "%v is negative", d)
	}
}

// Describe says what the live engine does for the step, for logs.
func (s Step) Describe() string {
	if d, ok := describeTrigger(s); ok {
		return d
	}
	switch s.Kind {
	case StepStop:
		if s.Graceful {
			return fmt.Sprintf("replica %d drains (SIGTERM)", s.Replica)
		}
		return fmt.Sprintf("replica %d killed (SIGKILL)", s.Replica)
	case StepStart:
		return fmt.Sprintf("replica %d started", s.Replica)
	case StepClientDrop:
		return fmt.Sprintf("%.0f%% of connections cut", 100*s.Fraction)
	case StepScale:
		return fmt.Sprintf("scaled to %d replicas", s.Replicas)
	case StepPartition:
		return fmt.Sprintf("replica %d partitioned", s.Replica)
	case StepHeal:
		return fmt.Sprintf("replica %d reachable again", s.Replica)
	case StepLatency:
		return fmt.Sprintf("latency %+v", s.Extra)
	case StepStoreDown:
		return "redis-server stopped (SIGSTOP)"
	case StepStoreUp:
		return "redis-server continued (SIGCONT)"
	case StepStoreRestart:
		return "redis-server restarted"
	}
	return "lb health-check delay changed"
}
