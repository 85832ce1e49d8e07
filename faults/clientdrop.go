package faults

import (
	"fmt"
	"time"
)

// ClientDrop cuts the streams of Fraction of the clients that have an open
// stream at At, as a network blip does. Those clients stay offline for Away
// before they may reconnect.
type ClientDrop struct {
	Kind_    string        `toml:"kind" json:"kind"`
	At       time.Duration `toml:"at" json:"at"`
	Fraction float64       `toml:"fraction" json:"fraction"`
	Away     time.Duration `toml:"away" json:"away"`
}

var _ Fault = (*ClientDrop)(nil)

func (f *ClientDrop) Kind() string { return "client-drop" }

func (f *ClientDrop) Validate(ctx Context) []error {
	var c checks
	c.at(f.At, ctx)
	if f.Fraction <= 0 || f.Fraction > 1 {
		c.add("fraction", "%v is not in (0, 1]", f.Fraction)
	}
	c.nonNeg("away", f.Away)
	return c.errs
}

func (f *ClientDrop) Steps(Context) []Step {
	return []Step{{At: f.At, Kind: StepClientDrop, Fraction: f.Fraction, Away: f.Away}}
}

func (f *ClientDrop) Span(Context) Span {
	return Span{Label: fmt.Sprintf("%.0f%% of streaming clients drop", f.Fraction*100), At: f.At, Until: f.At + f.Away}
}

func init() {
	Register("client-drop", func() Fault { return &ClientDrop{} })
}
