// Package wait gives the deadline the live engine, and its tests, allow a
// process or a port to become ready: a replica to print that it listens,
// a redis-server to answer PING, a child to exit after a signal.
//
// A readiness wait ends as soon as the thing is ready, so a generous
// deadline costs nothing on a quiet machine and spares a loaded one (a
// 2-core host running go test ./... beside a build) a false failure. Each
// base deadline is multiplied by STORMSIM_WAIT_SCALE when it is set to a
// number above 1, for a machine slower still.
package wait

import (
	"os"
	"strconv"
	"time"
)

// Ready is the base deadline for a process to come up: a replica to
// listen, a redis-server to answer PING.
const Ready = 60 * time.Second

// Scale is STORMSIM_WAIT_SCALE when it is a number above 1, else 1.
func Scale() float64 {
	if f, err := strconv.ParseFloat(os.Getenv("STORMSIM_WAIT_SCALE"), 64); err == nil && f > 1 {
		return f
	}
	return 1
}

// For is base scaled by Scale.
func For(base time.Duration) time.Duration {
	return time.Duration(float64(base) * Scale())
}
