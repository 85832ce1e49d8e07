// Package protocol is the brain of an MCP Streamable HTTP replica: every
// decision a server makes, written once, for both engines. It holds what a
// design's era and axes give it (Caps), the answer to each request a replica
// serves (Serve: initialize, the initialized notification, a call, the
// standalone GET, a resume, DELETE), the admission rules (Admission: the
// admission bucket, the connection-rate limit, the accept queue and the hint
// on a 503), the retry hint and its spread (Hint), and the drain and orphan
// rules. From the 2026-07-28 revision on (Caps.Discover) a client opens
// with server/discover instead of initialize, Check decides each POST's
// headers and _meta, a method the server lacks is a 404 (NotFound), and a
// closed response stream cancels its call (Caps.CancelOnClose).
//
// Like clients.Brain, it reads no clock, does no I/O and starts no
// goroutine. A replica learns what it needs through I/O (the session
// table, the claim on a stream, the event store), so Serve asks for those
// facts through the Facts interface, in one fixed order: the session check,
// then the claim, then the store read. The simulator answers from its
// virtual state; the live replica (live/replica) from Redis and memory.
// Time comes in as nanoseconds since the run's start, randomness as a
// function that returns a float in [0, 1).
//
//	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
//	ans := caps.Serve(protocol.Request{Kind: clients.ReqResume}, facts)
//	// ans.Status == 409 when another connection holds the stream
package protocol
