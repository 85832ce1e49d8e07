package topo

import (
	"slices"
	"strings"
	"testing"
)

func TestChildProcs(t *testing.T) {
	for _, c := range []struct{ cores, replicas, want int }{
		{2, 3, 1}, {2, 1, 1}, {1, 0, 1}, {16, 3, 3}, {64, 6, 8},
	} {
		if got := childProcs(c.cores, c.replicas); got != c.want {
			t.Errorf("childProcs(%d cores, %d replicas) = %d, want %d", c.cores, c.replicas, got, c.want)
		}
	}
}

// A GOMAXPROCS the user set reaches the children as it is; without one,
// they get their share.
func TestChildEnvKeepsGOMAXPROCS(t *testing.T) {
	t.Setenv("GOMAXPROCS", "7")
	if got := procsIn(childEnv(3)); !slices.Equal(got, []string{"GOMAXPROCS=7"}) {
		t.Errorf("childEnv with GOMAXPROCS=7 set gives %v", got)
	}
	t.Setenv("GOMAXPROCS", "")
	if got := procsIn(childEnv(3)); len(got) != 2 || got[1] == "GOMAXPROCS=" {
		t.Errorf("childEnv with GOMAXPROCS empty gives %v, want the empty one and a share after it", got)
	}
}

func procsIn(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			out = append(out, kv)
		}
	}
	return out
}
