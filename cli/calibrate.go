package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/calibrate"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/live/store"
)

func init() {
	register(command{name: "calibrate", summary: "measure a real Redis and write a store model that scenarios can include", run: calibrateCmd})
}

const calibrateAbout = `Measure a Redis with the commands the live Redis store sends (XADD with MAXLEN ~, alone and
pipelined with its EXPIREs; XRANGE from a cursor) and write the simulator's store model for it:

  append latency        p50/p90/p99 of one XADD at a time, at concurrency 1 and under load
  throughput            ops/s at each --concurrency: appends one at a time, pipelined appends,
                        replays of --replay-events events; and Redis's own CPU time per operation
  replay latency        p50 of XRANGE at each --replay-lengths, fitted to a + b·events
  memory                MEMORY USAGE and nodes (XINFO STREAM) of one stream of --event-bytes events,
                        each in its message (128 bytes more), grown one at a time to five nodes; with
                        stream-node-max-bytes and -entries (CONFIG GET, or Redis's defaults where
                        CONFIG is refused): the events per node, and what a node and a stream cost

and from them the [store] keys redis_latency, redis_latency_per_event, concurrency, service_base,
service_per_event, redis_node_bytes, redis_node_entries, redis_entry_overhead_bytes,
redis_node_overhead_bytes and redis_stream_overhead_bytes. The file (TOML) holds those in [store]
and where they came from, with every raw figure, in [source]. A scenario includes it with
store_model = "calibrated/redis.toml" in [defaults], [scenario.NAME] or [design.NAME] (relative
to the scenarios file); that block's own [store] keys win.

It writes only keys under a fresh random prefix, each with a TTL, and deletes them all before it
exits, also on an error or Ctrl-C. Calibrate against an otherwise idle Redis: other clients' work
counts in its CPU time. A run with the defaults takes about 15 s.`

// calibrateFlags are calibrate's flags, and the lists read from them.
type calibrateFlags struct {
	redisURL, out, conc, lengths string
	private, quiet               bool
	eventBytes, replayEvents     int
	step                         time.Duration
	concurrency, replayLengths   []int
}

func calibrateCmd(ctx context.Context, env *Env, args []string) error {
	var f calibrateFlags
	fs := newFlags(env, "calibrate", "--redis URL | --private-redis [flags]", calibrateAbout)
	fs.StringVar(&f.redisURL, "redis", "", "the Redis to measure (`URL`: redis://[user:password@]host:port[/db], or host:port)")
	fs.StringVar(&f.redisURL, "redis-url", "", "the same as --redis (`URL`)")
	fs.BoolVar(&f.private, "private-redis", false, "start a private redis-server on a free loopback port, measure it and stop it")
	fs.StringVar(&f.out, "out", "calibrated/redis.toml", "the store-model `file` to write (atomically; its folder is created)")
	fs.IntVar(&f.eventBytes, "event-bytes", calibrate.DefaultEventBytes, "payload of one event (`bytes`; the scenarios' default workload.event_bytes)")
	fs.StringVar(&f.conc, "concurrency", joinInts(calibrate.DefaultConcurrency), "requests in flight to measure at (`list`; 1 is always measured)")
	fs.DurationVar(&f.step, "step", time.Second, "how long each throughput step runs (`duration`; three per concurrency)")
	fs.IntVar(&f.replayEvents, "replay-events", 100, "events per replay in the throughput steps (`n`)")
	fs.StringVar(&f.lengths, "replay-lengths", joinInts(calibrate.DefaultReplayLengths), "replay lengths the latency fit uses (`list`)")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("calibrate: want no arguments, got %q", pos)
	}
	if err := f.check(); err != nil {
		return err
	}
	which := "--redis " + redactURL(f.redisURL)
	if f.private {
		srv, err := redisd.Start(ctx, nil)
		if err != nil {
			return fmt.Errorf("calibrate: --private-redis: %w", err)
		}
		defer srv.Close()
		f.redisURL, which = "redis://"+srv.Addr(), "--private-redis ("+srv.Addr()+")"
	}
	rdb, err := f.dial(ctx, which)
	if err != nil {
		return err
	}
	defer rdb.Close()
	return f.measure(ctx, env, rdb, which, args)
}

