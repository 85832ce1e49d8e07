// Package scenario loads scenarios.toml into plain Scenario values that both
// engines run. Loading is strict: an unknown key, a bad value or an
// impossible fault is an error that names the file, the key path and the
// problem, and every problem is reported at once.
//
// Settings are inherited in layers: built-in defaults, then [defaults], then
// [scenario.NAME], then --set overrides, then the design's own client.*,
// store.* and replica.* keys. A design's lb wins over the scenario's unless
// it says lb = "scenario".
//
//	f, err := scenario.Load("scenarios.toml", nil)
//	sc, err := f.Scenario("deploy-restart")
package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/topology"
)

// Scenario is one fully resolved scenario: plain data, no defaults left to apply.
type Scenario struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Seed        uint64         `json:"seed"`
	Duration    time.Duration  `json:"duration"`
	Drain       time.Duration  `json:"drain"`
	Step        time.Duration  `json:"step"`
	Replicas    int            `json:"replicas"`
	LB          string         `json:"lb"`
	Era         string         `json:"era"`
	RTT         time.Duration  `json:"rtt"`
	Workload    Workload       `json:"workload"`
	Faults      []faults.Fault `json:"faults"`
	Designs     []Design       `json:"designs"`
	// Expect holds the thresholds a run must meet; not part of the
	// scenario's hash, since they judge a run rather than shape it.
	Expect []Check `json:"-"`
	// ExpectSeeds, when above 1, makes Expect judge the mean of each
	// metric over that many seeds (seed, seed+1, ...) instead of one run:
	// for values that spread too widely between seeds for a useful bound
	// on any one of them. A run of the scenario runs that many seeds.
	ExpectSeeds int `json:"-"`
	// Goals are the service goals `stormsim plan` judges designs by, over
	// its defaults ([scenario.NAME.goals]); not part of the scenario's
	// hash, and never judged by `stormsim run`.
	Goals []Check `json:"-"`
	// Orderings are claims that one design's metric is lower than
	// others': a run over several seeds reports how often each holds.
	Orderings []Ordering `json:"-"`
	// Nightly says how stormsim nightly runs the scenario; the zero value
	// is the simulator, one seed.
	Nightly Nightly `json:"-"`
	// Agreement holds the tolerances of --engine both, by AgreementKeys
	// name; the defaults apply to the keys it lacks.
	Agreement map[string]float64 `json:"-"`
	// Isolation says whether the live engine sends isolation probes. Not
	// part of the scenario's hash: the probes judge a run and are kept out
	// of every metric it reports.
	Isolation Isolation `json:"-"`
	// Limits bound what the live engine's clients take from a server. Not
	// part of the scenario's hash: the simulator's server sends nothing
	// near them.
	Limits Limits `json:"-"`
	// HealthCheck is the active health check of `stormsim up`'s load
	// balancer. Not part of the scenario's hash: scenario runs do not use
	// it (their LB learns of a death as lb-health-delay says, as the
	// simulator models it).
	HealthCheck HealthCheck `json:"-"`
	// Warnings are settings that load but are probably not what was meant
	// (each names the file and key); the engines copy them into the
	// report's notes. Not part of the scenario's hash.
	Warnings []Warning `json:"-"`
}

// Warning is one setting that loads but probably does not mean what it
// says: Text names the file and key; Design is the design it concerns, ""
// for the scenario as a whole.
type Warning struct {
	Design string
	Text   string
}

// WarningTexts are the warnings that concern the scenario as a whole or one
// of the designs named (every design when names is nil).
func (s *Scenario) WarningTexts(names []string) []string {
	var out []string
	for _, w := range s.Warnings {
		if w.Design == "" || names == nil || slices.Contains(names, w.Design) {
			out = append(out, w.Text)
		}
	}
	return out
}

// Ordering claims that design Lower has a lower Metric than each design in
// Than. A claim about designs is a claim about seeds: a run over several
// seeds says in how many it held ([[scenario.NAME.orderings]]).
type Ordering struct {
	Metric string   `toml:"metric" json:"metric"`
	Lower  string   `toml:"lower" json:"lower"`
	Than   []string `toml:"than" json:"than"`
}

// Check is one threshold: Metric of Design (every design when empty) must be
// at most (Op "max") or at least (Op "min") Bound. A metric with no value
// (a latency with no samples) fails unless AllowEmpty.
type Check struct {
	Design     string  `json:"design,omitempty"`
	Metric     string  `json:"metric"`
	Op         string  `json:"op"`
	Bound      float64 `json:"bound"`
	AllowEmpty bool    `json:"allow_empty,omitempty"`
}

// FaultContext is what the faults need to know about s.
func (s *Scenario) FaultContext() faults.Context {
	return faults.Context{Replicas: s.Replicas, Duration: s.Duration}
}

