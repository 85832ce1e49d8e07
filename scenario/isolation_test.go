package scenario

import (
	"strings"
	"testing"
)

// isolation.probes: on by default for stormsim's replicas and a
// server.command, off by default for a server.url (what --target sets),
// and whatever a layer says when one does; a bad value or key is an error
// naming the file and the key.
func TestIsolationProbes(t *testing.T) {
	t.Parallel()
	const base = "[scenario.s]\ndesigns = [\"memory-sticky\"]\nduration = \"10s\"\n"
	url := []string{`server.url="http://127.0.0.1:1/mcp"`}
	for _, tc := range []struct {
		name string
		toml string
		set  []string
		want bool
	}{
		// stormsim's replicas: on.
		{"replicas", base, nil, true},
		// A server stormsim starts: on.
		{"command", base + "[scenario.s.server]\ncommand = \"x {port}\"\n", nil, true},
		// A server at a URL (--target): off unless asked for.
		{"url", base, url, false},
		{"url opt-in by --set", base, append(url, "isolation.probes=true"), true},
		{"url opt-in in the file", base + "[scenario.s.isolation]\nprobes = true\n", url, true},
		{"url opt-in in defaults", "[defaults.isolation]\nprobes = true\n" + base, url, true},
		// Turned off for the replicas; --set wins over the file.
		{"off", base + "[scenario.s.isolation]\nprobes = false\n", nil, false},
		{"set wins", base + "[scenario.s.isolation]\nprobes = false\n", []string{"isolation.probes=true"}, true},
	} {
		f, err := Parse("t.toml", []byte(tc.toml), &Options{Set: tc.set, Target: "s"})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		sc, _ := f.Scenario("s")
		if got := sc.ProbesFor(&sc.Designs[0]); got != tc.want {
			t.Errorf("%s: probes %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, toml, want string }{
		{"not a bool", base + "[scenario.s.isolation]\nprobes = 3\n", "t.toml: line 5: scenario.s.isolation.probes"},
		{"unknown key", base + "[scenario.s.isolation]\nprobe = true\n", "t.toml: scenario.s.isolation.probe: unknown key (valid: probes)"},
		{"not in a design", base + "[design.memory-sticky]\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n[design.memory-sticky.isolation]\nprobes = true\n",
			"t.toml: design.memory-sticky.isolation: unknown key"},
	} {
		_, err := Parse("t.toml", []byte(tc.toml), &Options{Target: "s"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
