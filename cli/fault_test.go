package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stormsim fault: bad input exits 2 with a message naming the problem,
// before anything is sent; a stopped up is an error (exit 1).
func TestFaultArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stopped := filepath.Join(dir, "state.json")
	os.WriteFile(stopped, []byte(`{"control": "http://127.0.0.1:1", "pid": 99, "stopped": true}`), 0o600)
	notState := filepath.Join(dir, "x.json")
	os.WriteFile(notState, []byte(`{"a": 1}`), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		// No state file named.
		{[]string{"restart", "1"}, ExitUsage, "want --up STATE"},
		// A fault this command does not take.
		{[]string{"--up", stopped, "reboot", "1"}, ExitUsage, `"reboot" is not a fault`},
		// Bad arguments of each shape.
		{[]string{"--up", stopped, "restart", "one"}, ExitUsage, `fault restart: slot "one" is not a slot number`},
		{[]string{"--up", stopped, "crash"}, ExitUsage, "fault crash: want SLOT"},
		{[]string{"--up", stopped, "drop", "1.5"}, ExitUsage, `fault drop: fraction "1.5" is not in (0, 1]`},
		{[]string{"--up", stopped, "partition", "1", "soon"}, ExitUsage, `fault partition: duration "soon" is not a positive duration`},
		{[]string{"--up", stopped, "store-outage", "0s"}, ExitUsage, `fault store-outage: duration "0s" is not a positive duration`},
		// The state file is missing, or is not one.
		{[]string{"--up", filepath.Join(dir, "none.json"), "crash", "1"}, ExitUsage, "none.json: open"},
		{[]string{"--up", notState, "crash", "1"}, ExitUsage, "is not the state file of a stormsim up"},
		// An up that has stopped.
		{[]string{"--up", stopped, "crash", "1"}, ExitError, "(pid 99) has stopped"},
	} {
		code, _, errs := runArgs(t, context.Background(), append([]string{"fault"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("fault %v: exit %d, %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}
