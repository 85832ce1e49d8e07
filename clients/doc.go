// Package clients is the brain of a virtual MCP client: a pure state machine
// that decides what a Streamable HTTP client does next, and the backoff
// policies and named profiles (go-sdk, ts-sdk, python-sdk, compliant, stuck)
// that parameterise it.
//
// A Brain reads no clock and does no I/O. The caller feeds it Inputs (a
// response with its status, the end of a stream, a timer that fired) and
// carries out the Action it returns: send a request, wait, or end the call.
// The simulator drives it in virtual time; the live engine drives the same
// code over net/http. Randomness (jitter) comes from the *rand.Rand passed
// to New, so the same seed gives the same decisions.
//
//	cfg, _ := clients.Profile("go-sdk")
//	b := clients.New(&cfg, rand.New(rand.NewPCG(seed, 0)))
//	act := b.Step(clients.Input{Kind: clients.InStartCall})
//	// act.Kind == clients.ActSend, act.Req == clients.ReqInitialize
package clients
