// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned with the Node.js it needs in
// conformance/package.json; make conformance-deps installs it) against
// the servers and clients stormsim ships, in its tests:
//
//   - the server scenarios against the reference replica (a design with
//     an event store, and a stateless one), `stormsim up`'s load balancer,
//     the go-sdk replica and the TypeScript SDK server;
//   - the client scenarios initialize, tools_call and sse-retry against
//     `stormsim client` with each client kind (native, go-sdk, ts-sdk).
//
// conformance/expected-failures.toml lists the scenarios that do not
// apply to a server, each with why; any other failure fails the test, as
// does a listed scenario that passes. The package holds no code: only its
// tests, which make test (TestConformanceReference) and make test-long
// (TestConformanceServers, TestConformanceClients) run.
package conformance
