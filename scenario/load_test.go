package scenario

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const minimal = `
[scenario.s]
description = "x"
`

func TestLoadShipped(t *testing.T) {
	t.Parallel()
	f, err := Load("../scenarios.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"steady", "deploy-restart", "crash", "network-blip", "round-robin", "sticky-vs-random",
		"scale-out", "store-outage", "long-outage-eviction", "thundering-herd", "discord-scale-down", "era-2026"}
	for _, n := range want {
		if _, err := f.Scenario(n); err != nil {
			t.Errorf("shipped scenario %s: %v", n, err)
		}
	}
	sc, _ := f.Scenario("deploy-restart")
	if len(sc.Designs) != 6 || sc.Designs[0].Name != "stateless" {
		t.Errorf("deploy-restart runs %d designs, want the six defaults", len(sc.Designs))
	}
	if sc.Workload.EventsMin != 300 || sc.Workload.Clients != 2000 {
		t.Errorf("inheritance: events_min %d clients %d", sc.Workload.EventsMin, sc.Workload.Clients)
	}
}

// Layers: a design's lb wins unless it says "scenario"; a design's client
// keys override the scenario's; a profile fills what is not set.
func TestInheritance(t *testing.T) {
	t.Parallel()
	src := `
[defaults]
lb = "round-robin"
[defaults.client]
base = "2s"
[design.a]
mode = "stateful"
sessions = "local"
events = "memory"
lb = "sticky"
[design.b]
mode = "stateful"
sessions = "local"
events = "memory"
lb = "scenario"
[design.b.client]
profile = "ts-sdk"
[scenario.s]
designs = ["a", "b"]
[scenario.s.client]
max_retries = 9
`
	f, err := Parse("t.toml", []byte(src), &Options{Set: []string{"client.cap=7s"}, Target: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("s")
	a, b := sc.Designs[0], sc.Designs[1]
	if a.LB != "sticky" || b.LB != "round-robin" {
		t.Errorf("lb: a=%s b=%s, want sticky and round-robin", a.LB, b.LB)
	}
	if a.Client.Profile != "compliant" || b.Client.Profile != "ts-sdk" {
		t.Errorf("profiles %s %s", a.Client.Profile, b.Client.Profile)
	}
	if b.Client.Base != 2*time.Second || b.Client.MaxRetries != 9 || b.Client.Cap != 7*time.Second || b.Client.Jitter != "none" {
		t.Errorf("b's client = %+v: want base 2s (defaults), retries 9 (scenario), cap 7s (--set), jitter none (ts-sdk)", b.Client)
	}
}

// Every broken file or flag gets one error naming the file, the key path and
// the problem, and nothing panics.
func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		set  []string
		want []string // substrings of the error
	}{
		// Syntax error: the line is named.
		{"syntax", "[scenario.s\n", nil, []string{"t.toml: line 2", "expected '.' or ']'"}},
		// Unknown top-level key.
		{"unknown top", minimal + "[bogus]\nx = 1\n", nil, []string{"t.toml", "bogus", "unknown key", "valid: defaults, design, scenario"}},
		// Unknown key in a workload, with the valid ones listed.
		{"unknown workload key", minimal + "[scenario.s.workload]\nclientz = 5\n", nil, []string{"t.toml", "scenario.s.workload.clientz", "unknown key", "clients"}},
		{"replaced store key", minimal + "[scenario.s.store]\nredis_bytes_factor = 1.15\n", nil, []string{"t.toml", "scenario.s.store.redis_bytes_factor", "unknown key; Redis memory is modelled node by node now", "redis_node_bytes"}},
		// Wrong type.
		{"wrong type", minimal + "[scenario.s.workload]\nclients = \"many\"\n", nil, []string{"t.toml: line 5: scenario.s.workload.clients", "incompatible types"}},
		// Bad duration.
		{"bad duration", "[scenario.s]\nduration = \"5 minutes\"\n", nil, []string{"t.toml", "scenario.s.duration", "invalid duration"}},
		// Negative duration.
		{"negative duration", "[scenario.s]\nduration = \"-5s\"\n", nil, []string{"t.toml: scenario.s.duration", "must be positive"}},
		// Unknown LB policy.
		{"unknown lb", "[scenario.s]\nlb = \"weighted\"\n", nil, []string{"t.toml: scenario.s.lb", `"weighted"`, "sticky"}},
		// Unknown era.
		{"unknown era", "[defaults]\nera = \"2024-01-01\"\n" + minimal, nil, []string{"t.toml: defaults.era", "2025-11-25"}},
		// Zero clients.
		{"zero clients", minimal + "[scenario.s.workload]\nclients = 0\n", nil, []string{"t.toml: scenario.s.workload.clients", "not in 1.."}},
		// events_max below events_min.
		{"events range", minimal + "[scenario.s.workload]\nevents_min = 10\nevents_max = 5\n", nil, []string{"scenario.s.workload.events_max", "below events_min"}},
		// Unknown design in the list.
		{"unknown design", "[scenario.s]\ndesigns = [\"redis-sharded\"]\n", nil, []string{"t.toml: scenario.s.designs[0]", `"redis-sharded"`, "redis-shared"}},
		// Unknown profile in a design.
		{"unknown profile", "[design.x]\nmode=\"stateful\"\nsessions=\"local\"\nevents=\"memory\"\n[design.x.client]\nprofile = \"java-sdk\"\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.client.profile", "java-sdk", "go-sdk"}},
		// Inconsistent design.
		{"stateless with store", "[design.x]\nmode=\"stateless\"\nsessions=\"none\"\nevents=\"redis\"\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.mode", "stateless"}},
		// The ts-sdk server: sessions in its process, its own in-memory store without a cap.
		{"ts-sdk shared", "[design.x]\nserver=\"ts-sdk\"\nmode=\"stateful\"\nsessions=\"shared\"\nevents=\"redis\"\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.server", "ts-sdk server cannot share sessions", "InMemoryEventStore"}},
		{"ts-sdk cap", "[design.x]\nserver=\"ts-sdk\"\nmode=\"stateful\"\nsessions=\"local\"\nevents=\"memory\"\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.store.memory_cap_bytes", "10485760", "has no cap"}},
		// Unknown fault kind.
		{"unknown fault", minimal + "[[scenario.s.faults]]\nkind = \"meteor\"\nat = \"1s\"\n", nil, []string{"t.toml: scenario.s.faults[0]", `"meteor"`, "crash"}},
		// Fault after the end.
		{"fault after end", "[scenario.s]\nduration = \"60s\"\n[[scenario.s.faults]]\nkind = \"crash\"\nreplica = 0\nat = \"90s\"\n", nil, []string{`t.toml: scenario.s.faults[0]: at: "1m30s" is after the scenario ends (1m0s)`}},
		// Fault on a replica that does not exist.
		{"fault replica", "[scenario.s]\nreplicas = 2\n[[scenario.s.faults]]\nkind = \"restart\"\nreplica = 5\nat = \"1s\"\n", nil, []string{"t.toml: scenario.s.faults[0]: replica: 5 is not a replica"}},
		// A key that belongs to another fault kind.
		{"fault key", minimal + "[[scenario.s.faults]]\nkind = \"client-drop\"\nat = \"1s\"\nfraction = 0.5\nreplica = 1\n", nil, []string{"t.toml: scenario.s.faults[1]"[:0] + "scenario.s.faults[0]: replica: unknown key for kind \"client-drop\""}},
		// Fraction out of range.
		{"fraction", minimal + "[[scenario.s.faults]]\nkind = \"client-drop\"\nat = \"1s\"\nfraction = 1.5\n", nil, []string{"scenario.s.faults[0]: fraction: 1.5 is not in (0, 1]"}},
		// Missing fault kind.
		{"fault kind missing", minimal + "[[scenario.s.faults]]\nat = \"1s\"\n", nil, []string{"scenario.s.faults[0]: kind: missing"}},
		// No scenarios at all.
		{"empty", "[defaults]\nseed = 1\n", nil, []string{"t.toml", "no [scenario.NAME] blocks"}},
		// --set of an unknown key.
		{"set unknown", minimal, []string{"workload.clientz=5"}, []string{"--set", "workload.clientz", "unknown key"}},
		// --set without '='.
		{"set no value", minimal, []string{"workload.clients"}, []string{"--set workload.clients", "want key=value"}},
		// --set with a bad value.
		{"set bad value", minimal, []string{"workload.clients=lots"}, []string{"--set", "workload.clients", "incompatible types"}},
		// --set of a bad duration.
		{"set bad duration", minimal, []string{"duration=soon"}, []string{"--set", "duration", "invalid duration"}},
		// --set of an invalid value that parses.
		{"set invalid value", minimal, []string{"replicas=0"}, []string{"--set replicas", "not in 1..1000"}},
		// Negative client setting from a design.
		{"negative retries", "[design.x]\nmode=\"stateful\"\nsessions=\"local\"\nevents=\"memory\"\n[design.x.client]\nmax_retries = -1\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.client.max_retries", "negative"}},
		{"bad app_reconnect", "[scenario.s.client]\napp_reconnect = \"sometimes\"\n", nil, []string{"t.toml: scenario.s.client.app_reconnect", `"sometimes" is not one of [never on_failure] or a duration`}},
		// A listen_reopen that is neither value, in the file and from --set.
		{"bad listen_reopen", "[scenario.s.client]\nlisten_reopen = \"later\"\n", nil, []string{"t.toml: scenario.s.client.listen_reopen", `"later" is not one of [backoff none]`}},
		{"set bad listen_reopen", minimal, []string{"client.listen_reopen=never"}, []string{"client.listen_reopen", `"never" is not one of [backoff none]`}},
		// A bare number where a duration belongs would be nanoseconds.
		{"bare duration", "[scenario.s]\nduration = 300\n", nil, []string{"t.toml: scenario.s.duration: want a duration string such as \"300s\""}},
		// An unknown nested table is reported at its first unknown key.
		{"nested unknown", minimal + "[scenario.s.foo.bar]\nx = 1\n", nil, []string{"t.toml: scenario.s.foo: unknown key"}},
		// Thresholds must be a table.
		{"expect array", minimal + "[[scenario.s.expect]]\nevents_lost_max = 1\n", nil, []string{"t.toml: scenario.s.expect: want a table of thresholds"}},
		// Goals: a key that is not a bound, a metric that does not exist, a per-design table.
		{"goals unknown key", minimal + "[scenario.s.goals]\nlost_events = 0\n", nil, []string{"t.toml: scenario.s.goals.lost_events", "is not a threshold: want <metric>_max"}},
		{"goals unknown metric", minimal + "[scenario.s.goals]\nlost_max = 0\n", nil, []string{"t.toml: scenario.s.goals.lost_max", `"lost" is not a metric`}},
		{"goals design table", minimal + "[scenario.s.goals.memory-sticky]\nrate_404_max = 0\n", nil, []string{"t.toml: scenario.s.goals.memory-sticky", "a goal holds for every design"}},
		{"goals not a table", "[scenario.s]\ngoals = 1\n", nil, []string{"t.toml: scenario.s.goals: want a table of goals"}},
		// A name that would escape the results folder.
		{"bad name", "[scenario.\"../x\"]\n", nil, []string{`"../x" is not a valid scenario or design name`}},
		// A negative seed.
		{"negative seed", "[scenario.s]\nseed = -1\n", nil, []string{"t.toml: scenario.s.seed: -1 is negative"}},
		// A design no scenario uses is still checked.
		{"unused design", minimal + "[design.x]\nmode = \"bogus\"\nsessions = \"local\"\nevents = \"memory\"\n", nil, []string{"t.toml: design.x.mode: \"bogus\" is not one of"}},
		// --set cannot change the fault schedule or the thresholds.
		{"set faults", minimal, []string{"faults=[]"}, []string{"--set: faults: unknown key"}},
		// A retry hint spread of [0, 0] would hint 0.
		{"zero spread", minimal + "[scenario.s.replica]\nretry_hint_spread = [0.0, 0.0]\n", nil, []string{"t.toml: scenario.s.replica.retry_hint_spread", "hint of 0"}},
		// Admission keys for servers stormsim does not write: refused, by key.
		{"admission go-sdk", "[design.x]\nserver=\"go-sdk\"\nmode=\"stateful\"\nsessions=\"local\"\nevents=\"memory\"\n[design.x.replica]\nadmit_bucket = 10\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.replica.admit_bucket", "go-sdk server does no admission control"}},
		{"admission ts-sdk", "[design.x]\nserver=\"ts-sdk\"\nmode=\"stateful\"\nsessions=\"local\"\nevents=\"memory\"\n[design.x.store]\nmemory_cap_bytes = 0\n[scenario.s]\ndesigns=[\"x\"]\n[scenario.s.replica]\naccept_rate = 100.0\n", nil, []string{"t.toml: scenario.s.replica.accept_rate", "ts-sdk server does no admission control"}},
		{"admission own", "[design.x]\nmode=\"stateful\"\nsessions=\"local\"\nevents=\"memory\"\nserver.url=\"http://127.0.0.1:1/mcp\"\n[design.x.replica]\nhint_on_503 = true\nmax_conn_rate = 5.0\n[scenario.s]\ndesigns=[\"x\"]\n", nil, []string{"t.toml: design.x.replica.hint_on_503", "t.toml: design.x.replica.max_conn_rate", "a server you bring does no admission control"}},
		// Closed-loop clients belong to the request workload; the reconnect
		// trigger and the handshake need them.
		{"closed sessions", minimal + "[scenario.s.workload]\narrivals = \"closed\"\n", nil, []string{"t.toml: scenario.s.workload.arrivals", `"closed": closed-loop clients are a mode of workload.kind = "requests"`}},
		{"reconnect open-loop", "[scenario.s]\nreplicas = 1\n[scenario.s.workload]\nkind = \"requests\"\n[scenario.s.replica]\nworkers = 1\nservice_time = \"10ms\"\nhandshake_time = \"20ms\"\n[[scenario.s.faults]]\nkind = \"reconnect\"\nat = \"1s\"\n", nil, []string{`t.toml: scenario.s.faults[0]: kind: "reconnect" drops the connections of closed-loop clients: it needs workload.arrivals = "closed"`, "t.toml: scenario.s.replica.handshake_time", "only closed-loop clients hold connections"}},
		// Bad drain_close.
		{"drain close", minimal + "[scenario.s.replica]\ndrain_close = \"never\"\n", nil, []string{"t.toml: scenario.s.replica.drain_close", `"never"`}},
	}
	if len(cases) < 15 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("t.toml", []byte(c.src), &Options{Set: c.set, Target: "s"})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// Every problem in a file is reported at once.
