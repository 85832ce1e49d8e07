package topology

import (
	"fmt"
	"math/bits"
	"slices"
	"time"
)

// Design axes (docs/domain.md §4).
const (
	ModeStateless = "stateless"
	ModeStateful  = "stateful"

	SessionsNone   = "none"
	SessionsLocal  = "local"
	SessionsShared = "shared"

	EventsNone   = "none"
	EventsMemory = "memory"
	EventsRedis  = "redis"
)

// Valid values, for validation messages.
var (
	Modes    = []string{ModeStateless, ModeStateful}
	Sessions = []string{SessionsNone, SessionsLocal, SessionsShared}
	Events   = []string{EventsNone, EventsMemory, EventsRedis}
	Eras     = []string{"2025-06-18", "2025-11-25", "2026-07-28"}
	Servers  = []string{ServerReference, ServerGoSDK, ServerTSSDK}
)

// Replica flavours of the live engine.
const (
	ServerReference = "reference" // stormsim's own replica (live/replica)
	ServerGoSDK     = "go-sdk"    // the official MCP Go SDK's StreamableHTTPHandler (live/sdkreplica)
	ServerTSSDK     = "ts-sdk"    // the official MCP TypeScript SDK's StreamableHTTPServerTransport (node/server.mjs)
)

// StoreConfig holds the retention and cost of the event stores.
type StoreConfig struct {
	// MemoryCapBytes caps a replica's whole in-memory store, go-sdk style:
	// when full it drops the oldest event of every stream in turn. 0 = no cap.
	MemoryCapBytes      int64 `toml:"memory_cap_bytes" json:"memory_cap_bytes"`
	MemoryOverheadBytes int   `toml:"memory_overhead_bytes" json:"memory_overhead_bytes"`
	// RedisMaxLen caps each stream (XADD MAXLEN). 0 = no cap.
	RedisMaxLen int `toml:"redis_maxlen" json:"redis_maxlen"`
	// RedisTTL expires a stream this long after its last append. 0 = never.
	RedisTTL time.Duration `toml:"redis_ttl" json:"redis_ttl"`
	// What a Redis stream holds, node by node (RedisStreamBytes): a node
	// is a listpack of RedisNodeBytes (stream-node-max-bytes; Redis 7
	// allocates it whole up front) holding at most RedisNodeEntries
	// entries (stream-node-max-entries) of the message plus
	// RedisEntryOverheadBytes each. A node costs its listpack plus
	// RedisNodeOverheadBytes, a stream RedisStreamOverheadBytes more.
	RedisNodeBytes           int `toml:"redis_node_bytes" json:"redis_node_bytes"`
	RedisNodeEntries         int `toml:"redis_node_entries" json:"redis_node_entries"`
	RedisEntryOverheadBytes  int `toml:"redis_entry_overhead_bytes" json:"redis_entry_overhead_bytes"`
	RedisNodeOverheadBytes   int `toml:"redis_node_overhead_bytes" json:"redis_node_overhead_bytes"`
	RedisStreamOverheadBytes int `toml:"redis_stream_overhead_bytes" json:"redis_stream_overhead_bytes"`
	// Latency of one replay read: a + b·events.
	MemoryLatency        time.Duration `toml:"memory_latency" json:"memory_latency"`
	RedisLatency         time.Duration `toml:"redis_latency" json:"redis_latency"`
	RedisLatencyPerEvent time.Duration `toml:"redis_latency_per_event" json:"redis_latency_per_event"`
	// The Redis server's own cost: each operation occupies one of
	// Concurrency servers for ServiceBase + ServicePerEvent·events, and
	// operations queue for a free one. Appends load it too.
	Concurrency     int           `toml:"concurrency" json:"concurrency"`
	ServiceBase     time.Duration `toml:"service_base" json:"service_base"`
	ServicePerEvent time.Duration `toml:"service_per_event" json:"service_per_event"`
	// Timeout is how long a store call waits before it fails (go-redis: 3 s).
	Timeout time.Duration `toml:"timeout" json:"timeout"`
	// Persistent keeps the store's data across a store restart.
	Persistent bool `toml:"persistent" json:"persistent"`
}

