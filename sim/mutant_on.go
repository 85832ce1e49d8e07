//go:build stormsim_mutant_memory_survives

package sim

// memorySurvivesRestart is the deliberate fault of the mutation test: a
// memory store and local sessions that survive their process.
const memorySurvivesRestart = true
