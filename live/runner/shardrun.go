package runner

import (
	"encoding/json"
	"fmt"

	"github.com/stormsim/stormsim/faults"
)

// atZero is f with its time moved to 0: the fault block a stormsim up's
// control endpoint takes, whose steps it applies from the moment it gets
// it, at their own offsets. Sent with its own time, up would wait that
// long again.
func atZero(f faults.Fault) (faults.Fault, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if _, ok := m["at"]; !ok {
		return nil, fmt.Errorf("fault %s has no time to move to 0", f.Kind())
	}
	m["at"] = 0
	if b, err = json.Marshal(m); err != nil {
		return nil, err
	}
	g, err := faults.New(f.Kind())
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, g); err != nil {
		return nil, err
	}
	return g, nil
}

// upNote says that the clients aimed at the stormsim up at endpoint and
// how the run was judged: with up's production logs, or from the clients'
// side. Whether up's counters reconciled it is the reconciliation's to say
// (report.Reconciliation.Line).
func upNote(endpoint string, production bool) string {
	if production {
		return fmt.Sprintf("the clients aimed at the stormsim up at %s; judged with its production logs (stormsim merge --up-logs); its store was not sampled: store_bytes is unknown", endpoint)
	}
	return fmt.Sprintf("the clients aimed at the stormsim up at %s and were judged from their own side: stormsim merge --up-logs judges the run with up's production logs", endpoint)
}