// DefaultStore is the store model measured in docs/domain.md §2 and §5.
var DefaultStore = StoreConfig{
	MemoryCapBytes:      10 << 20,
	MemoryOverheadBytes: 64,
	RedisMaxLen:         0,
	RedisTTL:            10 * time.Minute,
	// Fitted to MEMORY USAGE of streams in Redis 7.0 (the 256-byte
	// default payload: 4,800 bytes for 1 to 10 events, 9,888 for 11 to
	// 20, then 4,600 more for every 10).
	RedisNodeBytes:           4096,
	RedisNodeEntries:         100,
	RedisEntryOverheadBytes:  12,
	RedisNodeOverheadBytes:   504,
	RedisStreamOverheadBytes: 200, // with the live store's key names, about 62 bytes
	MemoryLatency:            20 * time.Microsecond,
	RedisLatency:             300 * time.Microsecond,
	RedisLatencyPerEvent:     5 * time.Microsecond,
	// docs/domain.md §5: XADD one at a time ≈ 65–88k ops/s, XRANGE of 100 events
	// ≈ 13–24k/s on one Redis (which runs commands one at a time).
	Concurrency:     1,
	ServiceBase:     12 * time.Microsecond,
	ServicePerEvent: 500 * time.Nanosecond,
	Timeout:         3 * time.Second,
}

// EnvelopeBytes is what the JSON-RPC progress notification that carries an
// event adds to its payload (method, progress token, progress and total):
// 131 bytes in the reference replica's messages. Stores keep the whole
// message, so this is part of every stored event.
const EnvelopeBytes = 128

// MessageBytes is the size of the message that carries an event of payload
// bytes: what a store keeps of it.
func MessageBytes(payload int) int { return payload + EnvelopeBytes }

// MemoryEventBytes is what one event of payload bytes costs in the
// in-memory store: its message plus the store's own overhead.
func (c *StoreConfig) MemoryEventBytes(payload int) int64 {
	return int64(MessageBytes(payload) + c.MemoryOverheadBytes)
}

// Redis's stream format, as Redis 7 lays it out (t_stream.c, listpack.c):
// a node's listpack starts with its header and the master entry
// (redisNodeHeadBytes); Redis allocates a new node's listpack at
// stream-node-max-bytes but never more than redisPreallocBytes up front;
// an entry with an empty value (the priming event) takes redisEmptyEntry
// bytes, and one that names a second field (the result's "f") takes
// redisResultFieldsBytes more than a progress event's overhead; and the
// radix tree that indexes the nodes outgrows its first allocation once a
// stream has a second node (redisIndexBytes, measured with MEMORY USAGE on
// Redis 7.0).
const (
	redisNodeHeadBytes     = 18
	redisPreallocBytes     = 4096
	redisEmptyEntry        = 10
	redisResultFieldsBytes = 9
	redisIndexBytes        = 488
)

// ResultBytes is the size of the message that ends a call (the JSON-RPC
// result, "streamed N events", in the reference replica): the last event
// of a completed call's stream.
const ResultBytes = 92

// RedisStreamCost is what a Redis stream of a call's events takes in
// memory: the priming event (empty), progress events of one size, and the
// result. Build it with StoreConfig.RedisStreamCost.
type RedisStreamCost struct {
	// PerNode is how many progress events a node that starts with one
	// holds; First how many fit after the priming event in a stream's
	// first node.
	PerNode, First int64

	entry, raw, result, resultRaw int64 // a progress event's and the result's listpack and raw bytes
	node, over, entries           int64
	stream                        int64
	open                          int64 // the newest node's least cost: its preallocated listpack and overhead
	full                          int64 // a closed node of PerNode progress events, shrunk to fit, and its overhead
}

// RedisStreamCost is the cost of streams of events of payload bytes, the way
// Redis 7 stores them. A progress event is an entry of its message plus
// RedisEntryOverheadBytes. Redis appends to the newest node while the node
// and the new entry's raw bytes (its field names and values) stay under
// RedisNodeBytes and it has fewer than RedisNodeEntries entries; else it
// starts a node, allocating at most 4096 bytes up front, and shrinks the
// old one to fit. Every allocation is rounded up to the allocator's size
// class (jemalloc's: four per doubling). A node costs its listpack plus
// RedisNodeOverheadBytes, a stream RedisStreamOverheadBytes more.
func (c *StoreConfig) RedisStreamCost(payload int) RedisStreamCost {
	msg := int64(MessageBytes(payload))
	e := int64(c.RedisEntryOverheadBytes)
	r := RedisStreamCost{
		entry: msg + e, raw: msg + 1,
		result: ResultBytes + e + redisResultFieldsBytes, resultRaw: ResultBytes + 3,
		node: int64(c.RedisNodeBytes), over: int64(c.RedisNodeOverheadBytes), entries: int64(c.RedisNodeEntries),
		stream: int64(c.RedisStreamOverheadBytes),
	}
	r.open = sizeClass(min(r.node, redisPreallocBytes)) + r.over
	lp, n := int64(redisNodeHeadBytes+redisEmptyEntry), int64(1)
	for r.fits(lp, n, r.raw) {
		lp, n, r.First = lp+r.entry, n+1, r.First+1
	}
	lp, r.PerNode = redisNodeHeadBytes+r.entry, 1
	for r.fits(lp, r.PerNode, r.raw) {
		lp, r.PerNode = lp+r.entry, r.PerNode+1
	}
	r.full = sizeClass(lp) + r.over
	return r
}

