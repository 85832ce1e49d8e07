package runner

import (
	"testing"

	"github.com/stormsim/stormsim/scenario"
)

// atZero moves every fault of the shipped scenarios to 0 and keeps the
// offsets of its steps: up applies the block from the moment shard 0 sends
// it, so a fault still carrying its time would be applied that much late.
func TestAtZero(t *testing.T) {
	f, err := scenario.Load("../../scenarios.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range f.Names() {
		sc, _ := f.Scenario(name)
		fc := sc.FaultContext()
		for _, fl := range sc.Faults {
			g, err := atZero(fl)
			if err != nil {
				t.Fatalf("%s %s: %v", name, fl.Kind(), err)
			}
			was, now := fl.Steps(fc), g.Steps(fc)
			if len(was) != len(now) || len(was) == 0 {
				t.Fatalf("%s %s: %d steps, then %d", name, fl.Kind(), len(was), len(now))
			}
			if was[0].At == 0 {
				continue // nothing to move
			}
			n++
			for i := range was {
				if now[i].At != was[i].At-was[0].At || now[i].Kind != was[i].Kind || now[i].Replica != was[i].Replica {
					t.Errorf("%s %s step %d: %+v at 0 is %+v", name, fl.Kind(), i, was[i], now[i])
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d faults moved: the shipped scenarios have more", n)
	}
}
