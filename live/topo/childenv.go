package topo

import (
	"os"
	"runtime"
	"strconv"
)

// childEnv is the environment of the topology's own Go processes (the LB
// and each reference replica): this process's, with the Go scheduler sized
// for a machine it shares. Every event wakes a replica, the LB and the
// clients' process in turn; a scheduler as wide as the machine in each of
// them keeps idle processors spinning and stealing work between events.
// Each gets its share of the cores instead, at least one, counting the
// replicas, the LB and the clients' process (childProcs). A GOMAXPROCS
// already in the environment is kept.
func childEnv(replicas int) []string {
	env := os.Environ()
	if os.Getenv("GOMAXPROCS") == "" {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(childProcs(runtime.NumCPU(), replicas)))
	}
	return env
}

// childProcs shares cores among replicas+2 busy processes, at least one
// core each.
func childProcs(cores, replicas int) int {
	return max(1, cores/(replicas+2))
}
