package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/topology"
)

// startRedis starts a private redis-server and a client with a pool of
// pool connections; both stop when the test ends.
func startRedis(t *testing.T, pool int) (*redisd.Server, *redis.Client) {
	t.Helper()
	srv, err := redisd.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: pool})
	t.Cleanup(func() { rdb.Close() })
	return srv, rdb
}

// dbsize is how many keys the server holds.
func dbsize(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	n, err := rdb.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// What calibration must get right on a real redis-server, however loaded
// the machine: every rate positive and in operations per second, every
// latency in order and consistent with its rate, the memory a node holds,
// the derived keys following from the figures as derive says, no key left
// behind, and a model file holding exactly the calibrated StoreConfig keys.
// How fast this host's Redis is, is not a test: BenchmarkCalibrateRedis
// (make bench-live) reports it beside docs/domain.md §5's figures.
func TestMeasureRealRedis(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t, 16)
	// A key of someone else's must survive the cleanup.
	if err := rdb.Set(context.Background(), "not-ours", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	steps := 0
	res, err := Measure(context.Background(), rdb, &Options{
		EventBytes: 1024, Concurrency: []int{16}, Step: 300 * time.Millisecond,
		ReplaySamples: 40, Rand: rand.New(rand.NewPCG(1, 2)),
		Progress: func(done, total int) { steps = done },
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := dbsize(t, rdb); n != 1 {
		t.Errorf("%d keys left after Measure, want only the one it did not write", n)
	}
	if steps != 2+3*2 {
		t.Errorf("progress reached %d steps, want 8 (fit, memory, three per concurrency 1 and 16)", steps)
	}
	t.Logf("append p50 %v p90 %v p99 %v; fit %v + %v·n; memory %+v; costs %v, %v; store %+v",
		res.Append.P50, res.Append.P90, res.Append.P99, res.Replay.A, res.Replay.B,
		res.Memory, res.AppendCost, res.ReplayCost, res.Store)

	between := func(what string, v, lo, hi float64) {
		t.Helper()
		if v < lo || v > hi {
			t.Errorf("%s = %v, want in [%v, %v]", what, v, lo, hi)
		}
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	if len(res.Steps) != 2 || res.Steps[0].Concurrency != 1 || res.Steps[1].Concurrency != 16 {
		t.Fatalf("steps %+v, want concurrency 1 (always) and 16", res.Steps)
	}
	if !(0 < res.Append.P50 && res.Append.P50 <= res.Append.P90 && res.Append.P90 <= res.Append.P99) || res.Append.Samples < 1 {
		t.Errorf("append latency %+v: quantiles not positive and in order, or no samples", res.Append)
	}
	// Units. Every step ran for Step and timed each of its operations: the
	// operations ÷ the rate is the step's wall time (at least the 300 ms
	// asked, and far less than a minute), so the rate is per second; and
	// with c in flight at least half the operations took the p50 or more,
	// so p50 ≤ 2c ÷ rate (Little's law), which a latency in the wrong unit
	// breaks. A loopback round trip takes more than a microsecond.
	for _, s := range res.Steps {
		for _, k := range []struct {
			what string
			lat  Latency
			rate float64
		}{{"appends", s.Append, s.AppendOpsPerS}, {"replays", s.Replay, s.ReplayOpsPerS}} {
			what := fmt.Sprintf("%s at concurrency %d", k.what, s.Concurrency)
			if k.rate <= 0 || k.lat.Samples < 1 {
				t.Errorf("%s: %v/s over %d samples, want a positive rate", what, k.rate, k.lat.Samples)
				continue
			}
			between(what+": samples ÷ rate (s), the step's wall time", float64(k.lat.Samples)/k.rate, 0.29, 60)
			between(what+": p50 × rate ÷ concurrency", k.lat.P50.Seconds()*k.rate/float64(s.Concurrency), 0, 2.02)
			if !(k.lat.P50 <= k.lat.P90 && k.lat.P90 <= k.lat.P99) {
				t.Errorf("%s: latency %+v, quantiles out of order", what, k.lat)
			}
			between(what+": p50 (µs)", us(k.lat.P50), 1, math.Inf(1))
		}
		if s.PipelinedOpsPerS <= 0 {
			t.Errorf("pipelined appends at concurrency %d: %v/s, want a positive rate", s.Concurrency, s.PipelinedOpsPerS)
		}
	}
	between("bytes held per 1 KB event in a long stream (a node's bytes ÷ its events), §5: ≈1.2 KB",
		float64(res.Memory.NodeStep)/float64(res.Memory.PerNode), 0.75*1.2*1024, 1.25*1.2*1024)
	// Redis 7 reports its main thread's CPU time, and one thread cannot
	// spend more than a second of it per second: CPU per operation × rate
	// is the share of the step Redis was busy.
	if res.CostFrom != CostCPU {
		t.Errorf("costs from %q, want %q", res.CostFrom, CostCPU)
	}
	for _, s := range res.Steps {
		for _, k := range []struct {
			what string
			cpu  time.Duration
			rate float64
		}{{"appends", s.AppendCPU, s.AppendOpsPerS}, {"pipelined appends", s.PipelinedCPU, s.PipelinedOpsPerS}, {"replays", s.ReplayCPU, s.ReplayOpsPerS}} {
			if k.cpu <= 0 {
				t.Errorf("the %s step at concurrency %d: Redis CPU %v per operation, want positive", k.what, s.Concurrency, k.cpu)
			}
			between(fmt.Sprintf("the share of the %s step at concurrency %d that Redis was busy", k.what, s.Concurrency), k.cpu.Seconds()*k.rate, 0, 1.1)
		}
	}
	// Costs are CPU time per operation, which a loaded machine barely
	// moves: these bounds catch a unit slipped by a thousand.
	between("pipelined append cost (µs)", us(res.AppendCost), 0.05, 1000)
	between("replay cost (µs)", us(res.ReplayCost), 0.5, 100_000)
	if res.ReplayCost <= res.AppendCost {
		t.Errorf("a replay of 100 events costs %v, an append %v: want the replay dearer", res.ReplayCost, res.AppendCost)
	}
	checkNodes(t, res.Memory, res.Store, 1024, 4096, 100, ConfigGet)
	// That a longer replay costs more is held above on Redis's CPU time.
	// Its wall-clock p50s are what a loaded machine moves most: beside a
	// build they read 3.3, 5.3, 2.5 and 3.1 ms for 1 to 300 events, a flat
	// or falling fit. Whatever the fit, the model must not carry a negative
	// latency from it.
	if len(res.Replay.P50) != len(res.Replay.Lengths) || len(res.Replay.P50) < 2 {
		t.Errorf("replay p50 %v over lengths %v: want one per length, at least two", res.Replay.P50, res.Replay.Lengths)
	}
	if res.Store.RedisLatency < 0 || res.Store.RedisLatencyPerEvent < 0 {
		t.Errorf("the model's replay latency %v + %v per event, from the fit %v + %v·n: want neither negative",
			res.Store.RedisLatency, res.Store.RedisLatencyPerEvent, res.Replay.A, res.Replay.B)
	}

	st := res.Store
	if st.Concurrency != 1 {
		t.Errorf("concurrency = %d, want 1 (Redis runs one command at a time)", st.Concurrency)
	}
	between("(service_base + service_per_event) ÷ append cost", float64(st.ServiceBase+st.ServicePerEvent)/float64(res.AppendCost), 0.98, 1.02)
	between("(service_base + 100·service_per_event) ÷ replay cost",
		float64(st.ServiceBase+100*st.ServicePerEvent)/float64(res.ReplayCost), 0.97, 1.03)
	idle := func(n int) time.Duration {
		return st.ReplayLatency(topology.EventsRedis, n) + st.ServiceBase + time.Duration(n)*st.ServicePerEvent
	}
	fit := res.Replay.A + 300*res.Replay.B
	if st.RedisLatency > 0 && st.RedisLatencyPerEvent > 0 {
		between("idle replay of 300 in the model ÷ the fit", float64(idle(300))/float64(fit), 0.97, 1.03)
	}
	full := topology.DefaultStore
	data, err := res.Model("stormsim calibrate --test", "calibrated/redis.toml")
	if err != nil {
		t.Fatal(err)
	}
	checkModelFile(t, data, &full)
	if errs := full.Validate(); len(errs) > 0 {
		t.Errorf("the defaults under the model do not validate: %v", errs)
	}
	for _, k := range []struct {
		name      string
		got, want any
	}{
		{"redis_latency", full.RedisLatency, st.RedisLatency},
		{"redis_latency_per_event", full.RedisLatencyPerEvent, st.RedisLatencyPerEvent},
		{"service_base", full.ServiceBase, st.ServiceBase},
		{"redis_node_bytes", full.RedisNodeBytes, st.RedisNodeBytes},
		{"redis_node_entries", full.RedisNodeEntries, st.RedisNodeEntries},
		{"redis_entry_overhead_bytes", full.RedisEntryOverheadBytes, st.RedisEntryOverheadBytes},
		{"redis_node_overhead_bytes", full.RedisNodeOverheadBytes, st.RedisNodeOverheadBytes},
		{"redis_stream_overhead_bytes", full.RedisStreamOverheadBytes, st.RedisStreamOverheadBytes},
	} {
		if k.got != k.want {
			t.Errorf("%s read back as %v, want %v", k.name, k.got, k.want)
		}
	}
}

// checkNodes holds a memory step of eventBytes events, on a Redis whose
// stream-node-max-bytes and -entries are nodeBytes and nodeEntries (read as
// from says), to the node model: a new node at a fixed distance in events,
// the usage jumping by the same bytes as each begins (after the second),
// the distance within what a node can hold, and the derived store
// reproducing MEMORY USAGE at 1 event and at the most events measured
// within 3%.
func checkNodes(t *testing.T, mem Memory, st topology.StoreConfig, eventBytes, nodeBytes, nodeEntries int, from string) {
	t.Helper()
	msg := topology.MessageBytes(eventBytes)
	if mem.MessageBytes != msg || mem.NodeBytes != nodeBytes || mem.NodeEntries != nodeEntries || !strings.HasPrefix(mem.ConfigFrom, from) {
		t.Errorf("memory %+v: want %d-byte messages, nodes of %d bytes and %d entries, from %q", mem, msg, nodeBytes, nodeEntries, from)
	}
	last := len(mem.Events) - 1
	if last < 0 || len(mem.Bytes) != len(mem.Events) || len(mem.Nodes) != len(mem.Events) || mem.Events[0] != 1 || mem.Nodes[0] != 1 || mem.Nodes[last] != memoryNodes {
		t.Fatalf("memory at events %v: %v bytes in %v nodes, want 1 event in 1 node first and %d nodes last", mem.Events, mem.Bytes, mem.Nodes, memoryNodes)
	}
	// A node holds at most its bytes' worth of messages, each with at
	// least a few bytes of its own, and not more than 64.
	if lo, hi := min(max(nodeBytes/(msg+64), 1), nodeEntries), min(max(nodeBytes/msg, 1), nodeEntries); mem.PerNode < lo || mem.PerNode > hi {
		t.Errorf("%d events per node of %d-byte messages, want %d..%d", mem.PerNode, msg, lo, hi)
	}
	if node := float64(max(nodeBytes, msg)); float64(mem.NodeStep) < 0.75*node || float64(mem.NodeStep) > 1.5*node {
		t.Errorf("a node of %d-byte messages takes %d bytes, want within [0.75, 1.5] × %v", msg, mem.NodeStep, node)
	}
	k := 1
	for i := 1; i <= last; i++ {
		switch d := mem.Nodes[i] - mem.Nodes[i-1]; {
		case d < 0 || d > 1 || mem.Bytes[i] < mem.Bytes[i-1]:
			t.Errorf("at event %d: %d nodes and %d bytes after %d and %d; want one more node at most, and no less memory", mem.Events[i], mem.Nodes[i], mem.Bytes[i], mem.Nodes[i-1], mem.Bytes[i-1])
		case d == 1:
			if want := 1 + k*mem.PerNode; mem.Events[i] != want {
				t.Errorf("node %d began at event %d, want %d: every node holds %d (events %v, nodes %v)", k+1, mem.Events[i], want, mem.PerNode, mem.Events, mem.Nodes)
			}
			if jump := mem.Bytes[i] - mem.Bytes[i-1]; k >= 2 && jump != mem.NodeStep {
				t.Errorf("node %d began with %d bytes more, want %d like every one after the second (usage %v at events %v)", k+1, jump, mem.NodeStep, mem.Bytes, mem.Events)
			}
			k++
		}
	}
	cost := st.RedisStreamCost(eventBytes)
	if cost.PerNode != int64(mem.PerNode) {
		t.Errorf("the model's node holds %d events of %d bytes, measured %d (store %+v)", cost.PerNode, eventBytes, mem.PerNode, st)
	}
	for _, i := range []int{0, last} {
		n, got := mem.Events[i], mem.Bytes[i]
		model := cost.Bytes(int64(n))
		if r := float64(model) / float64(got); r < 0.97 || r > 1.03 {
			t.Errorf("a stream of %d events of %d bytes: the model says %d bytes, MEMORY USAGE %d (ratio %.3f, want within 3%%); store %+v",
				n, eventBytes, model, got, r, st)
		}
	}
}

// The memory step alone, on a real redis-server: at the default event size,
// at a 1-byte payload, and at 100 bytes, whose nodes outgrow their first
// allocation before they end (the usage moves within a node too); and with
// stream-node-max-entries set to 20, which CONFIG GET reads. Nodes of the
// configuration, and a derived model that gives MEMORY USAGE back. Its
// stream is deleted.
func TestMemoryNodes(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t, 1)
	ctx := context.Background()
	for _, c := range []struct{ eventBytes, nodeEntries int }{{DefaultEventBytes, 100}, {1, 100}, {100, 100}, {1, 20}, {DefaultEventBytes, 20}} {
		if err := rdb.ConfigSet(ctx, "stream-node-max-entries", strconv.Itoa(c.nodeEntries)).Err(); err != nil {
			t.Fatal(err)
		}
		o, err := (&Options{EventBytes: c.eventBytes, Rand: rand.New(rand.NewPCG(5, uint64(c.eventBytes)))}).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		mem, err := newMeasurer(rdb, o).memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := Result{EventBytes: c.eventBytes, ReplayEvents: 100, Memory: mem}
		r.derive()
		t.Logf("%d-byte events, %d entries a node: %+v; store %+v", c.eventBytes, c.nodeEntries, r.Memory, r.Store)
		checkNodes(t, r.Memory, r.Store, c.eventBytes, 4096, c.nodeEntries, ConfigGet)
		if n := dbsize(t, rdb); n != 0 {
			t.Errorf("%d keys left after the memory step", n)
		}
	}
}

// Where CONFIG is refused (here by an ACL, as managed Redis does), the
// memory step assumes Redis's defaults and says so.
func TestMemoryConfigRefused(t *testing.T) {
	t.Parallel()
	srv, admin := startRedis(t, 1)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "noconfig", "on", ">secret", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "noconfig", Password: "secret", PoolSize: 1})
	defer rdb.Close()
	if err := rdb.ConfigGet(ctx, "stream-node-max-*").Err(); err == nil {
		t.Fatal("CONFIG GET answered a user without CONFIG")
	}
	o, err := (&Options{Rand: rand.New(rand.NewPCG(7, 8))}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := newMeasurer(rdb, o).memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mem.ConfigFrom, "CONFIG GET refused") || !strings.Contains(mem.ConfigFrom, "NOPERM") {
		t.Errorf("config from %q, want it to say CONFIG GET was refused, and how", mem.ConfigFrom)
	}
	r := Result{EventBytes: o.EventBytes, ReplayEvents: 100, Memory: mem}
	r.derive()
	checkNodes(t, r.Memory, r.Store, o.EventBytes, 4096, 100, ConfigDefaults)
	data, err := r.Model("stormsim calibrate --test", "calibrated/redis.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `config_from = "Redis's defaults: CONFIG GET refused (NOPERM`) {
		t.Errorf("the model file does not say the node configuration is Redis's defaults:\n%s", data)
	}
}

// checkModelFile decodes a model file: [store] holds exactly StoreKeys,
// each a topology.StoreConfig key, and decodes into into; [source] holds the
// provenance.
func checkModelFile(t *testing.T, data []byte, into *topology.StoreConfig) {
	t.Helper()
	var raw struct {
		Store  toml.Primitive `toml:"store"`
		Source map[string]any `toml:"source"`
	}
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		t.Fatalf("the model file does not parse: %v\n%s", err, data)
	}
	var keys []string
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "store" {
			keys = append(keys, k[1])
		}
	}
	if !slices.Equal(keys, StoreKeys) {
		t.Errorf("[store] keys %v, want %v", keys, StoreKeys)
	}
	cfg := reflect.TypeFor[topology.StoreConfig]()
	for _, k := range keys {
		found := false
		for i := range cfg.NumField() {
			found = found || cfg.Field(i).Tag.Get("toml") == k
		}
		if !found {
			t.Errorf("[store] key %s is not a topology.StoreConfig key", k)
		}
		if typ := md.Type("store", k); strings.HasPrefix(k, "redis_latency") || strings.HasPrefix(k, "service_") {
			if typ != "String" {
				t.Errorf("store.%s is a %s, want a duration string", k, typ)
			}
		}
	}
	if err := md.PrimitiveDecode(raw.Store, into); err != nil {
		t.Fatalf("[store] does not decode into StoreConfig: %v", err)
	}
	for _, k := range []string{"date", "command", "redis_version", "host_cpus", "event_bytes", "append_latency", "replay_fit", "memory", "steps"} {
		if _, ok := raw.Source[k]; !ok {
			t.Errorf("[source] lacks %s:\n%s", k, data)
		}
	}
}

