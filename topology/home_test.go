package topology

import "testing"

// Only hash routes by the session id alone, so only under it must ids hash
// back to their replica; a name not registered routes nothing.
func TestHomeIDs(t *testing.T) {
	t.Parallel()
	for _, name := range PolicyNames() {
		if got, want := HomeIDs(name), name == "hash"; got != want {
			t.Errorf("HomeIDs(%q) = %v, want %v", name, got, want)
		}
	}
	if HomeIDs("no-such-policy") {
		t.Error("HomeIDs of a name not registered is true")
	}
}
