// Package calibrate measures a real Redis for the simulator's event-store
// model (topology.StoreConfig): it sends the commands the live Redis store
// sends (XADD with an explicit ID and exact MAXLEN, alone and in
// pipelines with the store's EXPIRE refreshes; XRANGE from just after a
// cursor) and turns the figures into the model's keys.
//
// What it measures:
//
//   - append latency (p50, p90, p99) one XADD at a time, at concurrency 1
//     and at every other concurrency asked for;
//   - throughput at each concurrency: appends one at a time, appends
//     pipelined as the live store batches them, and replays of
//     Options.ReplayEvents events;
//   - replay latency at concurrency 1 for several lengths, fitted to a + b·n
//     by least squares;
//   - memory held by a stream, node by node: one stream of messages of the
//     event size (topology.MessageBytes) grown one event at a time, with
//     its MEMORY USAGE and node count (XINFO STREAM) after each, until it
//     has five nodes; with stream-node-max-bytes and stream-node-max-entries
//     (CONFIG GET, or Redis's defaults where CONFIG is refused) this gives
//     the events per node and what a node and a stream cost, to which the
//     simulator's stream model is fitted.
//
// Result.Store holds the model keys derived from them (the derivation is
// documented on derive), and Result.Model encodes them, with where they came
// from, as a store-model file that a scenario includes with
// store_model = "calibrated/redis.toml".
//
// Measure writes only keys under a fresh random prefix, gives each a TTL as
// it creates it, and deletes every one before it returns, on success, error
// or cancellation. Its clock and its randomness come from Options.
//
//	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 256})
//	res, err := calibrate.Measure(ctx, rdb, nil)
//	if err != nil { ... }
//	data, err := res.Model("stormsim calibrate --redis "+addr, "calibrated/redis.toml")
package calibrate