// fits says whether a node of lp listpack bytes and n entries takes one
// more entry of raw bytes.
func (r *RedisStreamCost) fits(lp, n, raw int64) bool {
	return (r.entries <= 0 || n < r.entries) && lp+raw < r.node
}

// Bytes is what a stream of n progress events takes (no priming event, no
// result); 0 for none.
func (r RedisStreamCost) Bytes(n int64) int64 { return r.Stream(n, false, false) }

// Stream is what a stream takes that holds the priming event (if priming),
// then progress progress events, then the result (if result); 0 for an
// empty one. It runs for every stream at every step of a simulation, so it
// is arithmetic only.
func (r *RedisStreamCost) Stream(progress int64, priming, result bool) int64 {
	var nodes, closed int64
	var lp, n int64 // the newest node's listpack bytes and entries
	m := max(progress, 0)
	if priming {
		k := min(m, r.First)
		nodes, lp, n, m = 1, redisNodeHeadBytes+redisEmptyEntry+k*r.entry, 1+k, m-k
	}
	if m > 0 {
		if nodes > 0 {
			closed += sizeClass(lp) + r.over // the first node, full and shrunk to fit
		}
		// Nodes of PerNode progress events: all full but the newest.
		rest := (m - 1) / r.PerNode
		n = m - rest*r.PerNode
		nodes, closed, lp = nodes+rest+1, closed+rest*r.full, redisNodeHeadBytes+n*r.entry
	}
	if result {
		switch {
		case nodes > 0 && r.fits(lp, n, r.resultRaw):
			lp += r.result
		default: // a node of its own
			if nodes > 0 {
				closed += sizeClass(lp) + r.over
			}
			nodes, lp = nodes+1, redisNodeHeadBytes+r.result
		}
	}
	if nodes == 0 {
		return 0
	}
	b := r.stream + closed + max(r.open, sizeClass(lp)+r.over)
	if nodes > 1 {
		b += redisIndexBytes
	}
	return b
}

// sizeClass is the allocation jemalloc makes for n bytes: four size classes
// per doubling above 128 bytes (a stream node is never smaller), multiples
// of 16 below.
func sizeClass(n int64) int64 {
	if n <= 128 {
		return max((n+15)/16*16, 8)
	}
	spacing := int64(1) << (bits.Len64(uint64(n-1)) - 3)
	return (n + spacing - 1) / spacing * spacing
}

// ReplayLatency is the store's service time for a replay of n events.
func (c *StoreConfig) ReplayLatency(events string, n int) time.Duration {
	switch events {
	case EventsMemory:
		return c.MemoryLatency
	case EventsRedis:
		return c.RedisLatency + time.Duration(n)*c.RedisLatencyPerEvent
	}
	return 0
}

// AppendCeiling is the most single-event appends per second the Redis
// model serves: Concurrency servers, each busy ServiceBase +
// ServicePerEvent per append. 0 when the model gives Redis no cost
// (Concurrency 0 or no service time), so it never saturates.
func (c *StoreConfig) AppendCeiling() float64 {
	perOp := c.ServiceBase + c.ServicePerEvent
	if c.Concurrency <= 0 || perOp <= 0 {
		return 0
	}
	return float64(c.Concurrency) * float64(time.Second) / float64(perOp)
}

