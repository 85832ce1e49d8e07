package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/montanaflynn/stats"
	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/topology"
)

// DefaultEventBytes is the scenario's default workload.event_bytes.
const DefaultEventBytes = 256

// Defaults of Options.
var (
	DefaultConcurrency   = []int{1, 16, 64, 256}
	DefaultReplayLengths = []int{1, 10, 100, 300}
)

// keyTTL is the TTL every key gets as it is created (the live store's
// default redis_ttl): a net under the deletion at the end, should the
// process die before it.
const keyTTL = 10 * time.Minute

// ttlEvery is the live store's TTL refresh period, in events.
const ttlEvery = 16

// Options configures a calibration. A nil *Options means the defaults; a
// zero field means its default.
type Options struct {
	// EventBytes is the payload of one event (default DefaultEventBytes, at
	// most 64 KiB).
	EventBytes int
	// Concurrency lists the numbers of requests in flight at which
	// throughput and latency under load are measured (default 1, 16, 64,
	// 256). 1 is always measured: it gives the append latency. The client
	// passed to Measure needs a pool at least as large as the highest.
	Concurrency []int
	// Step is how long each throughput step runs (default 1 s); a full run
	// takes about three steps per concurrency.
	Step time.Duration
	// ReplayEvents is the length of the replays whose throughput is
	// measured (default 100, at least 2).
	ReplayEvents int
	// ReplayLengths are the replay lengths the latency fit uses (default 1,
	// 10, 100, 300; at least two different ones).
	ReplayLengths []int
	// ReplaySamples is the number of replays timed per length (default 200).
	ReplaySamples int
	// Pipeline is how many appends go in one pipeline (default 16).
	Pipeline int
	// MaxLen is the (exact) MAXLEN of every XADD (default 1000), as the
	// live store sends with redis_maxlen set.
	MaxLen int64
	// Rand draws the key prefix and the payloads; default a PCG seeded from
	// Now and the process id.
	Rand *rand.Rand
	// Now is the clock every figure is timed with; default time.Now.
	Now func() time.Time
	// Progress, when set, is called after each of the total steps.
	Progress func(done, total int)
}

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.EventBytes == 0 {
		c.EventBytes = DefaultEventBytes
	}
	if len(c.Concurrency) == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Step == 0 {
		c.Step = time.Second
	}
	if c.ReplayEvents == 0 {
		c.ReplayEvents = 100
	}
	if len(c.ReplayLengths) == 0 {
		c.ReplayLengths = DefaultReplayLengths
	}
	if c.ReplaySamples == 0 {
		c.ReplaySamples = 200
	}
	if c.Pipeline == 0 {
		c.Pipeline = 16
	}
	if c.MaxLen == 0 {
		c.MaxLen = 1000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.Now().UnixNano()), uint64(os.Getpid())))
	}
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf("calibrate: "+format, args...))
		}
	}
	bad(c.EventBytes < 1 || c.EventBytes > 64<<10, "event bytes %d: want 1..65536", c.EventBytes)
	for _, n := range c.Concurrency {
		bad(n < 1 || n > 10_000, "concurrency %d: want 1..10000", n)
	}
	bad(c.Step < 10*time.Millisecond, "step %v: want at least 10ms", c.Step)
	bad(c.ReplayEvents < 2 || c.ReplayEvents > 100_000, "replay events %d: want 2..100000", c.ReplayEvents)
	for _, n := range c.ReplayLengths {
		bad(n < 1 || n > 100_000, "replay length %d: want 1..100000", n)
	}
	lengths := slices.Compact(slices.Sorted(slices.Values(c.ReplayLengths)))
	bad(len(lengths) < 2, "replay lengths %v: want at least two different ones", c.ReplayLengths)
	bad(c.ReplaySamples < 1, "replay samples %d: want at least 1", c.ReplaySamples)
	bad(c.Pipeline < 1 || c.Pipeline > 10_000, "pipeline %d: want 1..10000", c.Pipeline)
	bad(c.MaxLen < 1, "maxlen %d: want at least 1", c.MaxLen)
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	c.Concurrency = slices.Compact(slices.Sorted(slices.Values(append([]int{1}, c.Concurrency...))))
	c.ReplayLengths = lengths
	return c, nil
}

// Latency is a distribution of operation times.
type Latency struct {
	P50, P90, P99 time.Duration
	Samples       int
}

// Step is what one concurrency gave. The CPU figures are the Redis main
// thread's CPU time per operation (INFO cpu), 0 when Redis does not say.
type Step struct {
	Concurrency int
	// Appends one XADD at a time.
	AppendOpsPerS float64
	Append        Latency
	AppendCPU     time.Duration
	// Appends in pipelines of Options.Pipeline.
	PipelinedOpsPerS float64
	PipelinedCPU     time.Duration
	// Replays of Options.ReplayEvents events, one XRANGE at a time.
	ReplayOpsPerS float64
	Replay        Latency
	ReplayCPU     time.Duration
}

