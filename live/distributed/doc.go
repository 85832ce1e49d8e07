// Package distributed holds the tests of sharded live runs as a
// Kubernetes Indexed Job runs them: N stormsim processes, each told its
// index by JOB_COMPLETION_INDEX, against one stormsim up --no-schedule,
// their folders joined by stormsim merge. It has no code of its own: the
// shards are cmd/stormsim run --shards, package live/shard and
// runner.Merge; docs/distributed.md explains them.
package distributed