func TestAllErrorsReported(t *testing.T) {
	t.Parallel()
	src := "[scenario.s]\nreplicas = 0\nlb = \"x\"\n[scenario.s.workload]\nclients = 0\n"
	_, err := Parse("t.toml", []byte(src), nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"replicas", "lb", "workload.clients"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %s in %v", w, err)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load("does-not-exist.toml", nil)
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.toml") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzLoadScenario(f *testing.F) {
	shipped, err := os.ReadFile("../scenarios.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(shipped), "workload.clients=5")
	f.Add(minimal, "seed=3")
	f.Add("[scenario.s]\n[[scenario.s.faults]]\nkind=\"crash\"\nat=\"1s\"\n", "replicas=2")
	f.Add("[scenario.s]\ndesigns=[]\n", "x")
	f.Fuzz(func(t *testing.T, src, set string) {
		file, err := Parse("fuzz.toml", []byte(src), &Options{Set: []string{set}, Target: "s"})
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.toml") && !strings.Contains(err.Error(), "--set") {
				t.Fatalf("error does not name the file or flag: %v", err)
			}
			return
		}
		for _, n := range file.Names() {
			sc, err := file.Scenario(n)
			if err != nil || sc.Duration <= 0 || sc.Replicas < 1 || len(sc.Designs) == 0 {
				t.Fatalf("accepted an invalid scenario %s: %+v %v", n, sc, err)
			}
		}
	})
}