// Fit is the replay latency at concurrency 1: the p50 at each length, and
// the least-squares line through them, p50 ≈ A + B·n.
type Fit struct {
	Lengths []int
	P50     []time.Duration
	A, B    time.Duration
}

// Memory is how Redis holds a stream of events, node by node: MEMORY
// USAGE and the node count (XINFO STREAM radix-tree-keys) of one stream
// grown one event at a time, at the first event and at every event where
// either changed; the per-node figures read from them; and how well the
// derived model fits them.
type Memory struct {
	// NodeBytes and NodeEntries are the server's stream-node-max-bytes and
	// stream-node-max-entries (0 = no limit); ConfigFrom says where they
	// came from: ConfigGet, or Redis's defaults (it starts with
	// ConfigDefaults) where CONFIG is refused, as managed Redis often does.
	NodeBytes, NodeEntries int
	ConfigFrom             string
	// MessageBytes is each stored message: topology.MessageBytes of the
	// event size.
	MessageBytes int
	// A stream of Events[i] events took Bytes[i] in Nodes[i] nodes:
	// Events[0] is 1, every later one an event at which the usage or the
	// node count changed. Between two of them the usage stays put.
	Events []int
	Bytes  []int64
	Nodes  []int
	// PerNode is the events per node and NodeStep what the usage jumps by
	// as a node begins, both averaged over the nodes after the second (the
	// second also pays for the stream's index outgrowing its first
	// allocation); OneNode is Bytes[0], a stream of one event.
	PerNode  int
	NodeStep int64
	OneNode  int64
	// EntryFit is the first and last redis_entry_overhead_bytes with which
	// the model fits the figures best (none when they say little of it), and
	// MaxError the model's largest difference from MEMORY USAGE, in bytes, at
	// any event count measured, with the keys derived; both set by derive.
	EntryFit []int
	MaxError int64
}

// Where Memory's node configuration came from.
const (
	// ConfigGet: CONFIG GET stream-node-max-* answered.
	ConfigGet = "CONFIG GET"
	// ConfigDefaults begins ConfigFrom when the server refused CONFIG GET
	// (or gave no numbers) and Redis's defaults were assumed; the rest says
	// what it answered.
	ConfigDefaults = "Redis's defaults"
)

// Redis's own defaults for stream-node-max-bytes and
// stream-node-max-entries, assumed where CONFIG is refused.
const (
	redisNodeBytes   = 4096
	redisNodeEntries = 100
)

// liveStreamKeyBytes is the length of the live store's stream keys,
// stormsim:{session}:s:stream with a session of 32 hex digits and a stream
// of 16.
const liveStreamKeyBytes = len("stormsim:{}:s:") + 32 + 16

// maxEntryOverhead bounds the search for redis_entry_overhead_bytes: a
// listpack entry's own bytes (headers, back-lengths, the ID's deltas) are a
// few dozen, never hundreds.
const maxEntryOverhead = 256

// The memory step grows its stream until it has memoryNodes nodes, or it
// holds maxMemoryEvents events; fewer than minMemoryNodes nodes are an
// error.
const (
	memoryNodes     = 5
	minMemoryNodes  = 4
	maxMemoryEvents = 10_000
)

// Result is a calibration: the raw figures and the model keys derived from
// them.
type Result struct {
	Started      time.Time // UTC
	Elapsed      time.Duration
	RedisVersion string
	RedisOS      string
	HostCPUs     int
	HostCPUModel string
	EventBytes   int
	ReplayEvents int
	Pipeline     int
	// Append is the append latency one at a time at concurrency 1.
	Append Latency
	Steps  []Step
	Replay Fit
	Memory Memory
	// AppendCost and ReplayCost are what one pipelined append and one
	// replay of ReplayEvents events cost Redis, over every step; CostFrom
	// says how they were measured (CostCPU or CostRate).
	AppendCost, ReplayCost time.Duration
	CostFrom               string
	// Store holds the derived model keys, the ones StoreKeys names; the
	// others are zero.
	Store topology.StoreConfig
}

// How Result's costs were measured.
const (
	// CostCPU: the Redis main thread's CPU time (INFO cpu) over the steps,
	// divided by the operations they did.
	CostCPU = "redis main-thread CPU time per operation"
	// CostRate: 1 / the peak rate over the steps, when Redis does not
	// report its CPU time. On a machine where the client is the bottleneck
	// this overstates Redis's cost.
	CostRate = "1 / peak rate"
)

// StoreKeys are the topology.StoreConfig keys a calibration sets.
var StoreKeys = []string{
	"redis_latency", "redis_latency_per_event", "concurrency",
	"service_base", "service_per_event", "redis_node_bytes", "redis_node_entries",
	"redis_entry_overhead_bytes", "redis_node_overhead_bytes", "redis_stream_overhead_bytes",
}