// Every figure is timed with Options.Now: with a clock that moves 10 µs per
// reading, an operation timed alone takes exactly 10 µs.
func TestMeasureUsesTheClock(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t, 1)
	var ticks atomic.Int64
	now := func() time.Time { return time.Unix(0, ticks.Add(1)*int64(10*time.Microsecond)) }
	res, err := Measure(context.Background(), rdb, &Options{
		Concurrency: []int{1}, Step: 20 * time.Millisecond, ReplaySamples: 5,
		Rand: rand.New(rand.NewPCG(3, 4)), Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 10 * time.Microsecond
	if a := res.Append; a.P50 != want || a.P99 != want {
		t.Errorf("append latency %+v, want every quantile %v", a, want)
	}
	for i, p := range res.Replay.P50 {
		if p != want {
			t.Errorf("replay p50 at %d events = %v, want %v", res.Replay.Lengths[i], p, want)
		}
	}
	// Two readings per append, 2000 readings in a 20 ms step: 1000 appends.
	if n := res.Append.Samples; n < 990 || n > 1000 {
		t.Errorf("%d appends in a step of 2000 clock readings, want about 1000", n)
	}
	if res.Started != time.Unix(0, int64(10*time.Microsecond)).UTC() {
		t.Errorf("started %v, want the clock's first reading", res.Started)
	}
}

// Cancelling mid-run stops it, says so, and still deletes every key.
func TestMeasureCancelled(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Measure(ctx, rdb, &Options{
		Concurrency: []int{4}, Step: 5 * time.Second, ReplaySamples: 5,
		Progress: func(done, _ int) {
			if done == 2 { // fit and memory done: cancel during the first throughput step
				go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := dbsize(t, rdb); n != 0 {
		t.Errorf("%d keys left after a cancelled Measure", n)
	}
}

// A Redis that is not there is a clear error, not a hang or a panic.
func TestMeasureUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 256, MaxRetries: -1})
	defer rdb.Close()
	_, err = Measure(context.Background(), rdb, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot reach Redis at "+addr) {
		t.Errorf("err = %v, want it to say Redis at %s cannot be reached", err, addr)
	}
}

// Bad options are refused before anything is sent, each problem named.
func TestBadOptions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: 4})
	defer rdb.Close()
	cases := []struct {
		opts Options
		want string
	}{
		{Options{EventBytes: -1}, "event bytes -1"},                                       // no negative payloads
		{Options{EventBytes: 1 << 20}, "event bytes 1048576: want 1..65536"},              // too big to write thousands of
		{Options{Concurrency: []int{0}}, "concurrency 0"},                                 // nobody to send
		{Options{Step: time.Millisecond}, "step 1ms"},                                     // too short to time
		{Options{ReplayEvents: 1}, "replay events 1: want 2"},                             // no slope from one length
		{Options{ReplayLengths: []int{5, 5}}, "at least two different ones"},              // no line through one point
		{Options{Pipeline: -3}, "pipeline -3"},                                            // no batches
		{Options{}, "pool holds 4 connections, fewer than the highest concurrency (256)"}, // the defaults need a pool of 256
	}
	for _, c := range cases {
		_, err := Measure(context.Background(), rdb, &c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.opts, err, c.want)
		}
	}
}

