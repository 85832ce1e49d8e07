package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSweep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec string
		want []float64
		log  bool
	}{
		// A list is sorted and keeps its values.
		{"workload.event_rate=20,1,5", []float64{1, 5, 20}, false},
		// A log range of integers: 1000, 2000, 4000, 8000, 16000.
		{"workload.clients=1000..16000@5", []float64{1000, 2000, 4000, 8000, 16000}, true},
		// Integer keys are rounded, and duplicates after rounding dropped.
		{"workload.clients=1..4@7", []float64{1, 2, 3, 4}, true},
		// A log range of a float keeps four significant digits between exact ends.
		{"workload.event_rate=1..20@4", []float64{1, 2.714, 7.368, 20}, true},
		// Durations take a unit and are held in seconds.
		{"store.redis_ttl=60s,10m,1m30s", []float64{60, 90, 600}, false},
		{"store.redis_ttl=30s..120s@3", []float64{30, 60, 120}, true},
		// Sizes may use binary units.
		{"store.memory_cap_bytes=1MiB,512KiB,1048576", []float64{524288, 1048576}, false},
		// A top-level key.
		{"replicas=2,3,4", []float64{2, 3, 4}, false},
		// One point.
		{"workload.clients=500..500@1", []float64{500}, false},
		// Spaces around the parts are fine.
		{" workload.clients = 100 , 200 ", []float64{100, 200}, false},
		// Zero is allowed in a list (0 = no cap).
		{"store.redis_maxlen=0,100", []float64{0, 100}, false},
	} {
		ax, err := ParseSweep(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if diff := cmp.Diff(c.want, ax.Values); diff != "" || ax.Log != c.log {
			t.Errorf("%q: log %v (want %v), values (-want +got):\n%s", c.spec, ax.Log, c.log, diff)
		}
	}
}

// Acceptance 4: the sweep grammar rejects bad input with a clear error that
// names the key: an unknown key, a value that is not a number, an empty
// range (lo > hi, N < 1, an empty list), a grid of more than 10,000 points
// without --force.
func TestSweepGrammarRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec string
		want []string // every one must be in the message
	}{
		// An unknown key names it and lists the valid ones.
		{"workload.clientz=1,2", []string{"--sweep workload.clientz", `unknown key "workload.clientz"`, "workload.clients"}},
		{"nosuch=1", []string{"--sweep nosuch", "unknown key"}},
		// A key that exists but holds no number.
		{"workload.think_dist=1,2", []string{"--sweep workload.think_dist", "not a numeric key"}},
		{"lb=1", []string{"--sweep lb", "not a numeric key"}},
		// Values that are not numbers.
		{"workload.clients=a,b", []string{"--sweep workload.clients", `"a" is not a number`}},
		{"workload.event_rate=1..x@3", []string{"--sweep workload.event_rate", "range end", `"x" is not a number`}},
		{"workload.clients=2.5", []string{"--sweep workload.clients", `"2.5" is not an integer`}},
		{"store.redis_ttl=60", []string{"--sweep store.redis_ttl", "bare number", "60s"}},
		{"store.redis_ttl=soon", []string{"--sweep store.redis_ttl", `"soon" is not a duration`}},
		{"workload.clients=1..10@x", []string{"--sweep workload.clients", "@x", "not an integer"}},
		// Empty ranges and lists.
		{"workload.clients=10..1@3", []string{"--sweep workload.clients", "empty range", "lo 10 is above hi 1"}},
		{"workload.clients=1..10@0", []string{"--sweep workload.clients", "empty range", "@0"}},
		{"workload.clients=1..10@-2", []string{"--sweep workload.clients", "empty range", "@-2"}},
		{"workload.clients=", []string{"--sweep workload.clients", "no values"}},
		{"workload.clients=1,,2", []string{"--sweep workload.clients", "value 2", "is empty"}},
		{"workload.clients=1..10", []string{"--sweep workload.clients", "no point count"}},
		{"workload.clients=1..10@1", []string{"--sweep workload.clients", "@1 gives one point"}},
		{"workload.clients=0..10@3", []string{"--sweep workload.clients", "lo > 0"}},
		// No key at all.
		{"1000..2000@3", []string{"want KEY=VALUES"}},
		{"=1,2", []string{"want KEY=VALUES"}},
	} {
		_, err := ParseSweep(c.spec)
		if err == nil {
			t.Errorf("%q: no error", c.spec)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.spec, err, w)
			}
		}
	}
}

