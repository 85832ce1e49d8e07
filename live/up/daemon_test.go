package up

import (
	"math"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/faults"
)

// The control endpoint reads a fault as a scenario's fault block of its
// kind, and validates it as the loader does.
func TestDecodeFault(t *testing.T) {
	t.Parallel()
	fc := faults.Context{Replicas: 3, Duration: math.MaxInt64}
	f, err := decodeFault([]byte(`{"kind": "restart", "replica": 2, "graceful": true, "downtime": 1000000000}`), fc)
	if r, ok := f.(*faults.Restart); err != nil || !ok || r.Replica != 2 || !r.Graceful || r.Downtime.Seconds() != 1 {
		t.Errorf("restart: %+v, %v", f, err)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"kind": "restart", "replica": 3}`, "replica: 3 is not a replica (the scenario has 3: 0..2)"},
		{`{"kind": "restart", "slot": 1}`, `fault restart: json: unknown field "slot"`},
		{`{"kind": "reboot"}`, `unknown kind "reboot"`},
		{`{"kind": "client-drop", "fraction": 2}`, "fraction: 2 is not in (0, 1]"},
		{`[]`, "fault: json: cannot unmarshal array"},
	} {
		if _, err := decodeFault([]byte(tc.body), fc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}
