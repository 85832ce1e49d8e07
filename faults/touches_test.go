package faults

import (
	"testing"
	"time"
)

// What each registered kind touches, from its steps: the store kinds the
// store, client-drop the clients alone. A kind without a row here must
// touch something.
func TestTouches(t *testing.T) {
	t.Parallel()
	want := map[string]Target{
		"restart":         TargetReplica,
		"rolling-restart": TargetReplica,
		"crash":           TargetReplica,
		"scale":           TargetReplica,
		"client-drop":     TargetClients,
		"partition":       TargetNetwork,
		"latency":         TargetNetwork,
		"lb-health-delay": TargetNetwork,
		"store-outage":    TargetStore,
		"store-restart":   TargetStore,
	}
	blocks := map[string]Fault{ // a kind whose zero value has no steps in ctx
		"scale":   &Scale{Replicas: 4},
		"latency": &Latency{Duration: time.Second, Extra: time.Millisecond},
	}
	for _, k := range Kinds() {
		f, _ := New(k)
		if b, ok := blocks[k]; ok {
			f = b
		}
		w, ok := want[k]
		if !ok {
			if Touches(f, ctx) == 0 {
				t.Errorf("kind %s touches nothing in %+v", k, ctx)
			}
			continue
		}
		if got := Touches(f, ctx); got != w {
			t.Errorf("kind %s touches %b, want %b", k, got, w)
		}
		if got := TouchesStore(f, ctx); got != (w&TargetStore != 0) {
			t.Errorf("kind %s: TouchesStore %v", k, got)
		}
		if got := ClientsOnly(f, ctx); got != (w == TargetClients) {
			t.Errorf("kind %s: ClientsOnly %v", k, got)
		}
	}
}