// check refuses flags out of their ranges and reads the lists.
func (f *calibrateFlags) check() error {
	if (f.redisURL == "") == !f.private {
		return usagef("calibrate: want --redis URL or --private-redis (exactly one)")
	}
	var err error
	if f.concurrency, err = parseInts("--concurrency", f.conc, 1, 10_000); err != nil {
		return err
	}
	if f.replayLengths, err = parseInts("--replay-lengths", f.lengths, 1, 100_000); err != nil {
		return err
	}
	switch {
	case f.eventBytes < 1 || f.eventBytes > 64<<10:
		return usagef("calibrate: --event-bytes %d: want 1..65536", f.eventBytes)
	case f.step < 10*time.Millisecond:
		return usagef("calibrate: --step %v: want at least 10ms", f.step)
	case f.replayEvents < 2 || f.replayEvents > 100_000:
		return usagef("calibrate: --replay-events %d: want 2..100000", f.replayEvents)
	case len(slices.Compact(slices.Sorted(slices.Values(f.replayLengths)))) < 2:
		return usagef("calibrate: --replay-lengths %s: want at least two different lengths", f.lengths)
	case f.out == "":
		return usagef("calibrate: --out: want a file")
	}
	return nil
}

// dial connects to the Redis to measure, dialling once first: a clear
// error for an address where nothing listens, before the client's own
// retries and logging.
func (f *calibrateFlags) dial(ctx context.Context, which string) (*redis.Client, error) {
	ropts, err := store.ParseRedisURL(f.redisURL)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // it quotes the URL, password and all
		}
		return nil, usagef("calibrate: %s: %v", which, err)
	}
	network := ropts.Network
	if network == "" {
		network = "tcp"
	}
	conn, err := (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, network, ropts.Addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("calibrate: %s: cannot reach Redis: %v", which, err)
	}
	conn.Close()
	ropts.PoolSize = slices.Max(f.concurrency)
	return redis.NewClient(ropts), nil
}

// measure measures rdb and writes the store model to --out.
func (f *calibrateFlags) measure(ctx context.Context, env *Env, rdb *redis.Client, which string, args []string) error {
	var add func(time.Duration)
	var doneProgress func()
	defer func() {
		if doneProgress != nil {
			doneProgress()
		}
	}()
	res, err := calibrate.Measure(ctx, rdb, &calibrate.Options{
		EventBytes: f.eventBytes, Concurrency: f.concurrency, Step: f.step,
		ReplayEvents: f.replayEvents, ReplayLengths: f.replayLengths,
		Progress: func(done, total int) {
			if doneProgress == nil {
				add, doneProgress = newProgress(env, f.quiet, time.Duration(total)*time.Millisecond, "calibrate")
			}
			if add != nil {
				add(time.Millisecond)
			}
		},
	})
	if doneProgress != nil {
		doneProgress()
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Canceled // interrupted; Measure deleted its keys
		}
		return fmt.Errorf("%w (%s)", err, which)
	}
	out := f.out
	data, err := res.Model(calibrateCommand(args), filepath.ToSlash(filepath.Clean(out)))
	if err != nil {
		return err
	}
	dir := filepath.Dir(out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("calibrate: --out %s: %w", out, err)
	}
	if err := writeAtomic(dir, filepath.Base(out), data); err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Errorf("calibrate: --out %s: %w", out, err)
	}
	if !f.quiet {
		printCalibration(env, res, out)
	}
	return nil
}

