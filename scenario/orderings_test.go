package scenario

import (
	"strings"
	"testing"
)

// An ordering names a metric and defined designs; a design the run leaves
// out (--set designs=[...]) is allowed, as in expect tables.
func TestOrderingsValidated(t *testing.T) {
	t.Parallel()
	base := "[scenario.s]\ndesigns = [\"memory-sticky\", \"redis-events\"]\n[[scenario.s.orderings]]\n"
	for _, tc := range []struct{ src, want string }{
		{`metric = "lost_events"` + "\nlower = \"redis-events\"\nthan = [\"memory-sticky\"]\n", `scenario.s.orderings[0].metric: "lost_events" is not a metric`},
		{`metric = "events_lost"` + "\nlower = \"redis-sharded\"\nthan = [\"memory-sticky\"]\n", `scenario.s.orderings[0].lower: "redis-sharded" is not a design`},
		{`metric = "events_lost"` + "\nlower = \"redis-events\"\nthan = []\n", `scenario.s.orderings[0].than: want the designs "redis-events" is claimed to be lower than`},
		{`metric = "events_lost"` + "\nlower = \"redis-events\"\nthan = [\"redis-events\"]\n", `scenario.s.orderings[0].than: "redis-events" is not another design`},
		{`metric = "events_lost"` + "\nlower = \"redis-events\"\nthan = [\"memory-sticky\"]\nabove = 3\n", `scenario.s.orderings[0]: above: unknown key (valid: metric, lower, than)`},
	} {
		_, err := Parse("o.toml", []byte(base+tc.src), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
	ok := base + "metric = \"events_lost\"\nlower = \"redis-events\"\nthan = [\"memory-sticky\", \"nostore\"]\n"
	f, err := Parse("o.toml", []byte(ok), &Options{Set: []string{`designs=["redis-events"]`}, Target: "s"})
	if err != nil {
		t.Fatalf("a claim about a design the run leaves out: %v", err)
	}
	sc, _ := f.Scenario("s")
	if len(sc.Orderings) != 1 || len(sc.Orderings[0].Than) != 2 {
		t.Errorf("orderings: %+v", sc.Orderings)
	}
}
