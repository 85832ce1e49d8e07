package shard

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var startAt = time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)

// meta is shard i of n of one run, finished after secs seconds.
func meta(i, n int, secs int) *Meta {
	return &Meta{
		Index: i, Count: n, Scenario: "live-smoke", ScenarioHash: "0123456789abcdef", Seed: 42,
		Design: "redis-shared", Target: "http://127.0.0.1:8080/mcp", StartAt: startAt,
		Started: startAt.Add(3 * time.Millisecond), StartOffsetMS: 3,
		Finished: startAt.Add(time.Duration(secs) * time.Second),
		Host:     "pod-" + Name(i, n), PID: 1, Version: "0.1.0", Clients: 10,
	}
}

func write(t *testing.T, out string, m *Meta) string {
	t.Helper()
	dir, err := Write(out, m, map[string][]byte{"report.json": []byte("{}\n"), "results.bin": {1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// names lists a folder's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A shard's folder holds its files, shard.json and the done marker, and
// nothing half-written; a second and third run of the same index claim
// .run2 and .run3 and leave the first run's files as they were.
func TestWriteClaimsAFolderPerRun(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "results") // Write creates it
	m := meta(1, 3, 60)
	dir, err := Write(out, m, map[string][]byte{"report.json": []byte("first\n"), "results.bin": {1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "shard-1-of-3"); dir != want {
		t.Errorf("folder %s, want %s", dir, want)
	}
	if diff := cmp.Diff([]string{"done", "report.json", "results.bin", "shard.json"}, names(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	done, _ := os.ReadFile(filepath.Join(dir, DoneFile))
	if string(done) != "2026-12-01T05:01:00Z\n" {
		t.Errorf("done marker holds %q, want the finish time", done)
	}
	var back Meta
	data, _ := os.ReadFile(filepath.Join(dir, MetaFile))
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*m, back); diff != "" {
		t.Errorf("shard.json (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(data), "\n  \"scenario_hash\": \"0123456789abcdef\",\n") {
		t.Errorf("shard.json is not indented JSON:\n%s", data)
	}

	for k, want := range []string{"shard-1-of-3.run2", "shard-1-of-3.run3"} {
		m2 := meta(1, 3, 70+k)
		dir2, err := Write(out, m2, map[string][]byte{"report.json": []byte("again\n")})
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(dir2) != want {
			t.Errorf("run %d went to %s, want %s", k+2, dir2, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "report.json")); string(got) != "first\n" {
		t.Errorf("a rerun overwrote the first run's report.json: %q", got)
	}
	if diff := cmp.Diff([]string{"shard-1-of-3", "shard-1-of-3.run2", "shard-1-of-3.run3"}, names(t, out)); diff != "" {
		t.Errorf("folders (-want +got):\n%s", diff)
	}
}

// Write refuses what it cannot write, and a write that fails half-way
// removes the folder it claimed: no folder, so no done marker.
func TestWriteFails(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		meta  *Meta
		files map[string][]byte
		want  string
	}{
		// The index is outside the count.
		{"index", meta(3, 3, 1), nil, "index 3 is outside 0..2"},
		// A count of 0.
		{"count", &Meta{Count: 0, Finished: startAt}, nil, "count 0: want at least 1"},
		// No finish time: the done marker would hold nothing.
		{"finished", &Meta{Index: 0, Count: 1}, nil, "finish time is not set"},
		// A file name that is a path.
		{"path", meta(0, 1, 1), map[string][]byte{"../x": nil}, `file name "../x": want a plain name`},
		// The meta and the marker are Write's own.
		{"own", meta(0, 1, 1), map[string][]byte{DoneFile: nil}, `file name "done": Write writes done itself`},
		// A name the file system refuses (its temporary file's name is
		// too long), after a first file was written.
		{"half", meta(0, 1, 1), map[string][]byte{"a": {1}, strings.Repeat("b", 250): {2}}, "file name too long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			dir, err := Write(out, c.meta, c.files)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
			if dir != "" {
				t.Errorf("a failed write returned folder %s", dir)
			}
			if left := names(t, out); len(left) != 0 {
				t.Errorf("a failed write left %v", left)
			}
		})
	}
}

// Discover finds shard folders given directly or through the folder that
// holds them, once each, in index and run order, and leaves other entries
// alone.
func TestDiscover(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	d2 := write(t, out, meta(2, 3, 60))
	d0 := write(t, out, meta(0, 3, 60))
	d1 := write(t, out, meta(1, 3, 60))
	d1b := write(t, out, meta(1, 3, 61))
	// A rerun stopped while writing: no shard.json, no marker.
	partial := filepath.Join(out, "shard-1-of-3.run3")
	os.Mkdir(partial, 0o755)
	// Not shards: a results folder, a file named like a shard, a symlink.
	os.Mkdir(filepath.Join(out, "live-smoke"), 0o755)
	os.WriteFile(filepath.Join(out, "shard-9-of-9"), nil, 0o644)
	os.Symlink("live-smoke", filepath.Join(out, "latest"))

	found, err := Discover([]string{out, d0, d1 + "/"})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Dir   string
		Index int
		Done  bool
		Meta  bool
	}
	var got []row
	for _, f := range found {
		r := row{Dir: f.Dir, Done: f.Done, Meta: f.Meta != nil}
		if f.Meta != nil {
			r.Index = f.Meta.Index
		}
		got = append(got, r)
	}
	want := []row{{d0, 0, true, true}, {d1, 1, true, true}, {d1b, 1, true, true}, {partial, 0, false, false}, {d2, 2, true, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
}

// Discover names the path or the file it cannot use.
func TestDiscoverErrors(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	bad := filepath.Join(out, "bad", "shard-0-of-2")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, MetaFile), []byte("{\"index\": 0,"), 0o644)
	unknown := filepath.Join(out, "unknown", "shard-0-of-2")
	os.MkdirAll(unknown, 0o755)
	os.WriteFile(filepath.Join(unknown, MetaFile), []byte(`{"index": 0, "count": 2, "colour": "blue"}`), 0o644)
	outside := filepath.Join(out, "outside", "shard-0-of-2")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, MetaFile), []byte(`{"index": 2, "count": 2}`), 0o644)
	empty := filepath.Join(out, "empty")
	os.Mkdir(empty, 0o755)
	file := filepath.Join(out, "file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		path, want string
	}{
		{filepath.Join(out, "bad"), bad + "/shard.json: not a shard's shard.json: unexpected EOF"},
		{unknown, unknown + `/shard.json: not a shard's shard.json: json: unknown field "colour"`},
		{outside, outside + "/shard.json: index 2 is outside 0..1"},
		{empty, empty + " is not a shard folder (it has no shard.json) and holds none"},
		{file, file + " is not a folder"},
		{filepath.Join(out, "nowhere"), filepath.Join(out, "nowhere") + ": no such file or directory"},
	}
	for _, c := range cases {
		_, err := Discover([]string{c.path})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.path, err, c.want)
		}
	}
}

// Acceptance 3 of issue 26, at the package: each way a set of shards is not
// one complete run is a SetError naming the problem, the folders and the
// values; a complete set is picked in index order.
func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		metas      []*Meta
		undone     []int // indices of metas whose done marker is removed
		allowRerun bool
		want       []string // the problems; nil: a complete set
		picked     []string
		notes      []string
	}{
		// Three shards, each once, all done.
		{name: "complete", metas: []*Meta{meta(0, 3, 60), meta(1, 3, 60), meta(2, 3, 60)},
			picked: []string{"shard-0-of-3", "shard-1-of-3", "shard-2-of-3"}},
		// Shard 2 never wrote its folder.
		{name: "missing", metas: []*Meta{meta(0, 3, 60), meta(1, 3, 60)},
			want: []string{"shard 2 of 3 is missing"}},
		// Several missing are named as ranges.
		{name: "missing many", metas: []*Meta{meta(2, 7, 60)},
			want: []string{"shards 0, 1, 3..6 of 7 are missing"}},
		// A rescheduled pod ran index 1 again.
		{name: "duplicated", metas: []*Meta{meta(0, 3, 60), meta(1, 3, 60), meta(1, 3, 65), meta(2, 3, 60)},
			want: []string{"index 1 appears twice: {out}/shard-1-of-3 and {out}/shard-1-of-3.run2 (a rescheduled pod; --allow-rerun merges the one that finished last)"}},
		// Shard 1 ran an edited scenario.
		{name: "hash", metas: []*Meta{meta(0, 3, 60), with(meta(1, 3, 60), func(m *Meta) { m.ScenarioHash = "fedcba9876543210" }), meta(2, 3, 60)},
			want: []string{"scenario hash differs: {out}/shard-1-of-3 has fedcba9876543210, {out}/shard-0-of-3 has 0123456789abcdef"}},
		// Shard 2 was given another start time, by a nanosecond.
		{name: "start", metas: []*Meta{meta(0, 3, 60), meta(1, 3, 60), with(meta(2, 3, 60), func(m *Meta) { m.StartAt = startAt.Add(time.Nanosecond) })},
			want: []string{"start time differs: {out}/shard-2-of-3 has 2026-12-01T05:00:00.000000001Z, {out}/shard-0-of-3 has 2026-12-01T05:00:00Z"}},
		// The same instant in another zone is the same start time.
		{name: "start zone", metas: []*Meta{meta(0, 2, 60), with(meta(1, 2, 60), func(m *Meta) { m.StartAt = startAt.In(time.FixedZone("X", 3600)) })},
			picked: []string{"shard-0-of-2", "shard-1-of-2"}},
		// Shard 2 is from a run split four ways: counted as missing too.
		{name: "count", metas: []*Meta{meta(0, 3, 60), meta(1, 3, 60), meta(2, 4, 60)},
			want: []string{"shard count differs: {out}/shard-2-of-4 has 4, {out}/shard-0-of-3 has 3", "shard 2 of 3 is missing"}},
		// Scenario, seed, design and target differ, all on one shard.
		{name: "identity", metas: []*Meta{meta(0, 2, 60), with(meta(1, 2, 60), func(m *Meta) {
			m.Scenario, m.Seed, m.Design, m.Target = "steady", 43, "memory-sticky", ""
		})},
			want: []string{
				`scenario differs: {out}/shard-1-of-2 has "steady", {out}/shard-0-of-2 has "live-smoke"`,
				"seed differs: {out}/shard-1-of-2 has 43, {out}/shard-0-of-2 has 42",
				`design differs: {out}/shard-1-of-2 has "memory-sticky", {out}/shard-0-of-2 has "redis-shared"`,
				`target differs: {out}/shard-1-of-2 has "", {out}/shard-0-of-2 has "http://127.0.0.1:8080/mcp"`,
			}},
		// Shard 2 did not finish writing.
		{name: "not done", metas: []*Meta{meta(0, 3, 60), meta(1, 3, 60), meta(2, 3, 60)}, undone: []int{2},
			want: []string{"{out}/shard-2-of-3 has no done marker: it did not finish"}},
		// Every problem at once, each on its line.
		{name: "all", metas: []*Meta{meta(0, 4, 60), meta(1, 4, 60), meta(1, 4, 61), with(meta(2, 4, 60), func(m *Meta) { m.ScenarioHash = "ff" })}, undone: []int{3},
			want: []string{
				"scenario hash differs: {out}/shard-2-of-4 has ff, {out}/shard-0-of-4 has 0123456789abcdef",
				"index 1 appears twice: {out}/shard-1-of-4 and {out}/shard-1-of-4.run2 (a rescheduled pod; --allow-rerun merges the one that finished last)",
				"{out}/shard-2-of-4 has no done marker: it did not finish",
				"shard 3 of 4 is missing",
			}},
		// --allow-rerun: the run that finished last, though it claimed
		// its folder first.
		{name: "rerun", allowRerun: true, metas: []*Meta{meta(0, 3, 60), meta(1, 3, 90), meta(1, 3, 70), meta(1, 3, 80), meta(2, 3, 60)},
			picked: []string{"shard-0-of-3", "shard-1-of-3", "shard-2-of-3"},
			notes: []string{"index 1 ran 3 times: merged {out}/shard-1-of-3, which finished last (2026-12-01T05:01:30Z); " +
				"left out {out}/shard-1-of-3.run2 (finished 2026-12-01T05:01:10Z) and {out}/shard-1-of-3.run3 (finished 2026-12-01T05:01:20Z)"}},
		// --allow-rerun: a run without a done marker is never picked,
		// however late it finished.
		{name: "rerun undone", allowRerun: true, metas: []*Meta{meta(0, 2, 60), meta(0, 2, 90), meta(1, 2, 60)}, undone: []int{1},
			picked: []string{"shard-0-of-2", "shard-1-of-2"},
			notes:  []string{"index 0 ran twice: merged {out}/shard-0-of-2, which finished last (2026-12-01T05:01:00Z); left out {out}/shard-0-of-2.run2 (no done marker)"}},
		// --allow-rerun: no run of the index finished.
		{name: "rerun none done", allowRerun: true, metas: []*Meta{meta(0, 2, 60), meta(0, 2, 90), meta(1, 2, 60)}, undone: []int{0, 1},
			want: []string{"index 0 ran twice and none finished: {out}/shard-0-of-2 and {out}/shard-0-of-2.run2 have no done marker"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			for k, m := range c.metas {
				dir := write(t, out, m)
				if slices.Contains(c.undone, k) {
					if err := os.Remove(filepath.Join(dir, DoneFile)); err != nil {
						t.Fatal(err)
					}
				}
			}
			found, err := Discover([]string{out})
			if err != nil {
				t.Fatal(err)
			}
			picked, notes, err := Check(found, c.allowRerun)
			fill := func(xs []string) []string {
				var o []string
				for _, x := range xs {
					o = append(o, strings.ReplaceAll(x, "{out}", out))
				}
				return o
			}
			var se *SetError
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("want a complete set, got %v", err)
			case c.want != nil && !errors.As(err, &se):
				t.Fatalf("want a *SetError, got %v", err)
			case c.want != nil:
				if diff := cmp.Diff(fill(c.want), se.Problems); diff != "" {
					t.Errorf("problems (-want +got):\n%s", diff)
				}
				if want := "shard: the shards are not one complete run:\n  " + strings.Join(fill(c.want), "\n  "); err.Error() != want {
					t.Errorf("Error() is\n%s\nwant\n%s", err, want)
				}
				if picked != nil {
					t.Errorf("a set with problems picked %d shards", len(picked))
				}
			}
			var got []string
			for _, p := range picked {
				got = append(got, filepath.Base(p.Dir))
			}
			if diff := cmp.Diff(c.picked, got); diff != "" {
				t.Errorf("picked (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(fill(c.notes), notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

// A folder named like a shard's but holding no shard.json is a shard that
// did not finish, and so is a set of nothing.
func TestCheckWithoutMeta(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	write(t, out, meta(0, 2, 60))
	os.Mkdir(filepath.Join(out, "shard-1-of-2"), 0o755)
	found, err := Discover([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Check(found, false)
	if want := out + "/shard-1-of-2 has no shard.json and no done marker: it did not finish"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	_, _, err = Check(nil, false)
	if err == nil || !strings.Contains(err.Error(), "no shard folder was found") {
		t.Errorf("an empty set: %v", err)
	}
}

func with(m *Meta, f func(*Meta)) *Meta { f(m); return m }

// Wait returns when the last of n shards writes its done marker, not
// before, and counts a rerun of an index once.
func TestWaitSeesMarkersAppear(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "results") // created by the first shard
	synctest.Test(t, func(t *testing.T) {
		go func() {
			for _, w := range []struct {
				after time.Duration
				index int
			}{{3 * time.Second, 0}, {time.Second, 1}, {time.Second, 1}, {2 * time.Second, 2}} {
				time.Sleep(w.after)
				if _, err := Write(out, meta(w.index, 3, 60), nil); err != nil {
					t.Error(err)
				}
			}
		}()
		start := time.Now()
		if err := Wait(t.Context(), []string{out}, 3, time.Minute, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// The shards finish at 3, 4 and 7 s (the rerun of index 1 at 5 s
		// adds nothing), and Wait looks every 300 ms: 7.2 s.
		if took := time.Since(start); took != 7200*time.Millisecond {
			t.Errorf("Wait returned after %s, want 7.2s", took)
		}
	})
}

// Wait gives up after its timeout, naming what is done and what is not;
// with n < 1 it waits for the count the shards themselves say.
func TestWaitTimesOut(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	write(t, out, meta(0, 5, 60))
	write(t, out, meta(2, 5, 60))
	// Index 3 ran but did not finish.
	if err := os.Remove(filepath.Join(write(t, out, meta(3, 5, 60)), DoneFile)); err != nil {
		t.Fatal(err)
	}
	// A shard of another run, split 2 ways, does not count.
	write(t, out, meta(1, 2, 60))
	for _, n := range []int{5, 0} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			err := Wait(t.Context(), []string{out}, n, 10*time.Minute, time.Second)
			want := "shard: waited 10m0s for 5 shards under " + out + ": 2 done, indices 1, 3, 4 not done"
			if err == nil || err.Error() != want {
				t.Errorf("n %d: error %v, want %q", n, err, want)
			}
			if took := time.Since(start); took != 10*time.Minute {
				t.Errorf("n %d: gave up after %s, want 10m", n, took)
			}
		})
	}
	// A timeout of 0 looks once.
	err := Wait(context.Background(), []string{filepath.Join(out, "nowhere")}, 0, 0, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no shard folder under "+filepath.Join(out, "nowhere")) {
		t.Errorf("timeout 0: %v", err)
	}
	// A cancelled context stops the wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, []string{out}, 5, time.Hour, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