// Select returns the designs named, in the scenario's order; nil names
// means every design. A name the scenario does not run is an error that
// lists the ones it does.
func (s *Scenario) Select(names []string) ([]*Design, error) {
	var out []*Design
	for i := range s.Designs {
		if names == nil || slices.Contains(names, s.Designs[i].Name) {
			out = append(out, &s.Designs[i])
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(s.Designs, func(d Design) bool { return d.Name == n }) {
			var valid []string
			for _, d := range s.Designs {
				valid = append(valid, d.Name)
			}
			return nil, fmt.Errorf("scenario %s has no design %q (it runs: %v)", s.Name, n, valid)
		}
	}
	return out, nil
}

// Design is one row of the comparison: a server design with the client,
// store and replica settings it runs with.
type Design struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Mode        string `json:"mode"`
	Sessions    string `json:"sessions"`
	Events      string `json:"events"`
	LB          string `json:"lb"` // the policy actually used
	Era         string `json:"era"`
	// Server is the replica flavour the live engine runs: "" for stormsim's
	// reference replica, or "go-sdk" for the official go-sdk's handler. The
	// simulator models both alike.
	Server string `json:"server,omitempty"`
	// Own is a server the user brings ([server] as a table), which the
	// live engine runs or reaches instead of Server; nil for none.
	Own     *OwnServer             `json:"own_server,omitempty"`
	Client  clients.Config         `json:"client"`
	Store   topology.StoreConfig   `json:"store"`
	Replica topology.ReplicaConfig `json:"replica"`
}

// Isolation is [scenario.NAME.isolation]: the live engine's isolation
// probes, a few extra sessions that present other sessions' event ids
// (and forged ones) as Last-Event-ID and report any event of another
// session they are sent (events_leaked).
type Isolation struct {
	// Probes turns the probes on or off; nil means the default: on for
	// stormsim's replicas and a server.command, off for a server.url
	// (--target), where the probes would send forged ids to a deployment
	// stormsim does not control.
	Probes *bool `toml:"probes" json:"probes,omitempty"`
}

// Limits is [scenario.NAME.limits]: the most the live engine's clients
// take from the server they storm, whatever it sends, so that the load
// generator's memory is bounded by the limits times the clients. A call
// that meets one fails, its cause naming the limit, and the design's
// notes count each limit hit. Every value is in bytes but EventsPerCall.
type Limits struct {
	EventBytes     int `toml:"event_bytes" json:"event_bytes"`           // one SSE event's data
	LineBytes      int `toml:"line_bytes" json:"line_bytes"`             // one line of an SSE stream
	BodyBytes      int `toml:"body_bytes" json:"body_bytes"`             // a response body that is not a stream
	EventsPerCall  int `toml:"events_per_call" json:"events_per_call"`   // events one call receives, over all its streams
	IDBytes        int `toml:"id_bytes" json:"id_bytes"`                 // an SSE event id
	SessionIDBytes int `toml:"session_id_bytes" json:"session_id_bytes"` // an Mcp-Session-Id
}

// DefaultLimits are the limits a scenario does not set: far above what
// a working MCP server sends, low enough that a thousand clients at their
// worst stay within a few GiB.
var DefaultLimits = Limits{
	EventBytes: 4 << 20, LineBytes: 4 << 20, BodyBytes: 4 << 20, EventsPerCall: 100_000, IDBytes: 1 << 10, SessionIDBytes: 1 << 10,
}

// HealthCheck is [scenario.NAME.health_check]: how `stormsim up`'s load
// balancer probes its replicas.
type HealthCheck struct {
	// Interval is the time between two probes of a replica; 0 turns the
	// probes off (the passive checks stay on).
	Interval time.Duration `toml:"interval" json:"interval"`
	// Threshold is how many probes in a row must fail before the LB takes
	// a replica out of its pool; one that succeeds puts it back.
	Threshold int `toml:"threshold" json:"threshold"`
}

// ProbesFor reports whether the live engine probes design d's isolation.
func (s *Scenario) ProbesFor(d *Design) bool {
	if p := s.Isolation.Probes; p != nil {
		return *p
	}
	return d.Own == nil || d.Own.URL == ""
}

