package topo

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/faults"
)

// Play hands the steps over in order, none before its time; an error ends
// the play and comes back, unless the context ended meanwhile; a closed
// stop ends it before the next step.
func TestPlay(t *testing.T) {
	t.Parallel()
	steps := []faults.Step{{At: 0}, {At: 20 * time.Millisecond}, {At: 40 * time.Millisecond}}
	t0 := time.Now()
	var got []int
	err := Play(context.Background(), nil, t0, steps, func(i int, s faults.Step) error {
		if time.Since(t0) < s.At {
			t.Errorf("step %d handed over at %v, before its time %v", i, time.Since(t0), s.At)
		}
		got = append(got, i)
		return nil
	})
	if err != nil || !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("every step: %v, %v", got, err)
	}

	boom := errors.New("boom")
	got = nil
	err = Play(context.Background(), nil, time.Now(), steps, func(i int, _ faults.Step) error {
		got = append(got, i)
		return boom
	})
	if !errors.Is(err, boom) || !slices.Equal(got, []int{0}) {
		t.Errorf("a failed step: %v, %v; want the error after step 0", got, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	err = Play(ctx, nil, time.Now(), steps, func(int, faults.Step) error {
		cancel()
		return boom
	})
	if err != nil {
		t.Errorf("a step cut short by the end of the run: %v, want nil", err)
	}

	stop := make(chan struct{})
	got = nil
	err = Play(context.Background(), stop, time.Now(), steps, func(i int, _ faults.Step) error {
		got = append(got, i)
		close(stop)
		return nil
	})
	if err != nil || !slices.Equal(got, []int{0}) {
		t.Errorf("stop closed after step 0: %v, %v", got, err)
	}
}
