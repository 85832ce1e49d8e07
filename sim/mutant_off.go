//go:build !stormsim_mutant_memory_survives

package sim

// memorySurvivesRestart is false in every real build. The mutation test
// builds with -tags stormsim_mutant_memory_survives to flip it, so that a
// memory store (and its local sessions) wrongly outlive a process, and
// checks that the shipped expectations catch it.
const memorySurvivesRestart = false
