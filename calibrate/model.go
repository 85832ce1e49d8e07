package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/BurntSushi/toml"
)

// storeTable is the [store] table of a store-model file: the
// topology.StoreConfig keys a calibration sets, with the same names.
type storeTable struct {
	RedisLatency         time.Duration `toml:"redis_latency"`
	RedisLatencyPerEvent time.Duration `toml:"redis_latency_per_event"`
	Concurrency          int           `toml:"concurrency"`
	ServiceBase          time.Duration `toml:"service_base"`
	ServicePerEvent      time.Duration `toml:"service_per_event"`
	// The Redis stream node model; the tags are topology.StoreConfig's.
	RedisNodeBytes           int `toml:"redis_node_bytes"`
	RedisNodeEntries         int `toml:"redis_node_entries"`
	RedisEntryOverheadBytes  int `toml:"redis_entry_overhead_bytes"`
	RedisNodeOverheadBytes   int `toml:"redis_node_overhead_bytes"`
	RedisStreamOverheadBytes int `toml:"redis_stream_overhead_bytes"`
}

// sourceTable is the [source] table: where the figures came from, and the
// raw measurements. The scenario loader does not read it.
type sourceTable struct {
	Date         time.Time     `toml:"date"`
	Command      string        `toml:"command"`
	RedisVersion string        `toml:"redis_version"`
	RedisOS      string        `toml:"redis_os"`
	HostCPUs     int           `toml:"host_cpus"`
	HostCPUModel string        `toml:"host_cpu_model"`
	GoVersion    string        `toml:"go"`
	EventBytes   int           `toml:"event_bytes"`
	ReplayEvents int           `toml:"replay_events"`
	Pipeline     int           `toml:"pipeline"`
	Elapsed      time.Duration `toml:"elapsed"`
	// The derivation's inputs: what one pipelined append and one replay of
	// replay_events events cost Redis, and how that was measured.
	AppendCost time.Duration `toml:"append_cost"`
	ReplayCost time.Duration `toml:"replay_cost"`
	CostFrom   string        `toml:"cost_from"`

	AppendLatency latencyTable `toml:"append_latency"`
	ReplayFit     fitTable     `toml:"replay_fit"`
	Memory        memoryTable  `toml:"memory"`
	Steps         []stepTable  `toml:"steps"`
}

type latencyTable struct {
	P50     time.Duration `toml:"p50"`
	P90     time.Duration `toml:"p90"`
	P99     time.Duration `toml:"p99"`
	Samples int           `toml:"samples"`
}

type fitTable struct {
	Lengths []int           `toml:"lengths"`
	P50     []time.Duration `toml:"p50"`
	A       time.Duration   `toml:"a"`
	B       time.Duration   `toml:"b"`
}

// memoryTable is [source.memory]: the node configuration and where it came
// from, the message size, MEMORY USAGE and the node count of one stream at
// 1 event and at every event where either changed, the per-node figures
// read from them, and what the derived [store] model gives at the same
// event counts, with its largest difference at any count measured.
type memoryTable struct {
	NodeBytes     int     `toml:"stream_node_max_bytes"`
	NodeEntries   int     `toml:"stream_node_max_entries"`
	ConfigFrom    string  `toml:"config_from"`
	MessageBytes  int     `toml:"message_bytes"`
	Events        []int   `toml:"events"`
	Bytes         []int64 `toml:"memory_usage"`
	Nodes         []int   `toml:"nodes"`
	EventsPerNode int     `toml:"events_per_node"`
	NodeStep      int64   `toml:"node_step_bytes"`
	OneNode       int64   `toml:"one_event_bytes"`
	EntryFit      []int   `toml:"entry_overhead_bytes_fit"`
	ModelBytes    []int64 `toml:"model_bytes"`
	MaxError      int64   `toml:"model_max_error_bytes"`
}

type stepTable struct {
	Concurrency      int           `toml:"concurrency"`
	AppendOpsPerS    int64         `toml:"append_ops_per_s"`
	AppendCPU        time.Duration `toml:"append_redis_cpu"`
	PipelinedOpsPerS int64         `toml:"append_pipelined_ops_per_s"`
	PipelinedCPU     time.Duration `toml:"append_pipelined_redis_cpu"`
	ReplayOpsPerS    int64         `toml:"replay_ops_per_s"`
	ReplayCPU        time.Duration `toml:"replay_redis_cpu"`
	AppendLatency    latencyTable  `toml:"append_latency"`
	ReplayLatency    latencyTable  `toml:"replay_latency"`
}

type modelFile struct {
	Store  storeTable  `toml:"store"`
	Source sourceTable `toml:"source"`
}