// measurer is one calibration run. rdb, o and prefix are fixed at
// creation; mu guards keys; the totals are written by Measure's goroutine
// alone.
type measurer struct {
	rdb    *redis.Client
	o      Options
	prefix string

	mu   sync.Mutex
	keys map[string]bool // every key written and not yet deleted

	// Redis CPU time and operations over every step, per kind; cpuKnown
	// turns false when a step could not read the CPU time.
	cpuKnown           bool
	pipeCPU, replayCPU time.Duration
	pipeOps, replayOps int
}

// newMeasurer starts a run with options o (defaults applied), under a
// fresh key prefix drawn from o.Rand.
func newMeasurer(rdb *redis.Client, o Options) *measurer {
	return &measurer{rdb: rdb, o: o, keys: map[string]bool{}, cpuKnown: true,
		prefix: fmt.Sprintf("stormsim:{calibrate-%016x}:", o.Rand.Uint64())}
}

// Measure calibrates the Redis behind rdb. Its pool (rdb.Options().PoolSize)
// must hold the highest concurrency. Every key it writes is deleted before
// it returns, whatever the outcome.
func Measure(ctx context.Context, rdb *redis.Client, opts *Options) (res *Result, err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	maxC := slices.Max(o.Concurrency)
	if ps := rdb.Options().PoolSize; ps < maxC {
		return nil, fmt.Errorf("calibrate: the client's pool holds %d connections, fewer than the highest concurrency (%d): set redis.Options.PoolSize", ps, maxC)
	}
	m := newMeasurer(rdb, o)
	start := o.Now()
	res = &Result{Started: start.UTC(), EventBytes: o.EventBytes, ReplayEvents: o.ReplayEvents, Pipeline: o.Pipeline}
	res.HostCPUs, res.HostCPUModel = runtime.NumCPU(), cpuModel()

	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("calibrate: cannot reach Redis at %s: %w", rdb.Options().Addr, err)
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, fmt.Errorf("calibrate: INFO server: %w", err)
	}
	res.RedisVersion, res.RedisOS = infoField(info, "redis_version"), infoField(info, "os")

	defer func() {
		if cerr := m.cleanup(ctx); cerr != nil {
			res, err = nil, errors.Join(err, cerr)
		}
		if cerr := ctx.Err(); cerr != nil && err != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
	}()
	total, done := 2+3*len(o.Concurrency), 0
	progress := func() {
		done++
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}

	if res.Replay, err = m.fit(ctx); err != nil {
		return nil, err
	}
	progress()
	if res.Memory, err = m.memory(ctx); err != nil {
		return nil, err
	}
	progress()
	for _, c := range o.Concurrency {
		s, err := m.steps(ctx, c, progress)
		if err != nil {
			return nil, err
		}
		res.Steps = append(res.Steps, s)
	}
	res.Append = res.Steps[0].Append // Concurrency is sorted and holds 1
	res.AppendCost, res.ReplayCost, res.CostFrom = m.costs(res.Steps)
	res.derive()
	res.Elapsed = o.Now().Sub(start)
	return res, nil
}

// derive turns the measurements into the model's keys, the way the
// simulator consumes them (sim/server.go):
//
//   - Redis is concurrency servers, and an operation of n events holds one
//     for service_base + service_per_event·n; an append is an operation of
//     one event, and appends at rate r load Redis r·(service_base +
//     service_per_event)/concurrency (appendLoad; at 1 every store call
//     fails).
//   - concurrency = 1: Redis executes commands one at a time on its main
//     thread (io-threads only move bytes), so its peak rate for an operation
//     is 1 / what the operation costs it.
//   - An append costs Ta, the Redis CPU time per pipelined append, because
//     the live store pipelines its appends; a replay of L = ReplayEvents
//     events costs TL, the Redis CPU time per XRANGE of L events, because
//     the store sends each replay alone (see costs). So service_per_event =
//     (TL − Ta)/(L − 1) and service_base = Ta − service_per_event (neither
//     below 0): the model charges exactly Ta per append and TL per replay of
//     L. (The one-at-a-time appends, in Steps, cost Redis about three times
//     as much: what an unbatched store would pay.)
//   - An idle replay of n events takes redis_latency + service_base +
//     n·(redis_latency_per_event + service_per_event) in the simulator
//     (ReplayLatency plus the service time), and the fit of the p50 at
//     concurrency 1 says a + b·n, so redis_latency = a − service_base and
//     redis_latency_per_event = b − service_per_event (neither below 0).
//   - Memory: the node keys are fitted to Memory so that the simulator's
//     stream model (topology.StoreConfig.RedisStreamCost) gives MEMORY
//     USAGE back (see Memory.keys).
//
// The times are rounded to three significant digits.
func (r *Result) derive() {
	perEvent := max((r.ReplayCost-r.AppendCost)/time.Duration(r.ReplayEvents-1), 0)
	base := max(r.AppendCost-perEvent, 0)
	r.Store = topology.StoreConfig{
		Concurrency:          1,
		ServiceBase:          Sig3(base),
		ServicePerEvent:      Sig3(perEvent),
		RedisLatency:         Sig3(max(r.Replay.A-base, 0)),
		RedisLatencyPerEvent: Sig3(max(r.Replay.B-perEvent, 0)),
	}
	r.Memory.keys(&r.Store, r.EventBytes)
}

