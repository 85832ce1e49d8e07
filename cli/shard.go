package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/live/up"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// shardPlan is which shard of how many a run is.
type shardPlan struct{ index, count int }

// shardFlags reads --shard, --shards (with JOB_COMPLETION_INDEX), --start-at
// (or STORMSIM_START_AT) and checks them against the other flags. It
// returns nil for a run that is not sharded.
func shardFlags(fs *flag.FlagSet, f *runFlags, env *Env) (*shardPlan, error) {
	if f.startAt == "" {
		f.startAt = os.Getenv(shard.EnvStartAt)
	}
	var sh *shardPlan
	switch {
	case f.shard != "" && visited(fs, "shards"):
		return nil, usagef("run: --shard and --shards say the same thing: give one")
	case f.shard != "":
		i, n, ok := strings.Cut(f.shard, "/")
		a, err1 := strconv.Atoi(i)
		b, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || b < 1 || a < 0 || a >= b {
			return nil, usagef("run: --shard %q: want i/N with 0 <= i < N, e.g. 0/3", f.shard)
		}
		sh = &shardPlan{a, b}
	case visited(fs, "shards"):
		if f.shards < 1 {
			return nil, usagef("run: --shards %d: want at least 1", f.shards)
		}
		v := os.Getenv(shard.EnvIndex)
		if v == "" {
			return nil, usagef("run: --shards %d takes the shard's index from $%s, which is not set (a Kubernetes Indexed Job sets it; else use --shard i/%d)", f.shards, shard.EnvIndex, f.shards)
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= f.shards {
			return nil, usagef("run: $%s=%q is not an index in 0..%d for --shards %d", shard.EnvIndex, v, f.shards-1, f.shards)
		}
		sh = &shardPlan{i, f.shards}
	}
	if (sh != nil || f.up != "" || f.startAt != "") && f.engine != "live" {
		return nil, usagef("run: --shard, --shards, --start-at and --up are for the live engine: use --engine live")
	}
	if f.up != "" && f.target != "" {
		return nil, usagef("run: --up and --target both name the clients' target: give one")
	}
	if sh == nil {
		return nil, nil
	}
	if visited(fs, "seeds") || visited(fs, "repeat") {
		if f.repeat != 1 {
			return nil, usagef("run: a shard runs one seed: leave out --seeds (each seed is a sharded run of its own)")
		}
	}
	if sh.count > 1 {
		if f.target == "" && f.up == "" {
			return nil, usagef("run: the %d shards must aim at one target they share: --target URL or --up STATE (stormsim up --no-schedule)", sh.count)
		}
		if f.startAt == "" {
			return nil, usagef("run: the %d shards need one start time: --start-at RFC3339 or $%s", sh.count, shard.EnvStartAt)
		}
	}
	return sh, nil
}

// startTime parses --start-at; zero when not given.
func startTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("run: --start-at %q is not an RFC 3339 time such as 2026-12-01T10:00:00Z", s)
	}
	return t, nil
}

// runShard runs one shard of a sharded live run and writes its folder,
// OUT/shard-<i>-of-<N>/, for stormsim merge. Thresholds and the
// saturation verdict are judged on the merged run, not here.
func runShard(ctx context.Context, env *Env, f *runFlags, sh *shardPlan, sc *scenario.Scenario, designs, sets []string, st *up.State) error {
	d, startAt, abs, file, err := shardInput(f, sc, designs)
	if err != nil {
		return err
	}
	inject, err := injectedLateness()
	if err != nil {
		return usageError{err}
	}
	opts := &runner.Options{File: abs, Designs: []string{d.Name}, Set: sets, RedisAddr: f.redisURL,
		ShardIndex: sh.index, ShardCount: sh.count, StartAt: startAt, InjectLateness: inject}
	target := f.target
	if st != nil {
		opts.Endpoint, target = st.Endpoint, st.Endpoint
		if sh.index == 0 {
			opts.ServerFault = func(ctx context.Context, fl faults.Fault) ([]string, error) { return up.Fault(ctx, st, fl) }
		}
	}
	var buf, logBuf bytes.Buffer
	opts.Results, opts.Log = &buf, &logBuf
	if !f.quiet && !startAt.IsZero() {
		if w := time.Until(startAt); w > 0 {
			fmt.Fprintf(env.Stderr, "stormsim: shard %d of %d: waiting %v for the start at %s\n", sh.index, sh.count, w.Round(time.Millisecond), startAt.Format(time.RFC3339Nano))
		}
	}
	progress, doneProgress := newProgress(env, f.quiet, scenario.Horizon(sc), fmt.Sprintf("%s (live, shard %d of %d): %s", sc.Name, sh.index, sh.count, d.Name))
	defer doneProgress()
	opts.Progress = progress
	out, err := runner.Run(ctx, sc, opts)
	doneProgress()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	meta, files, err := shardFiles(f, sh, sc, d, sets, target, out, startAt, file, buf.Bytes(), logBuf.Bytes())
	if err != nil {
		return err
	}
	dir, err := shard.Write(f.out, meta, files)
	if err != nil {
		return err
	}
	if !f.quiet {
		if err := out.Report.WriteTable(env.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "\nshard %d of %d: %d clients, started %.0f ms after the start time: %s\n", sh.index, sh.count, out.Clients, meta.StartOffsetMS, dir)
		fmt.Fprintf(env.Stdout, "merge the shards with: stormsim merge %s\n", f.out)
	}
	return nil
}