// The key table of docs/reference.md documents every key the loader accepts.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range validKeys([]string{"scenario", "x"}, false) {
		if k == "workload" || k == "client" || k == "store" || k == "replica" || k == "isolation" || k == "health_check" || k == "limits" {
			for _, sub := range validKeys([]string{"scenario", "x", k}, false) {
				if !strings.Contains(string(readme), "`"+k+"."+sub+"`") {
					t.Errorf("docs/reference.md does not document `%s.%s`", k, sub)
				}
			}
			continue
		}
		if !strings.Contains(string(readme), "`"+k+"`") {
			t.Errorf("docs/reference.md does not document `%s`", k)
		}
	}
}

// writeFiles writes name → content into a new folder and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if i := strings.LastIndex(name, "/"); i > 0 {
			if err := os.MkdirAll(dir+"/"+name[:i], 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(dir+"/"+name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	modelA = `# written by stormsim calibrate
[store]
redis_latency = "50µs"
redis_latency_per_event = "2µs"
concurrency = 1
service_base = "3µs"
service_per_event = "600ns"
redis_node_overhead_bytes = 600
redis_stream_overhead_bytes = 40

[source]
date = 2026-11-30T12:00:00Z
redis_version = "7.0.15"
[[source.steps]]
concurrency = 1
`
	modelB = `[store]
redis_latency = "70µs"
service_per_event = "700ns"
`
)

// store_model includes a calibrated store model as a layer under its
// block's own [store] keys, in [defaults], [scenario.NAME] and
// [design.NAME], with the path relative to the scenarios file.
func TestStoreModel(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"calibrated/redis.toml": modelA,
		"calibrated/b.toml":     modelB,
		"scenarios.toml": `
[defaults]
store_model = "calibrated/redis.toml"
[design.cal]
mode = "stateful"
sessions = "shared"
events = "redis"
store_model = "calibrated/b.toml"
[design.cal.store]
service_base = "9µs"
[scenario.s]
designs = ["redis-events", "cal"]
[scenario.s.store]
redis_latency_per_event = "4µs"
[scenario.u]
designs = ["redis-events"]
store_model = "calibrated/b.toml"
[scenario.u.store]
redis_latency = "1ms"
`,
		"plain.toml": "[scenario.s]\ndesigns = [\"redis-events\"]\n",
	})
	// Loaded from elsewhere: the paths are relative to the file, not to the
	// working directory.
	f, err := Load(dir+"/scenarios.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Load(dir+"/plain.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := plain.Scenario("s")
	def := ps.Designs[0].Store // the built-in store model
	s, _ := f.Scenario("s")
	u, _ := f.Scenario("u")
	us := time.Microsecond

	// redis-events in s: model A, then s's explicit key.
	want := def
	want.RedisLatency, want.RedisLatencyPerEvent, want.Concurrency = 50*us, 4*us, 1
	want.ServiceBase, want.ServicePerEvent, want.RedisNodeOverheadBytes, want.RedisStreamOverheadBytes = 3*us, 600*time.Nanosecond, 600, 40
	if got := s.Designs[0].Store; got != want {
		t.Errorf("redis-events in s: store\n got %+v\nwant %+v", got, want)
	}
	// cal in s: model A, s's key, then model B above them, then cal's own key.
	want.RedisLatency, want.ServicePerEvent, want.ServiceBase = 70*us, 700*time.Nanosecond, 9*us
	if got := s.Designs[1].Store; got != want {
		t.Errorf("cal in s: store\n got %+v\nwant %+v", got, want)
	}
	// u: model A from the defaults, u's model B, then u's explicit key wins
	// over its own model.
	want = def
	want.RedisLatency, want.RedisLatencyPerEvent, want.Concurrency = time.Millisecond, 2*us, 1
	want.ServiceBase, want.ServicePerEvent, want.RedisNodeOverheadBytes, want.RedisStreamOverheadBytes = 3*us, 700*time.Nanosecond, 600, 40
	if got := u.Designs[0].Store; got != want {
		t.Errorf("redis-events in u: store\n got %+v\nwant %+v", got, want)
	}
	if s.Designs[0].Store.ReplayLatency("redis", 100) == ps.Designs[0].Store.ReplayLatency("redis", 100) {
		t.Errorf("the include does not change the replay latency")
	}
	// --set may name a model too, relative to the scenarios file.
	f, err = Load(dir+"/plain.toml", &Options{Set: []string{"store_model=calibrated/b.toml"}, Target: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := f.Scenario("s"); sc.Designs[0].Store.RedisLatency != 70*us {
		t.Errorf("--set store_model: redis_latency %v, want 70µs", sc.Designs[0].Store.RedisLatency)
	}
}

// A broken include is an error naming the scenarios file, the key, the
// model file and the problem.
func TestStoreModelErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		src   string // the scenarios file, s.toml
		model string // m.toml beside it, when not empty
		set   []string
		want  string
	}{
		// The file is not there.
		{"missing", "[scenario.s]\nstore_model = \"nope.toml\"\n", "", nil,
			"s.toml: scenario.s.store_model: nope.toml: no such file (looked for "},
		// The file is not TOML.
		{"bad toml", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store\nx = 1\n", nil,
			"s.toml: scenario.s.store_model: m.toml: line 2: expected '.' or ']'"},
		// A key StoreConfig does not have.
		{"unknown key", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store]\nredis_latncy = \"1ms\"\n", nil,
			"s.toml: scenario.s.store_model: m.toml: store.redis_latncy: unknown key (valid: memory_cap_bytes,"},
		{"replaced key", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store]\nredis_overhead_bytes = 47\n", nil,
			"s.toml: scenario.s.store_model: m.toml: store.redis_overhead_bytes: unknown key; Redis memory is modelled node by node now"},
		// A table that is neither [store] nor [source].
		{"unknown table", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store]\n[stor]\nx = 1\n", nil,
			"s.toml: scenario.s.store_model: m.toml: stor: unknown key (valid: store, source)"},
		// No [store] table at all.
		{"no store", "[scenario.s]\nstore_model = \"m.toml\"\n", "[source]\nx = 1\n", nil,
			"s.toml: scenario.s.store_model: m.toml: no [store] table"},
		// A bare number where a duration belongs.
		{"bare duration", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store]\nredis_latency = 300\n", nil,
			"m.toml: store.redis_latency: want a duration string"},
		// A value of the wrong type.
		{"wrong type", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store]\nconcurrency = \"many\"\n", nil,
			"s.toml: scenario.s.store_model: m.toml: line 2: store.concurrency: incompatible types"},
		// An impossible value.
		{"negative", "[scenario.s]\nstore_model = \"m.toml\"\n", "[store]\nservice_base = \"-1µs\"\n", nil,
			"s.toml: scenario.s.store_model: m.toml: store.service_base: -1µs is negative"},
		// An empty path.
		{"empty", "[scenario.s]\nstore_model = \"\"\n", "", nil,
			"s.toml: scenario.s.store_model: want the path of a store-model file"},
		// A folder.
		{"folder", "[scenario.s]\nstore_model = \".\"\n", "", nil,
			"s.toml: scenario.s.store_model: .: not a regular file"},
		// In [defaults].
		{"defaults", "[defaults]\nstore_model = \"nope.toml\"\n[scenario.s]\n", "", nil,
			"s.toml: defaults.store_model: nope.toml: no such file"},
		// In a design.
		{"design", "[design.x]\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"redis\"\nstore_model = \"nope.toml\"\n[scenario.s]\ndesigns = [\"x\"]\n", "", nil,
			"s.toml: design.x.store_model: nope.toml: no such file"},
		// From --set.
		{"set", "[scenario.s]\n", "", []string{"store_model=nope.toml"},
			"--set store_model: nope.toml: no such file"},
		// Not a string.
		{"not a string", "[scenario.s]\nstore_model = 5\n", "", nil,
			"s.toml: line 2: scenario.s.store_model: incompatible types"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"s.toml": c.src}
			if c.model != "" {
				files["m.toml"] = c.model
			}
			dir := writeFiles(t, files)
			_, err := Load(dir+"/s.toml", &Options{Set: c.set, Target: "s"})
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), dir+"/", "")
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q\ndoes not contain %q", msg, c.want)
			}
		})
	}
}