// derive charges the model exactly the measured costs, as the simulator
// consumes them, and fits the node model to the measured nodes.
func TestDerive(t *testing.T) {
	t.Parallel()
	nodes := []int{1, 2, 3, 4, 5}
	cases := []struct {
		name     string
		r        Result
		want     topology.StoreConfig
		entryFit []int
	}{
		// Ta = 5 µs, T100 = 104 µs: 1 µs per event, 4 µs base; the fit's
		// 100 µs + 3 µs·n keeps 96 µs and 2 µs·n for the network. 256-byte
		// payloads, 10 to a 4096-byte node (MEMORY USAGE of Redis 7.0): a
		// node costs 504 beyond its listpack, the stream 200 more; many
		// entry overheads fit (0 to 23), so the default stays.
		{"typical", Result{EventBytes: 256, ReplayEvents: 100, AppendCost: 5 * time.Microsecond, ReplayCost: 104 * time.Microsecond,
			Replay: Fit{A: 100 * time.Microsecond, B: 3 * time.Microsecond},
			Memory: Memory{NodeBytes: 4096, NodeEntries: 100, MessageBytes: 384, Events: []int{1, 11, 21, 31, 41},
				Bytes: []int64{4800, 9888, 14488, 19088, 23688}, Nodes: nodes, PerNode: 10, NodeStep: 4600, OneNode: 4800}},
			topology.StoreConfig{Concurrency: 1, ServiceBase: 4 * time.Microsecond, ServicePerEvent: time.Microsecond,
				RedisLatency: 96 * time.Microsecond, RedisLatencyPerEvent: 2 * time.Microsecond,
				RedisNodeBytes: 4096, RedisNodeEntries: 100, RedisEntryOverheadBytes: 12, RedisNodeOverheadBytes: 504, RedisStreamOverheadBytes: 200},
			[]int{0, 23}},
		// A replay cheaper than an append: no per-event cost, none below 0.
		// 100-byte payloads, whose node outgrows 4096 bytes at its 17th
		// event: only an entry overhead of 12 puts it there.
		{"cheap replay", Result{EventBytes: 100, ReplayEvents: 10, AppendCost: 10 * time.Microsecond, ReplayCost: 5 * time.Microsecond,
			Replay: Fit{A: 5 * time.Microsecond, B: -time.Microsecond},
			Memory: Memory{NodeBytes: 4096, NodeEntries: 100, MessageBytes: 228, Events: []int{1, 17, 18, 34, 35, 51, 52, 68, 69},
				Bytes: []int64{4800, 5824, 10912, 11936, 16536, 17560, 22160, 23184, 27784}, Nodes: []int{1, 1, 2, 2, 3, 3, 4, 4, 5},
				PerNode: 17, NodeStep: 4600, OneNode: 4800}},
			topology.StoreConfig{Concurrency: 1, ServiceBase: 10 * time.Microsecond,
				RedisNodeBytes: 4096, RedisNodeEntries: 100, RedisEntryOverheadBytes: 12, RedisNodeOverheadBytes: 504, RedisStreamOverheadBytes: 200},
			[]int{12, 12}},
		// The same nodes without the growth at the 17th event: entry
		// overheads 0 to 11 keep the node within 4096 bytes, the default
		// does not, so their middle.
		{"no growth within a node", Result{EventBytes: 100, ReplayEvents: 100,
			Memory: Memory{NodeBytes: 4096, NodeEntries: 100, MessageBytes: 228, Events: []int{1, 18, 35, 52, 69},
				Bytes: []int64{4800, 9888, 14488, 19088, 23688}, Nodes: nodes, PerNode: 17, NodeStep: 4600, OneNode: 4800}},
			topology.StoreConfig{Concurrency: 1,
				RedisNodeBytes: 4096, RedisNodeEntries: 100, RedisEntryOverheadBytes: 5, RedisNodeOverheadBytes: 504, RedisStreamOverheadBytes: 200},
			[]int{0, 11}},
		// Nodes full by their 20 entries say nothing of the entry overhead:
		// the default. A node of 20 1-byte events shrinks to 3072 bytes.
		{"entry limit", Result{EventBytes: 1, ReplayEvents: 100,
			Memory: Memory{NodeBytes: 4096, NodeEntries: 20, MessageBytes: 129, Events: []int{1, 21, 41, 61, 81},
				Bytes: []int64{4800, 8864, 12440, 16016, 19592}, Nodes: nodes, PerNode: 20, NodeStep: 3576, OneNode: 4800}},
			topology.StoreConfig{Concurrency: 1,
				RedisNodeBytes: 4096, RedisNodeEntries: 20, RedisEntryOverheadBytes: 12, RedisNodeOverheadBytes: 504, RedisStreamOverheadBytes: 200},
			nil},
	}
	for _, c := range cases {
		c.r.derive()
		if c.r.Store != c.want {
			t.Errorf("%s: got %+v\nwant %+v", c.name, c.r.Store, c.want)
		}
		if !slices.Equal(c.r.Memory.EntryFit, c.entryFit) {
			t.Errorf("%s: entry overheads %v fit best, want %v", c.name, c.r.Memory.EntryFit, c.entryFit)
		}
	}
}

func TestSig3(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want time.Duration }{
		{0, 0}, {-5, 0}, {999, 999}, {1234, 1230}, {12_345_678, 12_300_000}, {1_999_999, 2_000_000},
	} {
		if got := Sig3(c.in); got != c.want {
			t.Errorf("Sig3(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
