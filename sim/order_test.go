package sim

import (
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// TestRunOrderCostliestFirst checks that Run starts the in-memory-store
// designs first and the storeless ones last, and keeps the scenario's
// order among designs of one rank.
func TestRunOrderCostliestFirst(t *testing.T) {
	sc, err := scaledBench(1000)
	if err != nil {
		t.Fatal(err)
	}
	designs, err := sc.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	order := runOrder(designs)
	if len(order) != len(designs) {
		t.Fatalf("runOrder gave %d indices for %d designs", len(order), len(designs))
	}
	rank := map[string]int{topology.EventsMemory: 2, topology.EventsRedis: 1, topology.EventsNone: 0}
	seen := map[int]bool{}
	for k, i := range order {
		if seen[i] {
			t.Fatalf("runOrder %v repeats design %d", order, i)
		}
		seen[i] = true
		if k == 0 {
			continue
		}
		p, d := designs[order[k-1]], designs[i]
		if rank[p.Events] < rank[d.Events] {
			t.Errorf("%s (events %s) starts before %s (events %s)", p.Name, p.Events, d.Name, d.Events)
		}
		if p.Events == d.Events && p.Sessions == d.Sessions && order[k-1] > i {
			t.Errorf("%s and %s have one rank but run out of the scenario's order", p.Name, d.Name)
		}
	}
	if first := designs[order[0]]; first.Events != topology.EventsMemory {
		t.Errorf("the first design to start is %s (events %s), not an in-memory store", first.Name, first.Events)
	}
}
