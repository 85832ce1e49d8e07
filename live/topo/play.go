package topo

import (
	"context"
	"time"

	"github.com/stormsim/stormsim/faults"
)

// Play is the live engine's fault player, which a scenario run and
// `stormsim up` share: it hands each step of steps, in order, to do at
// t0 plus the step's At, until ctx ends or stop closes (nil: never).
// do carries the step out (Topology.Apply, for the steps on stormsim's
// topology) and gets the step's index in steps. An error from do ends the
// play and is returned, unless ctx ended meanwhile: a step cut short by
// the end of the run is no failure.
func Play(ctx context.Context, stop <-chan struct{}, t0 time.Time, steps []faults.Step, do func(i int, s faults.Step) error) error {
	for i, s := range steps {
		if ctx.Err() != nil {
			return nil
		}
		tm := time.NewTimer(time.Until(t0.Add(s.At)))
		select {
		case <-ctx.Done():
			tm.Stop()
			return nil
		case <-stop:
			tm.Stop()
			return nil
		case <-tm.C:
		}
		if err := do(i, s); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	return nil
}
