package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/shard"
)

// Bad sharding flags are refused with exit 2 and an error naming the flag
// and the problem, before anything runs.
func TestShardFlagsRefused(t *testing.T) {
	t.Setenv(shard.EnvIndex, "")
	t.Setenv(shard.EnvStartAt, "")
	state := filepath.Join(t.TempDir(), "state.json")
	for _, c := range []struct {
		args []string
		env  string // JOB_COMPLETION_INDEX
		want string
		sc   string // the scenario, live-smoke when ""
	}{
		{[]string{"--shard", "3/3"}, "", `--shard "3/3": want i/N with 0 <= i < N`, ""},
		{[]string{"--shard", "a/3"}, "", `--shard "a/3"`, ""},
		{[]string{"--shards", "3"}, "", "takes the shard's index from $JOB_COMPLETION_INDEX, which is not set", ""},
		{[]string{"--shards", "3"}, "5", `$JOB_COMPLETION_INDEX="5" is not an index in 0..2`, ""},
		{[]string{"--shards", "0"}, "0", "--shards 0: want at least 1", ""},
		{[]string{"--shard", "0/3", "--shards", "3"}, "0", "--shard and --shards say the same thing", ""},
		{[]string{"--shard", "0/3"}, "", "must aim at one target they share: --target URL or --up STATE", ""},
		{[]string{"--shard", "0/3", "--target", "http://127.0.0.1:1/mcp"}, "", "need one start time: --start-at RFC3339", ""},
		{[]string{"--shard", "0/3", "--target", "http://127.0.0.1:1/mcp", "--start-at", "tomorrow"}, "", `--start-at "tomorrow" is not an RFC 3339 time`, ""},
		{[]string{"--shard", "0/3", "--target", "http://127.0.0.1:1/mcp", "--start-at", "2026-12-01T10:00:00Z", "--seeds", "3"}, "", "a shard runs one seed", ""},
		{[]string{"--shard", "0/2", "--target", "http://127.0.0.1:1/mcp", "--start-at", "2026-12-01T10:00:00Z"}, "", "a sharded run runs one design: name it with --designs", "network-blip"},
		{[]string{"--up", state, "--target", "http://127.0.0.1:1/mcp"}, "", "--up and --target both name the clients' target", ""},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Setenv(shard.EnvIndex, c.env)
			sc := c.sc
			if sc == "" {
				sc = "live-smoke"
			}
			args := append([]string{"run", sc, "--file", "../scenarios.toml", "--engine", "live", "--out", t.TempDir()}, c.args...)
			code, _, stderr := runArgs(t, context.Background(), args...)
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q", code, stderr, c.want)
			}
		})
	}
	code, _, stderr := runArgs(t, context.Background(), "run", "live-smoke", "--shard", "0/1", "--out", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, "are for the live engine") {
		t.Errorf("--shard with the simulator: exit %d, %q", code, stderr)
	}
}

// run --up waits for up's state file and refuses one that serves another
// scenario or design, or names an up that has stopped.
func TestRunUpStateFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	write := func(s string) {
		if err := os.WriteFile(state, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		time.Sleep(300 * time.Millisecond)
		write(`{"scenario": "steady", "design": "memory-sticky", "pid": 1, "endpoint": "http://127.0.0.1:1/mcp", "control": "http://127.0.0.1:1", "token": "x"}`)
	}()
	code, _, stderr := runArgs(t, ctx, "run", "live-smoke", "--file", "../scenarios.toml", "--engine", "live", "--up", state, "--out", dir)
	if code != ExitUsage || !strings.Contains(stderr, "serves scenario steady, not live-smoke") {
		t.Errorf("another scenario's up: exit %d, %q", code, stderr)
	}
	write(`{"scenario": "live-smoke", "design": "memory-sticky", "pid": 1, "endpoint": "http://127.0.0.1:1/mcp", "control": "http://127.0.0.1:1", "token": "x"}`)
	code, _, stderr = runArgs(t, ctx, "run", "live-smoke", "--file", "../scenarios.toml", "--engine", "live", "--up", state, "--designs", "redis-shared", "--out", dir)
	if code != ExitUsage || !strings.Contains(stderr, "serves design memory-sticky: --designs must name it alone") {
		t.Errorf("another design: exit %d, %q", code, stderr)
	}
	write(`{"scenario": "live-smoke", "design": "memory-sticky", "pid": 1, "endpoint": "http://127.0.0.1:1/mcp", "control": "http://127.0.0.1:1", "token": "x", "stopped": true}`)
	code, _, stderr = runArgs(t, ctx, "run", "live-smoke", "--file", "../scenarios.toml", "--engine", "live", "--up", state, "--out", dir)
	if code == ExitOK || !strings.Contains(stderr, "has stopped") {
		t.Errorf("a stopped up: exit %d, %q", code, stderr)
	}
}
