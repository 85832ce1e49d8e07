package protocol_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestEnginesImportProtocol fails when the simulator or the live replica
// stops taking its server rules from package protocol (go list -deps,
// tests aside).
func TestEnginesImportProtocol(t *testing.T) {
	t.Parallel()
	const mod = "github.com/stormsim/stormsim/"
	for _, pkg := range []string{"sim", "live/replica"} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if !slices.Contains(strings.Fields(string(out)), mod+"protocol") {
			t.Errorf("%s does not import protocol: its server rules are a second copy", pkg)
		}
	}
}