// printCalibration writes the short summary to stdout.
func printCalibration(env *Env, r *calibrate.Result, out string) {
	w := env.Stdout
	cpu := r.HostCPUModel
	if cpu != "" {
		cpu = " (" + cpu + ")"
	}
	fmt.Fprintf(w, "redis %s, %d-byte events, measured in %v on %d CPUs%s\n\n", r.RedisVersion, r.EventBytes, r.Elapsed.Round(100*time.Millisecond), r.HostCPUs, cpu)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "concurrency\tappends/s\tp50\tp99\tpipelined/s\treplays/s\tp50\tp99\tredis CPU: append\tpipelined\treplay\t\n")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%.0f\t%v\t%v\t%.0f\t%.0f\t%v\t%v\t%v\t%v\t%v\t\n", s.Concurrency,
			s.AppendOpsPerS, calibrate.Sig3(s.Append.P50), calibrate.Sig3(s.Append.P99), s.PipelinedOpsPerS,
			s.ReplayOpsPerS, calibrate.Sig3(s.Replay.P50), calibrate.Sig3(s.Replay.P99),
			calibrate.Sig3(s.AppendCPU), calibrate.Sig3(s.PipelinedCPU), calibrate.Sig3(s.ReplayCPU))
	}
	tw.Flush()
	fmt.Fprintf(w, "(replays of %d events; appends pipelined %d deep; redis CPU is its main thread's time per operation)\n\n", r.ReplayEvents, r.Pipeline)
	fmt.Fprintf(w, "append latency at concurrency 1: p50 %v, p90 %v, p99 %v\n", calibrate.Sig3(r.Append.P50), calibrate.Sig3(r.Append.P90), calibrate.Sig3(r.Append.P99))
	var p50s []string
	for i, n := range r.Replay.Lengths {
		p50s = append(p50s, fmt.Sprintf("%d: %v", n, calibrate.Sig3(r.Replay.P50[i])))
	}
	fmt.Fprintf(w, "replay latency at concurrency 1: %v + %v × events (p50 by length, %s)\n", calibrate.Sig3(r.Replay.A), calibrate.Sig3(r.Replay.B), strings.Join(p50s, ", "))
	mem := r.Memory
	var points []string
	for i, n := range mem.Events {
		points = append(points, fmt.Sprintf("%d: %d B", n, mem.Bytes[i]))
	}
	fmt.Fprintf(w, "memory of a stream of %d-byte messages: %d B at 1 event, %d events a node, %d B more as each begins (MEMORY USAGE by events, %s)\n",
		mem.MessageBytes, mem.OneNode, mem.PerNode, mem.NodeStep, strings.Join(points, ", "))
	fmt.Fprintf(w, "stream nodes: stream-node-max-bytes %d, stream-node-max-entries %d (%s); the model is within %d B of every figure\n",
		mem.NodeBytes, mem.NodeEntries, mem.ConfigFrom, mem.MaxError)
	fmt.Fprintf(w, "cost to Redis (%s): %v per pipelined append, %v per replay of %d events\n\n", r.CostFrom, calibrate.Sig3(r.AppendCost), calibrate.Sig3(r.ReplayCost), r.ReplayEvents)
	if store, err := r.StoreTOML(); err == nil { // the model file, written already, encoded the same table
		fmt.Fprintf(w, "%s\n", store)
	}
	fmt.Fprintf(w, "wrote %s (include it with store_model = %q, relative to the scenarios file)\n", out, filepath.ToSlash(filepath.Clean(out)))
}

// parseInts reads a comma-separated list of integers in lo..hi.
func parseInts(flag, v string, lo, hi int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, usagef("calibrate: %s %q: want a comma-separated list of integers in %d..%d", flag, v, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// redactURL hides the password of a Redis URL.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		return p.Redacted()
	}
	if i := strings.Index(u, "@"); i >= 0 && strings.Contains(u, "://") {
		return u[:strings.Index(u, "://")+3] + "xxxxx" + u[i:] // unparsable, but keep the secret out
	}
	return u
}

// calibrateCommand is the command line as the model file records it, with
// any password hidden.
func calibrateCommand(args []string) string {
	parts := []string{"stormsim", "calibrate"}
	for _, a := range args {
		if i := strings.Index(a, "://"); i >= 0 {
			k, v, found := strings.Cut(a, "=")
			if found && strings.HasPrefix(k, "-") {
				a = k + "=" + redactURL(v)
			} else {
				a = redactURL(a)
			}
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
