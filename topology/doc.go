// Package topology models the server side of an MCP Streamable HTTP
// deployment: the load-balancer policies, the session and event stores and
// their retention, and the settings of a replica's drain.
//
// The simulator and the live load balancer call the same Policy code, so a
// routing decision is made the same way in virtual time and on real sockets.
// Policies register under the name used in scenarios.toml:
//
//	p, err := topology.NewPolicy("sticky", &topology.Options{Rand: rng})
//	slot := p.Pick(topology.Request{HasSession: true, Session: key}, view)
package topology