// keys sets the node keys of s, for events of payload bytes, by fitting
// the model (topology.StoreConfig.RedisStreamCost) to the measured nodes:
//
//   - redis_node_bytes and redis_node_entries are the server's
//     stream-node-max-bytes and stream-node-max-entries. Where
//     stream-node-max-bytes is 0 (no limit), redis_node_bytes is 4096, what
//     Redis allocates for each new node then; the model cannot follow such
//     nodes, and MaxError shows by how much it misses.
//   - redis_node_overhead_bytes is what makes the model's usage jump by
//     NodeStep as a node begins (at the nodes after the second), and
//     redis_stream_overhead_bytes what makes its stream of one event take
//     OneNode; neither below 0. In a model whose node costs max(node bytes,
//     message + e) plus the node overhead, these are NodeStep − max(node
//     bytes, message + e) and OneNode − NodeStep.
//   - redis_entry_overhead_bytes: of the e from 0 to maxEntryOverhead
//     with which the model's node holds PerNode events, those whose model
//     (with the two overheads fitted as above) is nearest MEMORY USAGE at
//     every event count measured (the smallest largest difference;
//     EntryFit gives the first and last). One event size seldom pins e
//     down (at 256-byte payloads 0 to 23 fit alike), so the default stays
//     if it is one of them; else it is their middle, rounded down. When the
//     nodes are full by their entries (PerNode = stream-node-max-entries),
//     or no e gives PerNode, the figures say little of e and it keeps its
//     default.
func (m *Memory) keys(s *topology.StoreConfig, payload int) {
	s.RedisNodeBytes, s.RedisNodeEntries = m.NodeBytes, m.NodeEntries
	if s.RedisNodeBytes <= 0 {
		s.RedisNodeBytes = redisNodeBytes
	}
	s.RedisEntryOverheadBytes = topology.DefaultStore.RedisEntryOverheadBytes
	m.EntryFit = nil
	if m.PerNode <= 0 || len(m.Events) == 0 {
		return // nothing measured
	}
	if m.NodeEntries <= 0 || m.PerNode < m.NodeEntries {
		var best []int
		bestErr := int64(math.MaxInt64)
		for e := 0; e <= min(s.RedisNodeBytes, maxEntryOverhead); e++ {
			c := *s
			c.RedisEntryOverheadBytes = e
			if !m.fit(&c, payload) {
				continue
			}
			switch d := m.deviation(&c, payload); {
			case d < bestErr:
				best, bestErr = append(best[:0], e), d
			case d == bestErr:
				best = append(best, e)
			}
		}
		if len(best) > 0 {
			m.EntryFit = []int{best[0], best[len(best)-1]}
			if !slices.Contains(best, s.RedisEntryOverheadBytes) {
				s.RedisEntryOverheadBytes = best[(len(best)-1)/2]
			}
		}
	}
	m.fit(s, payload)
	m.MaxError = m.deviation(s, payload)
}

// fit sets the node and stream overheads of c (whose other node keys are
// set) from NodeStep and OneNode, and says whether c's node holds PerNode
// events of payload bytes.
func (m *Memory) fit(c *topology.StoreConfig, payload int) bool {
	c.RedisNodeOverheadBytes, c.RedisStreamOverheadBytes = 0, 0
	cost := c.RedisStreamCost(payload)
	// The model's jump as its third and later nodes begin, as measured.
	var step int64
	for k := int64(2); k < memoryNodes; k++ {
		n := k*cost.PerNode + 1
		step += cost.Bytes(n) - cost.Bytes(n-1)
	}
	step /= memoryNodes - 2
	c.RedisNodeOverheadBytes = int(max(m.NodeStep-step, 0))
	cost = c.RedisStreamCost(payload)
	c.RedisStreamOverheadBytes = int(max(m.OneNode-cost.Bytes(1), 0))
	return cost.PerNode == int64(m.PerNode)
}

