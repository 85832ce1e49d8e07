package faults

import (
	"fmt"
	"time"
)

// CrashAndDrop is a node lost at once, as a kernel panic gives: replica
// Replica is killed at At and, at the same instant, Fraction of the clients
// with an open stream lose it (those whose connections went through that
// node), staying away for Away. With RestartAfter > 0 a fresh process
// starts in the slot that much later; otherwise the slot stays down. It is
// made of the steps crash and client-drop already have, so both engines
// carry it out as they carry those out.
type CrashAndDrop struct {
	Kind_        string        `toml:"kind" json:"kind"`
	Replica      int           `toml:"replica" json:"replica"`
	At           time.Duration `toml:"at" json:"at"`
	Fraction     float64       `toml:"fraction" json:"fraction"`
	Away         time.Duration `toml:"away" json:"away"`
	RestartAfter time.Duration `toml:"restart_after" json:"restart_after"`
}

var _ Fault = (*CrashAndDrop)(nil)

func (f *CrashAndDrop) Kind() string { return "crash-and-drop" }

func (f *CrashAndDrop) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	c.replica(f.Replica, ctx)
	if f.Fraction <= 0 || f.Fraction > 1 {
		c.add("fraction", "%v is not in (0, 1]", f.Fraction)
	}
	c.nonNeg("away", f.Away)
	c.nonNeg("restart_after", f.RestartAfter)
	return c.errs
}

// Steps cuts the clients' streams first, then kills the replica, at the
// same instant: the order a client-drop fault listed before a crash at the
// same time gives.
func (f *CrashAndDrop) Steps(Context) []Step {
	s := []Step{
		{At: f.At, Kind: StepClientDrop, Fraction: f.Fraction, Away: f.Away},
		{At: f.At, Kind: StepStop, Replica: f.Replica},
	}
	if f.RestartAfter > 0 {
		s = append(s, Step{At: f.At + f.RestartAfter, Kind: StepStart, Replica: f.Replica})
	}
	return s
}

func (f *CrashAndDrop) Span(ctx Context) Span {
	until := f.At + f.RestartAfter
	if f.RestartAfter == 0 {
		until = ctx.Duration
	}
	return Span{Label: fmt.Sprintf("replica %d crash, %.0f%% of streaming clients drop", f.Replica, f.Fraction*100), At: f.At, Until: until}
}

func init() {
	Register("crash-and-drop", func() Fault { return &CrashAndDrop{} })
}
