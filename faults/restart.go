package faults

import (
	"fmt"
	"time"
)

// Restart stops one replica at At and starts a fresh process in its slot
// Downtime later. Graceful drains first (the replica leaves the pool, its
// calls finish up to the drain limit, its streams close with a retry hint);
// otherwise the process is killed.
type Restart struct {
	Kind_    string        `toml:"kind" json:"kind"`
	Replica  int           `toml:"replica" json:"replica"`
	At       time.Duration `toml:"at" json:"at"`
	Downtime time.Duration `toml:"downtime" json:"downtime"`
	Graceful bool          `toml:"graceful" json:"graceful"`
}

var _ Fault = (*Restart)(nil)

func (f *Restart) Kind() string { return "restart" }

func (f *Restart) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.replica(f.Replica, ctx)
	c.nonNeg("downtime", f.Downtime)
	return c.errs
}

func (f *Restart) Steps(Context) []Step {
	return []Step{
		{At: f.At, Kind: StepStop, Replica: f.Replica, Graceful: f.Graceful},
		{At: f.At + f.Downtime, Kind: StepStart, Replica: f.Replica},
	}
}

func (f *Restart) Span(Context) Span {
	how := "hard"
	if f.Graceful {
		how = "graceful"
	}
	return Span{Label: fmt.Sprintf("replica %d %s restart", f.Replica, how), At: f.At, Until: f.At + f.Downtime}
}

// RollingRestart restarts replicas one after another, Interval apart,
// starting at At. Replicas lists the slots in order; empty means all.
type RollingRestart struct {
	Kind_    string        `toml:"kind" json:"kind"`
	At       time.Duration `toml:"at" json:"at"`
	Interval time.Duration `toml:"interval" json:"interval"`
	Downtime time.Duration `toml:"downtime" json:"downtime"`
	Graceful bool          `toml:"graceful" json:"graceful"`
	Replicas []int         `toml:"replicas" json:"replicas"`
}

var _ Fault = (*RollingRestart)(nil)

func (f *RollingRestart) Kind() string { return "rolling-restart" }

func (f *RollingRestart) order(ctx Context) []int {
	if len(f.Replicas) > 0 {
		return f.Replicas
	}
	r := make([]int, ctx.Replicas)
	for i := range r {
		r[i] = i
	}
	return r
}

func (f *RollingRestart) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.nonNeg("downtime", f.Downtime)
	if f.Interval <= 0 {
		c.add("interval", "%v must be positive", f.Interval)
	}
	seen := map[int]bool{}
	for i, r := range f.Replicas {
		if r < 0 || r >= ctx.Replicas {
			c.add(fmt.Sprintf("replicas[%d]", i), "%d is not a replica (the scenario has %d: 0..%d)", r, ctx.Replicas, ctx.Replicas-1)
		}
		if seen[r] {
			c.add(fmt.Sprintf("replicas[%d]", i), "replica %d is listed twice", r)
		}
		seen[r] = true
	}
	return c.errs
}

func (f *RollingRestart) Steps(ctx Context) []Step {
	var s []Step
	for i, r := range f.order(ctx) {
		at := f.At + time.Duration(i)*f.Interval
		s = append(s, Step{At: at, Kind: StepStop, Replica: r, Graceful: f.Graceful},
			Step{At: at + f.Downtime, Kind: StepStart, Replica: r})
	}
	return s
}

func (f *RollingRestart) Span(ctx Context) Span {
	how := "hard"
	if f.Graceful {
		how = "graceful"
	}
	n := len(f.order(ctx))
	return Span{
		Label: fmt.Sprintf("%s rolling restart of %d replicas", how, n),
		At:    f.At, Until: f.At + time.Duration(n-1)*f.Interval + f.Downtime,
	}
}

// Crash kills one replica at At. With RestartAfter > 0 a fresh process
// starts in its slot that much later; otherwise the slot stays down.
type Crash struct {
	Kind_        string        `toml:"kind" json:"kind"`
	Replica      int           `toml:"replica" json:"replica"`
	At           time.Duration `toml:"at" json:"at"`
	RestartAfter time.Duration `toml:"restart_after" json:"restart_after"`
}

var _ Fault = (*Crash)(nil)

func (f *Crash) Kind() string { return "crash" }

func (f *Crash) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.replica(f.Replica, ctx)
	c.nonNeg("restart_after", f.RestartAfter)
	return c.errs
}

func (f *Crash) Steps(Context) []Step {
	s := []Step{{At: f.At, Kind: StepStop, Replica: f.Replica}}
	if f.RestartAfter > 0 {
		s = append(s, Step{At: f.At + f.RestartAfter, Kind: StepStart, Replica: f.Replica})
	}
	return s
}

func (f *Crash) Span(ctx Context) Span {
	until := f.At + f.RestartAfter
	if f.RestartAfter == 0 {
		until = ctx.Duration
	}
	return Span{Label: fmt.Sprintf("replica %d crash", f.Replica), At: f.At, Until: until}
}

func init() {
	Register("restart", func() Fault { return &Restart{} })
	Register("rolling-restart", func() Fault { return &RollingRestart{} })
	Register("crash", func() Fault { return &Crash{} })
}