// deviation is the largest difference, in bytes, between c's model and
// MEMORY USAGE at any event count from 1 to the last measured.
func (m *Memory) deviation(c *topology.StoreConfig, payload int) int64 {
	cost := c.RedisStreamCost(payload)
	var d int64
	i := 0
	for n := 1; n <= m.Events[len(m.Events)-1]; n++ {
		for i+1 < len(m.Events) && m.Events[i+1] <= n {
			i++
		}
		diff := cost.Bytes(int64(n)) - m.Bytes[i]
		d = max(d, diff, -diff)
	}
	return d
}

// costs are Ta and TL for derive: the Redis main thread's CPU time over
// every step of the kind, divided by the operations those steps did. This
// is Redis's own cost, whatever else shares the machine: the throughput of
// a client on the same small host stops at the client's CPU first (a Go
// client decoding replays is several times slower than Redis encoding
// them). Without CPU figures it falls back to 1 / the peak rate.
func (m *measurer) costs(steps []Step) (ta, tl time.Duration, from string) {
	if m.cpuKnown && m.pipeCPU > 0 && m.replayCPU > 0 && m.pipeOps > 0 && m.replayOps > 0 {
		return perOp(m.pipeCPU, m.pipeOps), perOp(m.replayCPU, m.replayOps), CostCPU
	}
	var peakA, peakR float64
	for _, s := range steps {
		peakA, peakR = max(peakA, s.PipelinedOpsPerS), max(peakR, s.ReplayOpsPerS)
	}
	return time.Duration(math.Round(float64(time.Second) / peakA)), time.Duration(math.Round(float64(time.Second) / peakR)), CostRate
}

func perOp(cpu time.Duration, ops int) time.Duration {
	if ops <= 0 || cpu <= 0 {
		return 0
	}
	return time.Duration(math.Round(float64(cpu) / float64(ops)))
}

// redisCPU is the CPU time the Redis main thread has used (the whole
// process on a Redis before 6.2); false when INFO does not say.
func (m *measurer) redisCPU(ctx context.Context) (time.Duration, bool) {
	info, err := m.rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, false
	}
	read := func(sys, user string) (time.Duration, bool) {
		s, err1 := strconv.ParseFloat(infoField(info, sys), 64)
		u, err2 := strconv.ParseFloat(infoField(info, user), 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return time.Duration(math.Round((s + u) * float64(time.Second))), true
	}
	if d, ok := read("used_cpu_sys_main_thread", "used_cpu_user_main_thread"); ok {
		return d, true
	}
	return read("used_cpu_sys", "used_cpu_user")
}

// Sig3 rounds d to three significant digits (0 for d ≤ 0).
func Sig3(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	p := time.Duration(1)
	for d/p >= 1000 {
		p *= 10
	}
	return (d + p/2) / p * p
}

// key names one key and records it for deletion.
func (m *measurer) key(name string) string {
	k := m.prefix + name
	m.mu.Lock()
	m.keys[k] = true
	m.mu.Unlock()
	return k
}

// drop deletes every recorded key whose name starts with the prefix plus
// part ("" for all).
func (m *measurer) drop(ctx context.Context, part string) error {
	m.mu.Lock()
	var keys []string
	for k := range m.keys {
		if strings.HasPrefix(k, m.prefix+part) {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	slices.Sort(keys)
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := m.rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			return fmt.Errorf("calibrate: deleting the keys under %s: %w", m.prefix, err)
		}
		m.mu.Lock()
		for _, k := range keys[:n] {
			delete(m.keys, k)
		}
		m.mu.Unlock()
		keys = keys[n:]
	}
	return nil
}

// cleanup deletes every key left, even when ctx is done.
func (m *measurer) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return m.drop(ctx, "")
}

func entryID(index int) string { return strconv.Itoa(index) + "-1" }

// payload is size random letters.
func (m *measurer) payload(size int) string {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(m.o.Rand.IntN(26))
	}
	return string(b)
}

// xadd is the live store's XADD of event index.
func (m *measurer) xadd(key string, index int, data string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: key, ID: entryID(index), Values: []any{"d", data}, MaxLen: m.o.MaxLen}
}

