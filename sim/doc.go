// Package sim is stormsim's deterministic engine: it runs a scenario's
// virtual clients against a modelled topology in virtual time and returns a
// report.Report with one row per design.
//
// Only state changes are queued: a client arriving, a response, a timer, a
// call's last event, a fault step. Events on a healthy stream are never
// queued one by one; an attempt produces event k at start + k·interval, so
// what a connected client received by time t is computed arithmetically when
// the connection changes. That is what makes 100,000 clients cheap.
//
// Each design runs on its own engine with its own RNG derived from (seed,
// design name), so running a subset of designs, or running them in
// parallel, changes no row. The workload (arrivals, call lengths, think
// times, random drop instants) is drawn per client from the seed alone, so
// every design sees the same clients.
//
// ExampleRun loads a scenario, runs two of its designs and reads their rows.
package sim
