package up

import (
	"errors"
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

// stormsim fault's arguments: any registered kind with its scenario keys,
// or a short form; a kind or key that is not one is refused, naming it.
func TestParseFault(t *testing.T) {
	t.Parallel()
	f, err := ParseFault([]string{"crash", "replica=1", "restart_after=5s"}, FaultFlags{})
	if c, ok := f.(*faults.Crash); err != nil || !ok || c.Replica != 1 || c.RestartAfter.Seconds() != 5 {
		t.Errorf("crash replica=1 restart_after=5s: %+v, %v", f, err)
	}
	f, err = ParseFault([]string{"crash", "2"}, FaultFlags{RestartAfter: 3e9})
	if c, ok := f.(*faults.Crash); err != nil || !ok || c.Replica != 2 || c.RestartAfter.Seconds() != 3 {
		t.Errorf("crash 2 --restart-after 3s: %+v, %v", f, err)
	}
	f, err = ParseFault([]string{"rolling-restart", "interval=10s", "graceful=true"}, FaultFlags{})
	if r, ok := f.(*faults.RollingRestart); err != nil || !ok || r.Interval.Seconds() != 10 || !r.Graceful {
		t.Errorf("rolling-restart, which has no short form: %+v, %v", f, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reboot", "1"}, `"reboot" is not a fault this command takes (a kind with KEY=VALUE arguments: client-drop, crash,`},
		{[]string{"outage", "duration=10s"}, `"outage" is not a fault this command takes`}, // a trigger of the request workload: the simulator's only
		{[]string{"crash", "slot=1"}, `fault crash: slot: unknown key for kind "crash"`},
		{[]string{"scale", "replicas"}, `fault scale: "replicas" is not KEY=VALUE`},
		{[]string{"crash", "replica=one"}, "fault crash:"},
		{[]string{"partition", "x", "soon"}, `fault partition: slot "x" is not a slot number`},
	} {
		_, err := ParseFault(tc.args, FaultFlags{})
		var ie *InputError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ie) {
			t.Errorf("%v: %v, want an InputError with %q", tc.args, err, tc.want)
		}
	}
}
