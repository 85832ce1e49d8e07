// Package check holds what only the live engine can check of a judged
// history: Reconcile holds it to the replicas' own counters and to Redis,
// sources history.Judge does not read. A run's history, its record types and
// Judge live in package history, which the simulator's oracle shares.
package check