// Validate lists every problem with c; each error names its key.
func (c *StoreConfig) Validate() []error {
	var errs []error
	neg := func(key string, bad bool, v any) {
		if bad {
			errs = append(errs, fmt.Errorf("%s: %v is negative", key, v))
		}
	}
	neg("memory_cap_bytes", c.MemoryCapBytes < 0, c.MemoryCapBytes)
	neg("memory_overhead_bytes", c.MemoryOverheadBytes < 0, c.MemoryOverheadBytes)
	neg("redis_maxlen", c.RedisMaxLen < 0, c.RedisMaxLen)
	neg("redis_ttl", c.RedisTTL < 0, c.RedisTTL)
	neg("redis_entry_overhead_bytes", c.RedisEntryOverheadBytes < 0, c.RedisEntryOverheadBytes)
	neg("redis_node_overhead_bytes", c.RedisNodeOverheadBytes < 0, c.RedisNodeOverheadBytes)
	neg("redis_stream_overhead_bytes", c.RedisStreamOverheadBytes < 0, c.RedisStreamOverheadBytes)
	neg("redis_node_entries", c.RedisNodeEntries < 0, c.RedisNodeEntries)
	neg("memory_latency", c.MemoryLatency < 0, c.MemoryLatency)
	neg("redis_latency", c.RedisLatency < 0, c.RedisLatency)
	neg("redis_latency_per_event", c.RedisLatencyPerEvent < 0, c.RedisLatencyPerEvent)
	neg("concurrency", c.Concurrency < 0, c.Concurrency)
	neg("service_base", c.ServiceBase < 0, c.ServiceBase)
	neg("service_per_event", c.ServicePerEvent < 0, c.ServicePerEvent)
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: %v must be positive", c.Timeout))
	}
	if c.RedisNodeBytes <= 0 {
		errs = append(errs, fmt.Errorf("redis_node_bytes: %v must be positive", c.RedisNodeBytes))
	}
	return errs
}

// Drain-close modes: when a draining replica closes its SSE streams.
const (
	DrainCloseAuto  = "auto"  // at the start when sessions are shared (the stream resumes elsewhere), else at exit
	DrainCloseStart = "start" // at once, with a retry hint; the calls keep running into the store
	DrainCloseExit  = "exit"  // when the call ends or the drain limit passes
)

// ReplicaConfig is how a replica accepts work, drains, and ends orphaned
// calls, with the storm mitigations teams use.
type ReplicaConfig struct {
	DrainLimit  time.Duration `toml:"drain_limit" json:"drain_limit"`
	DrainClose  string        `toml:"drain_close" json:"drain_close"`
	RetryHint   time.Duration `toml:"retry_hint" json:"retry_hint"`
	OrphanLease time.Duration `toml:"orphan_lease" json:"orphan_lease"`

	// AcceptRate is how many requests per second a replica serves; beyond
	// it requests queue, and beyond AcceptQueue waiting ones get 503.
	// 0 = unlimited.
	AcceptRate  float64 `toml:"accept_rate" json:"accept_rate"`
	AcceptQueue int     `toml:"accept_queue" json:"accept_queue"`
	// RetryHintSpread multiplies every retry hint by U(lo, hi), GitLab's
	// fix; [1, 1] sends the same hint to everyone.
	RetryHintSpread [2]float64 `toml:"retry_hint_spread" json:"retry_hint_spread"`
	// HintOn503 adds the retry hint (as Retry-After) to a 503 for overload.
	HintOn503 bool `toml:"hint_on_503" json:"hint_on_503"`
	// AdmitBucket admits at most this many new connections per
	// AdmitInterval, and tells the rest (and the streams a drain closes)
	// which later interval to come back in. 0 = off.
	AdmitBucket   int           `toml:"admit_bucket" json:"admit_bucket"`
	AdmitInterval time.Duration `toml:"admit_interval" json:"admit_interval"`
	// MaxConnRate caps new connections per second (a token bucket with one
	// second of burst); the excess gets 503. 0 = off.
	MaxConnRate float64 `toml:"max_conn_rate" json:"max_conn_rate"`

	// The open-loop request workload's server (protocol/requests.go):
	// Workers serve one request each for ServiceTime (fixed, or exponential
	// with that mean under ServiceDist "exp"); RequestQueue bounds the
	// requests waiting for a worker (0 = unbounded). ShedAfter drops a
	// request that waited longer when a worker reaches it (0 = never);
	// RetryBudget and RetryBudgetMin are a retry budget as Finagle's: over
	// the last 10 s at most RetryBudget × first attempts + 10 s ×
	// RetryBudgetMin retries get in (RetryBudget 0 = no budget).
	// HandshakeTime is the service of a closed-loop client's handshake, its
	// first request on a new connection (a TLS negotiation), drawn as
	// ServiceTime's; 0 = no handshake.
	Workers        int           `toml:"workers" json:"workers,omitempty"`
	ServiceTime    time.Duration `toml:"service_time" json:"service_time,omitempty"`
	ServiceDist    string        `toml:"service_dist" json:"service_dist,omitempty"`
	RequestQueue   int           `toml:"request_queue" json:"request_queue,omitempty"`
	ShedAfter      time.Duration `toml:"shed_after" json:"shed_after,omitempty"`
	RetryBudget    float64       `toml:"retry_budget" json:"retry_budget,omitempty"`
	RetryBudgetMin float64       `toml:"retry_budget_min" json:"retry_budget_min,omitempty"`
	HandshakeTime  time.Duration `toml:"handshake_time" json:"handshake_time,omitempty"`
}