// The shipped calibrated/redis.toml loads, and changes the store.
func TestShippedStoreModel(t *testing.T) {
	t.Parallel()
	src := "[defaults]\nstore_model = \"calibrated/redis.toml\"\n[scenario.s]\ndesigns = [\"redis-events\"]\n"
	f, err := Parse("../with-model.toml", []byte(src), nil) // resolved beside it, in the repository root
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Parse("../plain.toml", []byte("[scenario.s]\ndesigns = [\"redis-events\"]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.Scenario("s")
	p, _ := plain.Scenario("s")
	got, def := s.Designs[0].Store, p.Designs[0].Store
	if got.RedisLatency == def.RedisLatency || got.ServiceBase == def.ServiceBase {
		t.Errorf("the shipped model leaves the store at its defaults: %+v", got)
	}
	if got.Timeout != def.Timeout || got.RedisTTL != def.RedisTTL {
		t.Errorf("the shipped model changed keys calibration does not set: %+v", got)
	}
}

// [scenario.NAME.nightly]: the engine, seeds and designs of the nightly
// run, every bad value named with its key.
func TestNightlyTable(t *testing.T) {
	t.Parallel()
	f, err := Parse("t.toml", []byte("[scenario.s]\ndesigns = [\"stateless\", \"redis-shared\"]\nnightly = { engine = \"live\", seeds = 3, designs = [\"redis-shared\"] }\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("s")
	if sc.Nightly.Engine != "live" || sc.Nightly.Seeds != 3 || len(sc.Nightly.Designs) != 1 || sc.Nightly.Designs[0] != "redis-shared" {
		t.Errorf("nightly %+v", sc.Nightly)
	}
	if names, ok := sc.NightlyDesigns(); !ok || len(names) != 1 || names[0] != "redis-shared" {
		t.Errorf("NightlyDesigns() = %v, %v; want [redis-shared], true", names, ok)
	}
	// A run of a subset (--set designs=[...], as tests and users do) that
	// leaves the nightly designs out still loads; the nightly run then
	// has none of its designs to run, and says so.
	f, err = Parse("t.toml", []byte("[scenario.s]\ndesigns = [\"stateless\", \"redis-shared\"]\nnightly = { engine = \"live\", designs = [\"redis-shared\"] }\n"),
		&Options{Target: "s", Set: []string{`designs=["stateless"]`}})
	if err != nil {
		t.Fatalf("a subset leaving the nightly designs out: %v", err)
	}
	sc, _ = f.Scenario("s")
	if names, ok := sc.NightlyDesigns(); ok || names != nil {
		t.Errorf("NightlyDesigns() of a run without them = %v, %v; want nil, false", names, ok)
	}
	for _, c := range []struct{ src, want string }{
		{`nightly = { engine = "both" }`, `t.toml: scenario.s.nightly.engine: both is not an engine for the nightly run (valid: sim, live)`},
		{`nightly = { seeds = 0 }`, `t.toml: scenario.s.nightly.seeds: 0 is not a whole number of seeds in 1..100`},
		{`nightly = { designs = ["no-such"] }`, `t.toml: scenario.s.nightly.designs: no-such is not a design of this scenario (designs: stateless, redis-shared)`},
		{`nightly = { when = "3am" }`, `t.toml: scenario.s.nightly.when: unknown key (valid: engine, seeds, designs)`},
		{`nightly = "live"`, `t.toml: scenario.s.nightly: want a table`},
	} {
		_, err := Parse("t.toml", []byte("[scenario.s]\ndesigns = [\"stateless\", \"redis-shared\"]\n"+c.src+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.src, err, c.want)
		}
	}
}

// [scenario.NAME.goals] reads into Goals in key order, apart from the
// expect table, and leaves the scenario's hash alone.
func TestGoalsTable(t *testing.T) {
	t.Parallel()
	src := minimal + "[scenario.s.expect]\nevents_lost_max = 5\n[scenario.s.goals]\nrecovery_latency_ms_p99_max = 3000\nlost_fraction_max = 0.01\n"
	f, err := Parse("t.toml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario("s")
	if err != nil {
		t.Fatal(err)
	}
	want := []Check{{Metric: "lost_fraction", Op: "max", Bound: 0.01}, {Metric: "recovery_latency_ms_p99", Op: "max", Bound: 3000}}
	if !reflect.DeepEqual(sc.Goals, want) {
		t.Errorf("goals = %+v, want %+v", sc.Goals, want)
	}
	if len(sc.Expect) != 1 || sc.Expect[0].Metric != "events_lost" {
		t.Errorf("expect = %+v, want events_lost alone", sc.Expect)
	}
}
