package scenario

import (
	"os"
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
		// A bare number where a duration belongs would be nanoseconds.
		{"bare duration", "[scenario.s]\nduration = 300\n", nil, []string{"t.toml: scenario.s.duration: want a duration string such as \"300s\""}},
		// An unknown nested table is reported at its first unknown key.
		{"nested unknown", minimal + "[scenario.s.foo.bar]\nx = 1\n", nil, []string{"t.toml: scenario.s.foo: unknown key"}},
		// Thresholds must be a table.
		{"expect array", minimal + "[[scenario.s.expect]]\nevents_lost_max = 1\n", nil, []string{"t.toml: scenario.s.expect: want a table of thresholds"}},
		// A name that would escape the results folder.
		{"bad name", "[scenario.\"../x\"]\n", nil, []string{`"../x" is not a valid scenario or design name`}},
		// A negative seed.
		{"negative seed", "[scenario.s]\nseed = -1\n", nil, []string{"t.toml: scenario.s.seed: -1 is negative"}},
		// A design no scenario uses is still checked.
		{"unused design", minimal + "[design.x]\nmode = \"bogus\"\nsessions = \"local\"\nevents = \"memory\"\n", nil, []string{"t.toml: design.x.mode: \"bogus\" is not one of"}},
		// --set cannot change the fault schedule or the thresholds.
		{"set faults", minimal, []string{"faults=[]"}, []string{"--set: faults: unknown key"}},
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

// The README's key table documents every key the loader accepts.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range validKeys([]string{"scenario", "x"}, false) {
		if k == "workload" || k == "client" || k == "store" || k == "replica" {
			for _, sub := range validKeys([]string{"scenario", "x", k}, false) {
				if !strings.Contains(string(readme), "`"+k+"."+sub+"`") {
					t.Errorf("README does not document `%s.%s`", k, sub)
				}
			}
			continue
		}
		if !strings.Contains(string(readme), "`"+k+"`") {
			t.Errorf("README does not document `%s`", k)
		}
	}
}
