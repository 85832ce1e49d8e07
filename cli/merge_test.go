package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// mergeStart is the start time the shards of the test runs share.
var mergeStart = time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)

// mergeSets are the --set overrides the test shards ran with.
var mergeSets = []string{"workload.clients=30"}

// shardMeta is shard i of n of one run of live-smoke, as run --shard
// records it: the scenario hash is that of the shipped file with
// mergeSets.
func shardMeta(t *testing.T, i, n int) *shard.Meta {
	t.Helper()
	f, err := scenario.Load(shipped, &scenario.Options{Set: mergeSets, Target: "live-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario("live-smoke")
	if err != nil {
		t.Fatal(err)
	}
	return &shard.Meta{
		Index: i, Count: n, Scenario: sc.Name, ScenarioHash: scenario.Hash(sc), Seed: sc.Seed, Set: mergeSets,
		Design: "redis-shared", Target: "http://127.0.0.1:9/mcp", StartAt: mergeStart,
		Started: mergeStart.Add(2 * time.Millisecond), StartOffsetMS: 2, Finished: mergeStart.Add(45 * time.Second),
		Host: shard.Name(i, n), PID: 100 + i, Version: report.Version, Clients: 10,
	}
}

// writeShard leaves a shard's folder under out as run --shard does, with
// the real scenarios file, and returns it. Its histories are empty and its
// report is the scenario's header: enough for merge's checks, which come
// before any judging.
func writeShard(t *testing.T, out string, m *shard.Meta) string {
	t.Helper()
	toml, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Load(shipped, &scenario.Options{Set: m.Set, Target: m.Scenario})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario(m.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scenario.Header(sc, "live").JSON()
	if err != nil {
		t.Fatal(err)
	}
	hist, err := history.EncodeHistories(map[string]*history.History{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := shard.Write(out, m, map[string][]byte{
		shard.ScenarioFile: toml, history.HistoryFile: hist, "report.json": rep,
		"results.bin": nil, "live.log": []byte("shard log\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeShards writes shards 0..n-1 of one run under out.
func writeShards(t *testing.T, out string, n int) {
	t.Helper()
	for i := range n {
		writeShard(t, out, shardMeta(t, i, n))
	}
}

// Acceptance 3 of issue 26: a missing shard, a duplicated index, a
// different scenario hash and a start-time mismatch each make merge exit 2
// naming the problem; so does every other way the set is not one run, and
// none writes a results folder.
func TestMergeRejectsBadSets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, shards string) // writes the shards
		args  []string                          // after merge, before DIR
		want  []string                          // in stderr; {shards} is the folder
	}{
		// Acceptance 3: a missing shard.
		{"missing shard", func(t *testing.T, s string) {
			writeShard(t, s, shardMeta(t, 0, 3))
			writeShard(t, s, shardMeta(t, 1, 3))
		}, nil, []string{"shard 2 of 3 is missing"}},
		// Acceptance 3: a duplicated index (a rescheduled pod).
		{"duplicated index", func(t *testing.T, s string) {
			writeShards(t, s, 3)
			writeShard(t, s, shardMeta(t, 1, 3))
		}, nil, []string{"index 1 appears twice: {shards}/shard-1-of-3 and {shards}/shard-1-of-3.run2 (a rescheduled pod; --allow-rerun merges the one that finished last)"}},
		// Acceptance 3: a different scenario hash.
		{"scenario hash", func(t *testing.T, s string) {
			writeShard(t, s, shardMeta(t, 0, 3))
			m := shardMeta(t, 1, 3)
			m.ScenarioHash = "00000000deadbeef"
			writeShard(t, s, m)
			writeShard(t, s, shardMeta(t, 2, 3))
		}, nil, []string{"scenario hash differs: {shards}/shard-1-of-3 has 00000000deadbeef, {shards}/shard-0-of-3 has "}},
		// Acceptance 3: a start-time mismatch.
		{"start time", func(t *testing.T, s string) {
			writeShard(t, s, shardMeta(t, 0, 3))
			writeShard(t, s, shardMeta(t, 1, 3))
			m := shardMeta(t, 2, 3)
			m.StartAt = mergeStart.Add(time.Minute)
			writeShard(t, s, m)
		}, nil, []string{"start time differs: {shards}/shard-2-of-3 has 2026-12-01T05:01:00Z, {shards}/shard-0-of-3 has 2026-12-01T05:00:00Z"}},
		// Two problems at once: both named.
		{"two problems", func(t *testing.T, s string) {
			writeShard(t, s, shardMeta(t, 0, 4))
			m := shardMeta(t, 1, 4)
			m.Seed = 7
			writeShard(t, s, m)
			writeShard(t, s, shardMeta(t, 3, 4))
		}, nil, []string{"seed differs: {shards}/shard-1-of-4 has 7, {shards}/shard-0-of-4 has 42", "shard 2 of 4 is missing"}},
		// A shard that did not finish writing.
		{"not done", func(t *testing.T, s string) {
			writeShards(t, s, 2)
			os.Remove(filepath.Join(s, "shard-1-of-2", shard.DoneFile))
		}, nil, []string{"{shards}/shard-1-of-2 has no done marker: it did not finish"}},
		// --expect says another count than the shards.
		{"expect", func(t *testing.T, s string) { writeShards(t, s, 2) },
			[]string{"--expect", "3"}, []string{"--expect 3, but {shards}/shard-0-of-2 is a shard of a run split 2 ways"}},
		// The scenarios file copy was edited after the shards ran.
		{"edited copy", func(t *testing.T, s string) {
			writeShards(t, s, 2)
			p := filepath.Join(s, "shard-0-of-2", shard.ScenarioFile)
			data, _ := os.ReadFile(p)
			edited := strings.Replace(string(data), "[scenario.live-smoke]\n", "[scenario.live-smoke]\nseed = 43\n", 1)
			if edited == string(data) {
				t.Fatal("the live-smoke table was not found to edit")
			}
			os.WriteFile(p, []byte(edited), 0o644)
		}, nil, []string{"{shards}/shard-0-of-2/scenarios.toml: scenario live-smoke with --set workload.clients=30 hashes to ", "the copy was edited after they ran"}},
		// A history file that is not one.
		{"bad history", func(t *testing.T, s string) {
			writeShards(t, s, 2)
			os.WriteFile(filepath.Join(s, "shard-1-of-2", history.HistoryFile), []byte("not gzip"), 0o644)
		}, nil, []string{"{shards}/shard-1-of-2/history.json.gz: history: reading histories"}},
		// A shard.json that is not one.
		{"bad meta", func(t *testing.T, s string) {
			writeShards(t, s, 2)
			os.WriteFile(filepath.Join(s, "shard-1-of-2", shard.MetaFile), []byte("[]"), 0o644)
		}, nil, []string{"{shards}/shard-1-of-2/shard.json: not a shard's shard.json"}},
		// A folder with no shard in it.
		{"no shard", func(t *testing.T, s string) {}, nil, []string{"{shards} is not a shard folder (it has no shard.json) and holds none"}},
		// --up-logs that is not there.
		{"up logs", func(t *testing.T, s string) { writeShards(t, s, 2) },
			[]string{"--up-logs", "/nonexistent/logs"}, []string{"merge: --up-logs: stat /nonexistent/logs: no such file or directory"}},
		// Flags out of range.
		{"expect 0", func(t *testing.T, s string) {}, []string{"--expect", "0"}, []string{"--expect 0: want at least 1"}},
		{"negative wait", func(t *testing.T, s string) {}, []string{"--wait", "-1s"}, []string{"--wait -1s: want 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			shards := filepath.Join(t.TempDir(), "shards")
			os.Mkdir(shards, 0o755)
			c.setup(t, shards)
			out := t.TempDir()
			args := append([]string{"merge", "--out", out}, c.args...)
			code, stdout, stderr := runArgs(t, context.Background(), append(args, shards)...)
			if code != ExitUsage {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range c.want {
				if w = strings.ReplaceAll(w, "{shards}", shards); !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout: %q", stdout)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a rejected merge wrote %d entries into --out", len(entries))
			}
		})
	}
	code, _, stderr := runArgs(t, context.Background(), "merge")
	if code != ExitUsage || !strings.Contains(stderr, "merge: want at least one DIR") {
		t.Errorf("merge with no DIR: exit %d, %q", code, stderr)
	}
}

// A complete set passes every check and reaches the merge itself; with
// --allow-rerun, so does a set with an index run twice, and merge says
// which run it left out. (What the merge writes is TestMergeWritesOneRun's.)
func TestMergeAcceptsACompleteSet(t *testing.T) {
	t.Parallel()
	for _, rerun := range []bool{false, true} {
		shards := t.TempDir()
		writeShards(t, shards, 3)
		args := []string{"merge", "--out", t.TempDir(), "--expect", "3", shards}
		if rerun {
			m := shardMeta(t, 2, 3)
			m.Finished = m.Finished.Add(-time.Second) // finished first, though it ran second
			writeShard(t, shards, m)
			args = append(args, "--allow-rerun")
		}
		// The shard folders given one by one and through their parent:
		// each is found once.
		args = append(args, filepath.Join(shards, "shard-0-of-3"))
		_, _, stderr := runArgs(t, context.Background(), args...)
		if strings.Contains(stderr, "not one complete run") || strings.Contains(stderr, "merge: shard: ") {
			t.Errorf("rerun %v: a complete set was refused:\n%s", rerun, stderr)
		}
		note := "stormsim: note: index 2 ran twice: merged " + shards + "/shard-2-of-3, which finished last (2026-12-01T05:00:45Z); left out " +
			shards + "/shard-2-of-3.run2 (finished 2026-12-01T05:00:44Z)"
		if got := strings.Contains(stderr, note); got != rerun {
			t.Errorf("rerun %v: the note on the rerun printed: %v, want %v; stderr:\n%s", rerun, got, rerun, stderr)
		}
	}
}

// merge --wait waits for the shards' done markers: it merges once the
// last one is written, and gives up naming the missing indices.
func TestMergeWaits(t *testing.T) {
	t.Parallel()
	shards := t.TempDir()
	writeShard(t, shards, shardMeta(t, 0, 3))
	writeShard(t, shards, shardMeta(t, 2, 3))
	code, _, stderr := runArgs(t, context.Background(), "merge", "--out", t.TempDir(), "--wait", "10ms", shards)
	if want := "2 done, index 1 not done"; code != ExitError || !strings.Contains(stderr, want) {
		t.Errorf("a shard short: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	// The last shard appears as a done folder, renamed into place, as on
	// a shared volume it appears complete.
	staging := t.TempDir()
	last := writeShard(t, staging, shardMeta(t, 1, 3))
	moved := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		moved <- os.Rename(last, filepath.Join(shards, filepath.Base(last)))
	}()
	_, _, stderr = runArgs(t, context.Background(), "merge", "--out", t.TempDir(), "--wait", "1m", "--expect", "3", shards)
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "not done") || strings.Contains(stderr, "not one complete run") {
		t.Errorf("merge --wait did not see the last shard arrive:\n%s", stderr)
	}
}

// merge --wait --up-logs waits, after the shards, for the counts.json
// stormsim up writes when it stops, and says what it waits for; the merge
// goes on only once the file is there.
func TestMergeWaitsForCounts(t *testing.T) {
	t.Parallel()
	shards, logs := t.TempDir(), t.TempDir()
	writeShards(t, shards, 3)
	written := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		os.WriteFile(filepath.Join(logs, "counts.json"), []byte("{}\n"), 0o644)
		close(written)
	}()
	_, _, stderr := runArgs(t, context.Background(), "merge", "--out", t.TempDir(), "--wait", "1m", "--up-logs", logs, shards)
	select {
	case <-written:
	default:
		t.Errorf("merge went on before counts.json was written:\n%s", stderr)
	}
	if want := "counts.json, which stormsim up writes when it stops: stop up (Ctrl-C)"; !strings.Contains(stderr, want) {
		t.Errorf("merge did not say it waits for up's counters (%q):\n%s", want, stderr)
	}
}