// fill writes events 1..n of data to each key, in pipelines, and gives
// each key its TTL.
func (m *measurer) fill(ctx context.Context, keys []string, n int, data string) error {
	p := m.rdb.Pipeline()
	flush := func() error {
		if p.Len() == 0 {
			return nil
		}
		_, err := p.Exec(ctx)
		return err
	}
	for _, k := range keys {
		for i := 1; i <= n; i++ {
			args := m.xadd(k, i, data)
			args.MaxLen = 0 // keep all n
			p.XAdd(ctx, args)
			if i == 1 {
				p.Expire(ctx, k, keyTTL)
			}
			if p.Len() >= 256 {
				if err := flush(); err != nil {
					return fmt.Errorf("calibrate: XADD: %w", err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("calibrate: XADD: %w", err)
	}
	return nil
}

// replay is the live store's replay from the start: XRANGE from just after
// the cursor (event 0) to the end. It checks every event came back.
func (m *measurer) replay(ctx context.Context, key string, n int) error {
	msgs, err := m.rdb.XRange(ctx, key, "("+entryID(0), "+").Result()
	if err != nil {
		return fmt.Errorf("calibrate: XRANGE: %w", err)
	}
	if len(msgs) != n {
		return fmt.Errorf("calibrate: XRANGE of %s returned %d events, want %d", key, len(msgs), n)
	}
	return nil
}

// fit times replays of each length at concurrency 1 and fits a + b·n
// through the p50s.
func (m *measurer) fit(ctx context.Context) (Fit, error) {
	f := Fit{Lengths: m.o.ReplayLengths}
	data := m.payload(m.o.EventBytes)
	keys := make([]string, len(f.Lengths))
	for i, n := range f.Lengths {
		keys[i] = m.key("fit:" + strconv.Itoa(n))
		if err := m.fill(ctx, keys[i:i+1], n, data); err != nil {
			return f, err
		}
	}
	// Untimed rounds first: a cold client, connection and server answer the
	// first hundred replays several times slower. Then the timed rounds, in
	// a new order each, so that no length always follows the longest.
	for range max(m.o.ReplaySamples/2, 10) {
		for i, n := range f.Lengths {
			if err := m.replay(ctx, keys[i], n); err != nil {
				return f, err
			}
		}
	}
	samples := make([][]time.Duration, len(f.Lengths))
	order := make([]int, len(f.Lengths))
	for i := range order {
		order[i] = i
	}
	for range m.o.ReplaySamples {
		m.o.Rand.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			t0 := m.o.Now()
			if err := m.replay(ctx, keys[i], f.Lengths[i]); err != nil {
				return f, err
			}
			samples[i] = append(samples[i], m.o.Now().Sub(t0))
		}
	}
	xs, ys := make([]float64, len(f.Lengths)), make([]float64, len(f.Lengths))
	for i, n := range f.Lengths {
		p50 := latency(samples[i]).P50
		f.P50 = append(f.P50, p50)
		xs[i], ys[i] = float64(n), float64(p50)
	}
	a, b := leastSquares(xs, ys)
	f.A, f.B = time.Duration(math.Round(a)), time.Duration(math.Round(b))
	return f, m.drop(ctx, "fit:")
}

// memory grows one stream, one event of the message size at a time, with
// the live store's XADD (without MAXLEN, as it sends them with
// redis_maxlen unset), and reads its MEMORY USAGE and node count after
// every append. Redis 7 allocates a node's listpack (stream-node-max-bytes,
// at most 4096) when the node begins, so the usage mostly stays put while a
// node fills and jumps when the next begins, when the old one is shrunk to
// fit: the distance between node starts is the events per node, and the
// jump what a node costs.
func (m *measurer) memory(ctx context.Context) (Memory, error) {
	mem := Memory{MessageBytes: topology.MessageBytes(m.o.EventBytes)}
	var err error
	if mem.NodeBytes, mem.NodeEntries, mem.ConfigFrom, err = m.nodeConfig(ctx); err != nil {
		return mem, err
	}
	// A node holds at most this many events (a node ends before its bytes
	// exceed stream-node-max-bytes), and memoryNodes nodes start by event
	// (memoryNodes−1)·perNode + 1.
	perNode := maxMemoryEvents
	if mem.NodeEntries > 0 {
		perNode = mem.NodeEntries
	}
	if mem.NodeBytes > 0 {
		perNode = min(perNode, mem.NodeBytes/mem.MessageBytes+1)
	}
	bound := min(memoryNodes*perNode+1, maxMemoryEvents)
	// MEMORY USAGE counts the key's name: give it the length of the live
	// store's stream keys.
	key := m.key("mem:" + strings.Repeat("s", max(liveStreamKeyBytes-len(m.prefix)-len("mem:"), 1)))
	data := m.payload(mem.MessageBytes)
	for i, nodes := 1, 0; i <= bound && nodes < memoryNodes; i++ {
		args := m.xadd(key, i, data)
		args.MaxLen = 0
		if i == 1 {
			p := m.rdb.Pipeline()
			p.XAdd(ctx, args)
			p.Expire(ctx, key, keyTTL)
			_, err = p.Exec(ctx)
		} else {
			err = m.rdb.XAdd(ctx, args).Err()
		}
		if err != nil {
			return mem, fmt.Errorf("calibrate: XADD: %w", err)
		}
		n, err := m.rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			return mem, fmt.Errorf("calibrate: MEMORY USAGE: %w", err)
		}
		info, err := m.rdb.XInfoStream(ctx, key).Result()
		if err != nil {
			return mem, fmt.Errorf("calibrate: XINFO STREAM: %w", err)
		}
		nodes = int(info.RadixTreeKeys)
		if last := len(mem.Events) - 1; last < 0 || n != mem.Bytes[last] || nodes != mem.Nodes[last] {
			mem.Events, mem.Bytes, mem.Nodes = append(mem.Events, i), append(mem.Bytes, n), append(mem.Nodes, nodes)
		}
	}
	if err := m.drop(ctx, "mem:"); err != nil {
		return mem, err
	}
	var starts []int // the points at which a node began, after the first
	for i := 1; i < len(mem.Events); i++ {
		if mem.Nodes[i] > mem.Nodes[i-1] {
			starts = append(starts, i)
		}
	}
	if len(starts)+1 < minMemoryNodes {
		last := len(mem.Events) - 1
		return mem, fmt.Errorf("calibrate: a stream of %d messages of %d bytes has %d nodes (MEMORY USAGE %v at events %v), want at least %d to measure them (stream-node-max-bytes %d, stream-node-max-entries %d, from %s)",
			mem.Events[last], mem.MessageBytes, mem.Nodes[last], mem.Bytes, mem.Events, minMemoryNodes, mem.NodeBytes, mem.NodeEntries, mem.ConfigFrom)
	}
	mem.PerNode = int(math.Round(float64(mem.Events[starts[len(starts)-1]]-mem.Events[starts[0]]) / float64(len(starts)-1)))
	var step int64
	for _, i := range starts[1:] {
		step += mem.Bytes[i] - mem.Bytes[i-1]
	}
	mem.NodeStep = int64(math.Round(float64(step) / float64(len(starts)-1)))
	mem.OneNode = mem.Bytes[0]
	return mem, nil
}

// nodeConfig reads stream-node-max-bytes and stream-node-max-entries. A
// server that refuses CONFIG GET, or answers it without them, gets Redis's
// defaults, and from says so.
func (m *measurer) nodeConfig(ctx context.Context) (nodeBytes, nodeEntries int, from string, err error) {
	cfg, err := m.rdb.ConfigGet(ctx, "stream-node-max-*").Result()
	if rerr := redis.Error(nil); errors.As(err, &rerr) {
		return redisNodeBytes, redisNodeEntries, ConfigDefaults + ": CONFIG GET refused (" + err.Error() + ")", nil
	}
	if err != nil {
		return 0, 0, "", fmt.Errorf("calibrate: CONFIG GET stream-node-max-*: %w", err)
	}
	b, err1 := strconv.Atoi(cfg["stream-node-max-bytes"])
	e, err2 := strconv.Atoi(cfg["stream-node-max-entries"])
	if err1 != nil || err2 != nil || b < 0 || e < 0 {
		return redisNodeBytes, redisNodeEntries, fmt.Sprintf("%s: CONFIG GET stream-node-max-* answered %v", ConfigDefaults, cfg), nil
	}
	return b, e, ConfigGet, nil
}

// steps measures one concurrency: appends one at a time, pipelined
// appends, and replays.
func (m *measurer) steps(ctx context.Context, c int, progress func()) (Step, error) {
	o := m.o
	s := Step{Concurrency: c}
	data := m.payload(o.EventBytes)
	tag := fmt.Sprintf("c%d:", c)

	// One at a time: each worker appends to its own stream, the first
	// event in one pipeline with its EXPIRE, as the live store does.
	keys := make([]string, c)
	for w := range keys {
		keys[w] = m.key(tag + "one:" + strconv.Itoa(w))
	}
	out, err := m.run(ctx, c, true, func(ctx context.Context, w, i int) (int, error) {
		if i > 0 {
			return 1, m.rdb.XAdd(ctx, m.xadd(keys[w], i+1, data)).Err()
		}
		p := m.rdb.Pipeline()
		p.XAdd(ctx, m.xadd(keys[w], 1, data))
		p.Expire(ctx, keys[w], keyTTL)
		_, err := p.Exec(ctx)
		return 1, err
	})
	if err != nil {
		return s, fmt.Errorf("calibrate: XADD at concurrency %d: %w", c, err)
	}
	s.AppendOpsPerS, s.Append, s.AppendCPU = out.rate(), latency(out.lat), perOp(out.cpu, out.ops)
	if err := m.drop(ctx, tag); err != nil {
		return s, err
	}
	progress()

	// Pipelined: each batch adds the next event to each of a worker's
	// Pipeline streams, as a replica streaming that many calls would, with
	// the live store's SADD and EXPIREs.
	ring := make([][]string, c)
	sets := make([]string, c)
	for w := range ring {
		sets[w] = m.key(tag + "set:" + strconv.Itoa(w))
		for j := range o.Pipeline {
			ring[w] = append(ring[w], m.key(fmt.Sprintf("%spipe:%d:%d", tag, w, j)))
		}
	}
	out, err = m.run(ctx, c, false, func(ctx context.Context, w, i int) (int, error) {
		p := m.rdb.Pipeline()
		idx := i + 1
		for j, k := range ring[w] {
			p.XAdd(ctx, m.xadd(k, idx, data))
			if idx == 1 {
				p.SAdd(ctx, sets[w], j)
				p.Expire(ctx, sets[w], keyTTL)
			}
			if idx == 1 || idx%ttlEvery == 0 {
				p.Expire(ctx, k, keyTTL)
			}
		}
		_, err := p.Exec(ctx)
		return len(ring[w]), err
	})
	if err != nil {
		return s, fmt.Errorf("calibrate: pipelined XADD at concurrency %d: %w", c, err)
	}
	s.PipelinedOpsPerS, s.PipelinedCPU = out.rate(), perOp(out.cpu, out.ops)
	m.pipeCPU, m.pipeOps = m.pipeCPU+out.cpu, m.pipeOps+out.ops
	if err := m.drop(ctx, tag); err != nil {
		return s, err
	}
	progress()

	// Replays of ReplayEvents events from a few streams.
	keys = make([]string, min(c, 16))
	for i := range keys {
		keys[i] = m.key(tag + "replay:" + strconv.Itoa(i))
	}
	if err := m.fill(ctx, keys, o.ReplayEvents, data); err != nil {
		return s, err
	}
	out, err = m.run(ctx, c, true, func(ctx context.Context, w, _ int) (int, error) {
		return 1, m.replay(ctx, keys[w%len(keys)], o.ReplayEvents)
	})
	if err != nil {
		return s, fmt.Errorf("calibrate: XRANGE at concurrency %d: %w", c, err)
	}
	s.ReplayOpsPerS, s.Replay, s.ReplayCPU = out.rate(), latency(out.lat), perOp(out.cpu, out.ops)
	m.replayCPU, m.replayOps = m.replayCPU+out.cpu, m.replayOps+out.ops
	if err := m.drop(ctx, tag); err != nil {
		return s, err
	}
	progress()
	return s, nil
}

// stepOut is what one run of workers did.
type stepOut struct {
	ops  int             // operations counted
	lat  []time.Duration // the time of each call, when kept
	wall time.Duration   // from the start to the last worker's end
	cpu  time.Duration   // the Redis CPU time it took; 0 when unknown
}

func (s stepOut) rate() float64 {
	if s.wall <= 0 {
		return 0
	}
	return math.Round(float64(s.ops) / s.wall.Seconds())
}

// run has c workers call op in a loop, each call i of worker w, until the
// step's time is up. The first error stops every worker.
func (m *measurer) run(ctx context.Context, c int, keep bool, op func(ctx context.Context, w, i int) (int, error)) (stepOut, error) {
	var out stepOut
	// Open c connections first, so that dialling is not timed.
	var wg sync.WaitGroup
	errs := make([]error, c)
	for w := range c {
		wg.Go(func() { errs[w] = m.rdb.Ping(ctx).Err() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	cpu0, ok0 := m.redisCPU(ctx)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	counts := make([]int, c)
	lats := make([][]time.Duration, c)
	start := m.o.Now()
	end := start.Add(m.o.Step)
	for w := range c {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				t0 := m.o.Now()
				if !t0.Before(end) {
					return
				}
				n, err := op(ctx, w, i)
				if err != nil {
					cancel(err)
					return
				}
				counts[w] += n
				if keep {
					lats[w] = append(lats[w], m.o.Now().Sub(t0))
				}
			}
		})
	}
	wg.Wait()
	out.wall = m.o.Now().Sub(start)
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	cpu1, ok1 := m.redisCPU(ctx)
	if ok0 && ok1 && cpu1 > cpu0 {
		out.cpu = cpu1 - cpu0
	} else {
		m.cpuKnown = false
	}
	for _, n := range counts {
		out.ops += n
	}
	out.lat = slices.Concat(lats...)
	return out, nil
}

// latency summarises samples with nearest-rank quantiles, so each is a
// time that happened.
func latency(samples []time.Duration) Latency {
	l := Latency{Samples: len(samples)}
	if len(samples) == 0 {
		return l
	}
	data := make(stats.Float64Data, len(samples))
	for i, s := range samples {
		data[i] = float64(s)
	}
	q := func(p float64) time.Duration {
		v, err := stats.PercentileNearestRank(data, p)
		if err != nil {
			return 0
		}
		return time.Duration(v)
	}
	l.P50, l.P90, l.P99 = q(50), q(90), q(99)
	return l
}

// leastSquares fits y = a + b·x.
func leastSquares(xs, ys []float64) (a, b float64) {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return my, 0
	}
	b = sxy / sxx
	return my - b*mx, b
}

// infoField reads one field of an INFO answer.
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// cpuModel is this host's CPU model, from /proc/cpuinfo where there is one.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
