package runner

import (
	"encoding/json"
	"fmt"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/scenario"
)

// atZero is f with its time moved to 0: the fault block a stormsim up's
// control endpoint takes, whose steps it applies from the moment it gets
// it, at their own offsets.
func atZero(f faults.Fault) faults.Fault {
	b, err := json.Marshal(f)
	if err != nil {
		return f
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return f
	}
	m["at"] = 0
	if b, err = json.Marshal(m); err != nil {
		return f
	}
	g, err := faults.New(f.Kind())
	if err != nil || json.Unmarshal(b, g) != nil {
		return f
	}
	return g
}

// upNote says that the clients aimed at a stormsim up's topology and how
// the run was judged; "" for any other run.
func upNote(own *scenario.OwnServer, t *topo.Topology, endpoint string, production bool) string {
	if own != nil || t != nil {
		return ""
	}
	if production {
		return fmt.Sprintf("the clients aimed at the stormsim up at %s; judged with its production logs and counters (stormsim merge --up-logs); its store was not sampled: store_bytes is unknown", endpoint)
	}
	return fmt.Sprintf("the clients aimed at the stormsim up at %s and were judged from their own side: stormsim merge --up-logs judges the run with up's production logs", endpoint)
}
