// Package layers holds the test that keeps the two engines side by side:
// neither `sim` nor any `live/...` package imports the other, and the
// packages both share (history, scenario, faults, topology, clients,
// workload, report) import neither. Tests are not counted: a test may drive
// one engine against the other.
package layers