// Service-time distributions of the request workload's workers.
const (
	ServiceFixed = "fixed"
	ServiceExp   = "exp"
)

// ServiceDists lists the valid service_dist values.
var ServiceDists = []string{ServiceFixed, ServiceExp}

// DefaultReplica are the replica defaults.
var DefaultReplica = ReplicaConfig{
	DrainLimit:      120 * time.Second,
	DrainClose:      DrainCloseAuto,
	RetryHint:       time.Second,
	OrphanLease:     5 * time.Second,
	AcceptQueue:     1000,
	RetryHintSpread: [2]float64{1, 1},
	AdmitInterval:   time.Second,
}

// Validate lists every problem with c; each error names its key.
func (c *ReplicaConfig) Validate() []error {
	var errs []error
	if c.DrainLimit < 0 {
		errs = append(errs, fmt.Errorf("drain_limit: %v is negative", c.DrainLimit))
	}
	if v := []string{DrainCloseAuto, DrainCloseStart, DrainCloseExit}; !slices.Contains(v, c.DrainClose) {
		errs = append(errs, fmt.Errorf("drain_close: %q is not one of %v", c.DrainClose, v))
	}
	if c.RetryHint < 0 {
		errs = append(errs, fmt.Errorf("retry_hint: %v is negative", c.RetryHint))
	}
	if c.OrphanLease < 0 {
		errs = append(errs, fmt.Errorf("orphan_lease: %v is negative", c.OrphanLease))
	}
	if c.AcceptRate < 0 {
		errs = append(errs, fmt.Errorf("accept_rate: %v is negative", c.AcceptRate))
	}
	if c.AcceptQueue < 0 {
		errs = append(errs, fmt.Errorf("accept_queue: %d is negative", c.AcceptQueue))
	}
	if s := c.RetryHintSpread; s[0] < 0 || s[1] < s[0] {
		errs = append(errs, fmt.Errorf("retry_hint_spread: %v is not [lo, hi] with 0 ≤ lo ≤ hi", s))
	} else if s[1] == 0 {
		errs = append(errs, fmt.Errorf("retry_hint_spread: %v would send every client a hint of 0: use [1, 1] to send retry_hint itself", s))
	}
	if c.AdmitBucket < 0 {
		errs = append(errs, fmt.Errorf("admit_bucket: %d is negative", c.AdmitBucket))
	}
	if c.AdmitBucket > 0 && c.AdmitInterval <= 0 {
		errs = append(errs, fmt.Errorf("admit_interval: %v must be positive when admit_bucket is set", c.AdmitInterval))
	}
	if c.MaxConnRate < 0 {
		errs = append(errs, fmt.Errorf("max_conn_rate: %v is negative", c.MaxConnRate))
	}
	return append(errs, c.validateRequests()...)
}

// validateRequests checks the keys of the request workload's server.
func (c *ReplicaConfig) validateRequests() []error {
	var errs []error
	if c.Workers < 0 || c.Workers > 1_000_000 {
		errs = append(errs, fmt.Errorf("workers: %d is not in 0..1000000", c.Workers))
	}
	if c.ServiceTime < 0 {
		errs = append(errs, fmt.Errorf("service_time: %v is negative", c.ServiceTime))
	}
	if c.HandshakeTime < 0 {
		errs = append(errs, fmt.Errorf("handshake_time: %v is negative (0: no handshake)", c.HandshakeTime))
	}
	if c.ServiceDist != "" && !slices.Contains(ServiceDists, c.ServiceDist) {
		errs = append(errs, fmt.Errorf("service_dist: %q is not one of %v", c.ServiceDist, ServiceDists))
	}
	if c.RequestQueue < 0 {
		errs = append(errs, fmt.Errorf("request_queue: %d is negative (0: unbounded)", c.RequestQueue))
	}
	if c.ShedAfter < 0 {
		errs = append(errs, fmt.Errorf("shed_after: %v is negative (0: never shed)", c.ShedAfter))
	}
	if c.RetryBudget < 0 || c.RetryBudget > 100 {
		errs = append(errs, fmt.Errorf("retry_budget: %v is not in 0..100 (retries per first attempt)", c.RetryBudget))
	}
	if c.RetryBudgetMin < 0 {
		errs = append(errs, fmt.Errorf("retry_budget_min: %v is negative", c.RetryBudgetMin))
	}
	if c.RetryBudgetMin > 0 && c.RetryBudget == 0 {
		errs = append(errs, fmt.Errorf("retry_budget_min: %v is set but retry_budget is 0 (no budget)", c.RetryBudgetMin))
	}
	return errs
}
