package scenario

import (
	"strings"
	"testing"
	"time"
)

// health_check: 1 s and 2 probes by default, whatever a layer says when one
// does; a bad value or key is an error naming the file and the key.
func TestHealthCheck(t *testing.T) {
	t.Parallel()
	const base = "[scenario.s]\ndesigns = [\"memory-sticky\"]\nduration = \"10s\"\n"
	for _, tc := range []struct {
		name string
		toml string
		set  []string
		want HealthCheck
	}{
		// The defaults.
		{"default", base, nil, HealthCheck{Interval: time.Second, Threshold: 2}},
		// In the scenario, one key at a time.
		{"file", base + "[scenario.s.health_check]\ninterval = \"250ms\"\n", nil, HealthCheck{Interval: 250 * time.Millisecond, Threshold: 2}},
		// In [defaults], under the scenario's own.
		{"defaults", "[defaults.health_check]\nthreshold = 3\ninterval = \"2s\"\n" + base + "[scenario.s.health_check]\ninterval = \"500ms\"\n", nil,
			HealthCheck{Interval: 500 * time.Millisecond, Threshold: 3}},
		// Probes off; --set wins over the file.
		{"off by --set", base + "[scenario.s.health_check]\ninterval = \"250ms\"\n", []string{"health_check.interval=0s"}, HealthCheck{Threshold: 2}},
	} {
		f, err := Parse("t.toml", []byte(tc.toml), &Options{Set: tc.set, Target: "s"})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		sc, _ := f.Scenario("s")
		if sc.HealthCheck != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, sc.HealthCheck, tc.want)
		}
	}
	for _, tc := range []struct{ name, toml, want string }{
		{"negative", base + "[scenario.s.health_check]\ninterval = \"-1s\"\n", "scenario.s.health_check.interval: -1s is negative"},
		{"too often", base + "[scenario.s.health_check]\ninterval = \"1ms\"\n", "scenario.s.health_check.interval: 1ms is shorter than 10ms"},
		{"bare number", base + "[scenario.s.health_check]\ninterval = 5\n", "health_check.interval: want a duration string"},
		{"threshold 0", base + "[scenario.s.health_check]\nthreshold = 0\n", "scenario.s.health_check.threshold: 0 is not in 1..100"},
		{"unknown key", base + "[scenario.s.health_check]\nperiod = \"1s\"\n", "t.toml: scenario.s.health_check.period: unknown key (valid: interval, threshold)"},
		{"not in a design", base + "[design.memory-sticky]\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n[design.memory-sticky.health_check]\ninterval = \"1s\"\n",
			"t.toml: design.memory-sticky.health_check: unknown key"},
	} {
		_, err := Parse("t.toml", []byte(tc.toml), &Options{Target: "s"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