const modelHeader = `# A store model for stormsim, measured by 'stormsim calibrate'.
# [store] holds topology.StoreConfig keys; a scenario includes them with
#   store_model = "%s"
# in [defaults], [scenario.NAME] or [design.NAME] (a path relative to the
# scenarios file), under that block's own [store] keys. [source] says where
# the figures came from; the scenario loader does not read it.

`

// Model encodes r as a store-model file. command is the command line that
// made it (with any password already removed); include is the path
// scenarios use to include it, for the header comment.
func (r *Result) Model(command, include string) ([]byte, error) {
	s := r.Store
	f := modelFile{
		Store: r.storeTable(),
		Source: sourceTable{
			Date: r.Started.UTC().Truncate(time.Second), Command: command,
			RedisVersion: r.RedisVersion, RedisOS: r.RedisOS, HostCPUs: r.HostCPUs, HostCPUModel: r.HostCPUModel,
			GoVersion:  runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
			EventBytes: r.EventBytes, ReplayEvents: r.ReplayEvents, Pipeline: r.Pipeline,
			Elapsed:    r.Elapsed.Round(100 * time.Millisecond),
			AppendCost: Sig3(r.AppendCost), ReplayCost: Sig3(r.ReplayCost), CostFrom: r.CostFrom,
			AppendLatency: latTable(r.Append),
			ReplayFit:     fitTable{Lengths: r.Replay.Lengths, A: Sig3(r.Replay.A), B: Sig3(r.Replay.B)},
			Memory: memoryTable{NodeBytes: r.Memory.NodeBytes, NodeEntries: r.Memory.NodeEntries, ConfigFrom: r.Memory.ConfigFrom,
				MessageBytes: r.Memory.MessageBytes, Events: r.Memory.Events, Bytes: r.Memory.Bytes,
				Nodes: r.Memory.Nodes, EventsPerNode: r.Memory.PerNode, NodeStep: r.Memory.NodeStep, OneNode: r.Memory.OneNode,
				EntryFit: r.Memory.EntryFit, MaxError: r.Memory.MaxError},
		},
	}
	cost := s.RedisStreamCost(r.EventBytes)
	for _, n := range r.Memory.Events {
		f.Source.Memory.ModelBytes = append(f.Source.Memory.ModelBytes, cost.Bytes(int64(n)))
	}
	for _, p := range r.Replay.P50 {
		f.Source.ReplayFit.P50 = append(f.Source.ReplayFit.P50, Sig3(p))
	}
	for _, st := range r.Steps {
		f.Source.Steps = append(f.Source.Steps, stepTable{
			Concurrency: st.Concurrency, AppendOpsPerS: int64(math.Round(st.AppendOpsPerS)), AppendCPU: Sig3(st.AppendCPU),
			PipelinedOpsPerS: int64(math.Round(st.PipelinedOpsPerS)), PipelinedCPU: Sig3(st.PipelinedCPU),
			ReplayOpsPerS: int64(math.Round(st.ReplayOpsPerS)), ReplayCPU: Sig3(st.ReplayCPU),
			AppendLatency: latTable(st.Append), ReplayLatency: latTable(st.Replay),
		})
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, modelHeader, include)
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("calibrate: encoding the model: %w", err)
	}
	return b.Bytes(), nil
}

// storeTable is the [store] table of r's model: the keys StoreKeys names.
func (r *Result) storeTable() storeTable {
	s := &r.Store
	return storeTable{
		RedisLatency: s.RedisLatency, RedisLatencyPerEvent: s.RedisLatencyPerEvent, Concurrency: s.Concurrency,
		ServiceBase: s.ServiceBase, ServicePerEvent: s.ServicePerEvent,
		RedisNodeBytes: s.RedisNodeBytes, RedisNodeEntries: s.RedisNodeEntries,
		RedisEntryOverheadBytes: s.RedisEntryOverheadBytes, RedisNodeOverheadBytes: s.RedisNodeOverheadBytes,
		RedisStreamOverheadBytes: s.RedisStreamOverheadBytes,
	}
}

// StoreTOML is the [store] table of r's model as the model file holds it,
// for printing.
func (r *Result) StoreTOML() ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(struct {
		Store storeTable `toml:"store"`
	}{r.storeTable()}); err != nil {
		return nil, fmt.Errorf("calibrate: encoding the model: %w", err)
	}
	return b.Bytes(), nil
}

func latTable(l Latency) latencyTable {
	return latencyTable{P50: Sig3(l.P50), P90: Sig3(l.P90), P99: Sig3(l.P99), Samples: l.Samples}
}
