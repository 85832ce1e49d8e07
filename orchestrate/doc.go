// Package orchestrate runs a scenario over its seeds and engines, judges
// the two engines' agreement and the scenario's thresholds, and gives the
// verdict: the one exit precedence that run, merge and nightly share
// (Findings.Verdict). The CLI parses flags, calls it once and exits with
// the code it returns.
package orchestrate