// shardFiles are a shard's folder's files and its shard.json: the run's
// report files, its results, histories and log, and the scenarios file it
// ran.
func shardFiles(f *runFlags, sh *shardPlan, sc *scenario.Scenario, d *scenario.Design, sets []string, target string, out *runner.Output, startAt time.Time, file, results, log []byte) (*shard.Meta, map[string][]byte, error) {
	files, err := out.Report.Files()
	if err != nil {
		return nil, nil, err
	}
	hist, err := history.EncodeHistories(out.Histories)
	if err != nil {
		return nil, nil, err
	}
	files["results.bin"], files[history.HistoryFile], files["live.log"], files[shard.ScenarioFile] = results, hist, log, file
	host, _ := os.Hostname()
	if startAt.IsZero() {
		startAt = out.Started
	}
	meta := &shard.Meta{
		Index: sh.index, Count: sh.count, Scenario: sc.Name, ScenarioHash: out.Report.ScenarioHash, Seed: sc.Seed, Set: sets,
		Design: d.Name, Target: target, Tool: out.Tool, Up: f.up,
		StartAt: startAt, Started: out.Started, StartOffsetMS: float64(out.Started.Sub(startAt)) / 1e6, Finished: time.Now(),
		Host: host, PID: os.Getpid(), Version: report.Version, Clients: out.Clients, FaultsApplied: out.FaultsApplied,
	}
	if h := out.Report.Host; h != nil && h.Saturated {
		// Not the shard's verdict to give (merge judges the run), but the
		// shards block says which shard's host fell behind.
		meta.Errors = append(meta.Errors, "host saturated: "+strings.Join(h.Reasons, "; "))
	}
	if target == "" {
		meta.Target = "its own topology"
	}
	return meta, files, nil
}

// shardInput is a shard's one design, its start time and the scenarios
// file (its absolute path and its bytes, which the shard's folder keeps),
// once the output folder is known to be writable.
func shardInput(f *runFlags, sc *scenario.Scenario, designs []string) (*scenario.Design, time.Time, string, []byte, error) {
	ds, err := sc.Select(designs)
	if err != nil {
		return nil, time.Time{}, "", nil, usageError{err}
	}
	if len(ds) != 1 {
		var names []string
		for _, d := range ds {
			names = append(names, d.Name)
		}
		return nil, time.Time{}, "", nil, usagef("run: a sharded run runs one design: name it with --designs (%s has %s)", sc.Name, strings.Join(names, ", "))
	}
	startAt, err := startTime(f.startAt)
	if err != nil {
		return nil, time.Time{}, "", nil, err
	}
	abs, err := filepath.Abs(f.file)
	if err != nil {
		return nil, time.Time{}, "", nil, err
	}
	file, err := os.ReadFile(abs)
	if err != nil {
		return nil, time.Time{}, "", nil, usagef("run: --file %s: %v", f.file, err)
	}
	if err := probeOut(f.out); err != nil {
		return nil, time.Time{}, "", nil, err
	}
	return ds[0], startAt, abs, file, nil
}
