package cli

import (
	"context"
	"strings"
	"testing"
)

// run --target refuses, before anything starts, a fault that needs the
// server's processes, naming it and the way out; --engine sim refuses the
// flag itself.
func TestRunTargetRefusesProcessFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		// byo-example restarts replica 1: a URL gives no process to kill
		{[]string{"--engine", "live"}, `faults[1] (kind "restart") needs control of the server's processes`},
		// the simulator has no server to aim at
		{nil, "--target aims the live clients at a server"},
	} {
		args := append([]string{"run", "byo-example", "--file", "../examples/byo-example.toml", "--target", "http://127.0.0.1:1/mcp", "--out", t.TempDir()}, tc.args...)
		code, _, stderr := runArgs(t, context.Background(), args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
