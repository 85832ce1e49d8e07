package topo

import (
	"os"
	"slices"
	"testing"
)

func TestChildEnvProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	env := childEnv(ReplicaProcs, "A=1")
	if !slices.Contains(env, "A=1") {
		t.Errorf("the extra variable is missing: %q", env)
	}
	// Set (even empty) in this process's environment: the children inherit
	// it as it is, and none is added.
	if n := countProcs(env); n != 1 {
		t.Errorf("with GOMAXPROCS set here, the child's environment has %d GOMAXPROCS entries, want the inherited one alone", n)
	}
}

func TestChildEnvProcsUnset(t *testing.T) {
	t.Setenv("GOMAXPROCS", "3")
	unsetenv(t, "GOMAXPROCS")
	env := childEnv(ReplicaProcs)
	if !slices.Contains(env, "GOMAXPROCS=1") || countProcs(env) != 1 {
		t.Errorf("without GOMAXPROCS here, a replica's environment should hold GOMAXPROCS=1 once: %q", env)
	}
	if env := childEnv(LBProcs); !slices.Contains(env, "GOMAXPROCS=2") {
		t.Errorf("the LB's environment should hold GOMAXPROCS=2: %q", env)
	}
}

func countProcs(env []string) int {
	n := 0
	for _, kv := range env {
		if len(kv) >= 11 && kv[:11] == "GOMAXPROCS=" {
			n++
		}
	}
	return n
}

// unsetenv removes key for the rest of the test; t.Setenv before it
// restores the old value afterwards.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
