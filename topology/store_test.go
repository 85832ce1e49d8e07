package topology

import (
	"testing"
	"time"
)

// The Redis model's append ceiling is concurrency over the cost of one
// append, and 0 where the model gives Redis no cost.
func TestAppendCeiling(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		conc       int
		base, per  time.Duration
		wantPerSec float64
	}{
		{1, 12 * time.Microsecond, 500 * time.Nanosecond, 80000}, // DefaultStore
		{4, 12 * time.Microsecond, 500 * time.Nanosecond, 320000},
		{2, 0, time.Microsecond, 2e6},
		{0, 12 * time.Microsecond, 0, 0},
		{3, 0, 0, 0},
	} {
		s := StoreConfig{Concurrency: c.conc, ServiceBase: c.base, ServicePerEvent: c.per}
		if got := s.AppendCeiling(); got != c.wantPerSec {
			t.Errorf("concurrency %d, %v + %v per event: ceiling %g, want %g", c.conc, c.base, c.per, got, c.wantPerSec)
		}
	}
	if got := DefaultStore.AppendCeiling(); got != 80000 {
		t.Errorf("DefaultStore ceiling %g, want 80000", got)
	}
}

// The Redis stream model at sizes measured on Redis 7.0 (MEMORY USAGE of
// streams under keys as long as the live store's): a node of 256-byte payloads
// holds 10 events; 100-byte ones overfill a node into the next size class
// before Redis starts another; a 5,000-byte message gets a node of its own.
func TestRedisStreamCost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		payload int
		per     int64
		bytes   map[int64]int64
	}{
		{256, 10, map[int64]int64{0: 0, 1: 4800, 10: 4800, 11: 9888, 21: 14488, 100: 46688}},
		{100, 17, map[int64]int64{1: 4800, 17: 5824, 18: 10912, 34: 11936, 35: 16536}},
		{1000, 3, map[int64]int64{3: 4800, 4: 9376, 7: 13464, 30: 42080}},
		{5000, 1, map[int64]int64{1: 6848, 2: 13984, 10: 67168}},
	} {
		cost := DefaultStore.RedisStreamCost(c.payload)
		if cost.PerNode != c.per {
			t.Errorf("payload %d: %d events per node, want %d", c.payload, cost.PerNode, c.per)
		}
		for n, want := range c.bytes {
			if got := cost.Bytes(n); got != want {
				t.Errorf("payload %d, %d events: %d bytes, want %d", c.payload, n, got, want)
			}
		}
	}
	// stream-node-max-entries binds before the bytes do for tiny messages.
	s := DefaultStore
	s.RedisNodeEntries = 5
	if got := s.RedisStreamCost(1).PerNode; got != 5 {
		t.Errorf("redis_node_entries 5: %d events per node", got)
	}
	for n, want := range map[int64]int64{3438: 3584, 4096: 4096, 4098: 5120, 5158: 6144, 3030: 3072} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}
