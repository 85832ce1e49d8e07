package topo

import (
	"os"
	"strconv"
)

// Processors each child of a live topology runs with (its GOMAXPROCS),
// unless GOMAXPROCS is set in the environment, which then applies to every
// process of the run alike.
//
// A replica's load is a fraction of a core, and each of the topology's
// processes would otherwise run as many Ps as the host has cores: on a
// small host every process then keeps an idle P's thread spinning for work
// and hands goroutines between threads, and that costs more CPU than the
// events themselves (make bench-live, docs/measurements.md). The LB carries
// every stream's events, so it keeps LBProcs.
const (
	ReplicaProcs = 1
	LBProcs      = 2
)

// childEnv is the environment of a child that runs with procs processors:
// this process's, with GOMAXPROCS added when it is not set already.
func childEnv(procs int, extra ...string) []string {
	env := append(os.Environ(), extra...)
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && procs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	return env
}
