package scenario

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// limits: the defaults when nothing is said, a layer's value or --set's
// otherwise; a value out of range, an unknown key or a design's limits
// table is an error naming the file and the key.
func TestLimits(t *testing.T) {
	t.Parallel()
	const base = "[scenario.s]\ndesigns = [\"memory-sticky\"]\nduration = \"10s\"\n"
	small := DefaultLimits
	small.EventBytes, small.SessionIDBytes = 1000, 64
	for _, tc := range []struct {
		name string
		toml string
		set  []string
		want Limits
	}{
		// Nothing said: the defaults.
		{"defaults", base, nil, DefaultLimits},
		// The scenario's table, and --set over it.
		{"file and set", base + "[scenario.s.limits]\nevent_bytes = 1000\nsession_id_bytes = 99\n", []string{"limits.session_id_bytes=64"}, small},
	} {
		f, err := Parse("t.toml", []byte(tc.toml), &Options{Set: tc.set, Target: "s"})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		sc, _ := f.Scenario("s")
		if diff := cmp.Diff(tc.want, sc.Limits); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	for _, tc := range []struct{ name, toml, want string }{
		{"zero", base + "[scenario.s.limits]\nevent_bytes = 0\n", "t.toml: scenario.s.limits.event_bytes: 0 is not in 1..1073741824"},
		{"unknown key", base + "[scenario.s.limits]\nevent_size = 5\n", "t.toml: scenario.s.limits.event_size: unknown key (valid: event_bytes, line_bytes"},
		{"not in a design", base + "[design.memory-sticky]\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n[design.memory-sticky.limits]\nid_bytes = 5\n",
			"t.toml: design.memory-sticky.limits: unknown key"},
	} {
		_, err := Parse("t.toml", []byte(tc.toml), &Options{Target: "s"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