// Acceptance 4: more than 10,000 points need --force; the message names
// the axes and the flag. The check comes before any point is loaded.
func TestGridTooLargeNeedsForce(t *testing.T) {
	t.Parallel()
	a, _ := ParseSweep("workload.clients=1000..1000000@200")
	b, _ := ParseSweep("workload.event_rate=1..100@60")
	loads := 0
	loader := func(set []string) (*scenarioT, error) { loads++; return nil, errStop }
	_, err := NewGrid(loader, []Axis{a, b}, nil)
	if err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "more than 10000") ||
		!strings.Contains(err.Error(), "workload.clients") || !strings.Contains(err.Error(), "workload.event_rate") {
		t.Errorf("a %v-point grid: %v", Size([]Axis{a, b}), err)
	}
	if loads != 0 {
		t.Errorf("the refused grid loaded %d points", loads)
	}
	// With force, the grid is built (the loader is asked for the first point).
	_, err = NewGrid(loader, []Axis{a, b}, &GridOptions{Force: true})
	if err == nil || !strings.Contains(err.Error(), errStop.Error()) || loads != 1 {
		t.Errorf("forced: %v after %d loads", err, loads)
	}
}

// A key swept twice, or swept and also set, is refused, naming it.
func TestGridConflicts(t *testing.T) {
	t.Parallel()
	a, _ := ParseSweep("workload.clients=1,2")
	b, _ := ParseSweep("workload.clients=3,4")
	loader := func(set []string) (*scenarioT, error) { return nil, errStop }
	if _, err := NewGrid(loader, []Axis{a, b}, nil); err == nil || !strings.Contains(err.Error(), "--sweep workload.clients: the key is swept twice") {
		t.Errorf("swept twice: %v", err)
	}
	if _, err := NewGrid(loader, []Axis{a}, &GridOptions{Base: []string{"workload.clients=5"}}); err == nil || !strings.Contains(err.Error(), "--set workload.clients: the key is also swept") {
		t.Errorf("set and swept: %v", err)
	}
}

// The keys a sweep accepts are the numeric keys of docs/reference.md's key table.
func TestKeys(t *testing.T) {
	t.Parallel()
	keys := Keys()
	for _, k := range []string{"seed", "duration", "replicas", "rtt", "workload.clients", "workload.event_rate", "workload.event_bytes",
		"workload.think", "store.redis_ttl", "store.memory_cap_bytes", "store.redis_maxlen", "store.concurrency",
		"client.max_retries", "client.base", "replica.accept_rate", "replica.drain_limit"} {
		if !slices.Contains(keys, k) {
			t.Errorf("%s is not sweepable", k)
		}
	}
	for _, k := range []string{"lb", "era", "designs", "workload.think_dist", "client.profile", "store.persistent", "replica.retry_hint_spread"} {
		if slices.Contains(keys, k) {
			t.Errorf("%s is sweepable, but holds no number", k)
		}
	}
	for _, c := range []struct {
		key  string
		kind Kind
	}{{"workload.clients", Int}, {"workload.event_rate", Float}, {"store.redis_ttl", Duration}, {"store.memory_cap_bytes", Int}, {"duration", Duration}} {
		if k, ok := KindOf(c.key); !ok || k != c.kind {
			t.Errorf("%s: kind %v, %v; want %v", c.key, k, ok, c.kind)
		}
	}
}

// A point's overrides are what --set takes, for each kind.
func TestAxisSet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ spec, want, text string }{
		{"workload.clients=1000", "workload.clients=1000", "1000"},
		{"workload.event_rate=2.5", "workload.event_rate=2.5", "2.5"},
		{"store.redis_ttl=1m30s", "store.redis_ttl=90s", "90s"},
		{"store.redis_ttl=1.5s", "store.redis_ttl=1.5s", "1.5s"},
		{"store.memory_cap_bytes=1MiB", "store.memory_cap_bytes=1048576", "1048576"},
	} {
		ax, err := ParseSweep(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := ax.Set(ax.Values[0]); got != c.want {
			t.Errorf("%s: set %q, want %q", c.spec, got, c.want)
		}
		if got := ax.Text(ax.Values[0]); got != c.text {
			t.Errorf("%s: text %q, want %q", c.spec, got, c.text)
		}
	}
}

// The default sweep: the scenario's clients × 1/2 … 8, keeping the loads
// that are all in before the first fault (or the end, without faults).
func TestDefaultSweep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		set  []string
		want string
	}{
		// 100 clients at 50/s over 60 s, no faults: up to 3000 fit.
		{nil, "workload.clients=50..800@5"},
		// 200 clients: 100 to 1600, all in within 60 s.
		{[]string{"workload.clients=200"}, "workload.clients=100..1600@5"},
		// A 10 s run takes 500: 1600 and 800 do not fit.
		{[]string{"workload.clients=200", "duration=10s"}, "workload.clients=100..400@3"},
		// One client.
		{[]string{"workload.clients=1", "workload.arrival_rate=1", "duration=1s"}, "workload.clients=1"},
		// Only half the clients fit: a list of the two loads.
		{[]string{"workload.clients=1000", "workload.arrival_rate=10", "duration=60s"}, "workload.clients=500,600"},
	} {
		sc, err := loader(t, "plain")(c.set)
		if err != nil {
			t.Fatal(err)
		}
		got := DefaultSweep(sc)
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.set, got, c.want)
		}
		if _, err := ParseSweep(got); err != nil {
			t.Errorf("%v: the default %q does not parse: %v", c.set, got, err)
		}
	}
}