// Workload is what the virtual clients do.
type Workload struct {
	Clients              int           `toml:"clients" json:"clients"`
	ArrivalRate          float64       `toml:"arrival_rate" json:"arrival_rate"`
	ArrivalSlope         float64       `toml:"arrival_slope" json:"arrival_slope"`
	CallsPerClient       int           `toml:"calls_per_client" json:"calls_per_client"`
	Think                time.Duration `toml:"think" json:"think"`
	ThinkDist            string        `toml:"think_dist" json:"think_dist"`
	EventsMin            int           `toml:"events_min" json:"events_min"`
	EventsMax            int           `toml:"events_max" json:"events_max"`
	EventsDist           string        `toml:"events_dist" json:"events_dist"`
	EventRate            float64       `toml:"event_rate" json:"event_rate"`
	EventBytes           int           `toml:"event_bytes" json:"event_bytes"`
	DropEvery            time.Duration `toml:"drop_every" json:"drop_every"`
	ContinueAfterFailure bool          `toml:"continue_after_failure" json:"continue_after_failure"`
	// Kind is "sessions" (the default: clients with sessions and calls) or
	// "requests": the open-loop request workload (requests.go).
	Kind string `toml:"kind" json:"kind,omitempty"`
	// NotificationRate is the notification workload: notifications per
	// second the server sends to each listening client (resource updates
	// and list changes). 0 (the default) turns it off. On, every client
	// listens for notifications from its arrival to the end of duration:
	// at 2026-07-28 on a subscriptions/listen stream (protocol/listen.go).
	NotificationRate float64 `toml:"notification_rate" json:"notification_rate,omitempty"`
	// Arrivals spaces the request workload's arrivals: "even" (the
	// default) or "poisson".
	Arrivals string `toml:"arrivals" json:"arrivals,omitempty"`
}

// Distributions of think time and call length.
var (
	ThinkDists  = []string{"fixed", "exp"}
	EventsDists = []string{"fixed", "uniform"}
)

// DefaultDesigns is the default design list: the six designs of docs/domain.md §4.
var DefaultDesigns = []string{"stateless", "nostore", "memory-sticky", "memory-roundrobin", "redis-events", "redis-shared"}

// builtinDesigns are always defined; scenarios.toml may override or add.
var builtinDesigns = map[string]designTop{
	"stateless":         {Description: "no sessions, no store: a dropped call is re-issued whole", Mode: topology.ModeStateless, Sessions: topology.SessionsNone, Events: topology.EventsNone, LB: "scenario"},
	"nostore":           {Description: "local sessions, no event store", Mode: topology.ModeStateful, Sessions: topology.SessionsLocal, Events: topology.EventsNone, LB: "scenario"},
	"memory-sticky":     {Description: "local sessions, in-memory event store, sticky LB", Mode: topology.ModeStateful, Sessions: topology.SessionsLocal, Events: topology.EventsMemory, LB: "sticky"},
	"memory-roundrobin": {Description: "local sessions, in-memory event store, round-robin LB", Mode: topology.ModeStateful, Sessions: topology.SessionsLocal, Events: topology.EventsMemory, LB: "round-robin"},
	"redis-events":      {Description: "local sessions, events in Redis", Mode: topology.ModeStateful, Sessions: topology.SessionsLocal, Events: topology.EventsRedis, LB: "scenario"},
	"redis-shared":      {Description: "sessions and events in Redis, shared by every replica", Mode: topology.ModeStateful, Sessions: topology.SessionsShared, Events: topology.EventsRedis, LB: "scenario"},
}

func builtinTop() top {
	return top{
		Seed: 42, Duration: 300 * time.Second, Drain: 120 * time.Second, Step: time.Second,
		Replicas: 3, LB: "sticky", Era: "2025-11-25", RTT: 20 * time.Millisecond,
		Designs: slices.Clone(DefaultDesigns),
	}
}

func builtinWorkload() Workload {
	return Workload{
		Clients: 1000, ArrivalRate: 100, Think: 2 * time.Second, ThinkDist: "exp",
		EventsMin: 20, EventsMax: 100, EventsDist: "uniform", EventRate: 5, EventBytes: 256,
		ContinueAfterFailure: true,
	}
}

// Nightly is [scenario.NAME.nightly]: the engine stormsim nightly (and
// stormsim baseline) runs the scenario on, and how many seeds (seed,
// seed+1, ...) a live run takes; a live baseline holds every seed's values
// and is compared over them.
type Nightly struct {
	Engine string // "sim" or "live"; "" is "sim"
	Seeds  int    // at least 1; 0 is 1
	// Designs, when set, are the only designs a live nightly run runs
	// (a live run takes real time per design).
	Designs []string
}

// NightlyDesigns are the nightly designs the scenario runs: Nightly.Designs
// without those a --set designs=[...] left out, or nil (every design) when
// none is named. ok is false when designs were named and none is run.
func (s *Scenario) NightlyDesigns() (names []string, ok bool) {
	if len(s.Nightly.Designs) == 0 {
		return nil, true
	}
	for _, n := range s.Nightly.Designs {
		if slices.ContainsFunc(s.Designs, func(d Design) bool { return d.Name == n }) {
			names = append(names, n)
		}
	}
	return names, len(names) > 0
}
