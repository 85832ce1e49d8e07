package redislog

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestTo makes go-redis complain for real (dials to a port nobody listens
// on) and finds its lines with the sinks registered, capped where asked,
// without go-redis's "redis: " prefix, and none in a sink once stopped.
func TestTo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on

	var mu sync.Mutex
	var all, capped, stopped []string
	add := func(to *[]string) func(string) {
		return func(m string) { mu.Lock(); *to = append(*to, m); mu.Unlock() }
	}
	stopAll := To(add(&all))
	defer stopAll()
	stopCapped := To(Capped(2, add(&capped)))
	defer stopCapped()
	stop := To(add(&stopped))
	stop()

	rdb := redis.NewClient(&redis.Options{Addr: addr, DialerRetries: 1, MaxRetries: -1, PoolSize: 100})
	defer rdb.Close()
	for range 4 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatalf("PING %s answered: want it refused", addr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(all) != 4 || !strings.HasPrefix(all[0], "connection pool: failed to dial") || !strings.Contains(all[0], "connection refused") {
		t.Errorf("sink got %q: want 4 lines saying the dial failed, without the redis: prefix", all)
	}
	if len(capped) != 3 || capped[1] != all[1] || !strings.Contains(capped[2], "only the first 2 are logged") {
		t.Errorf("capped sink got %q: want 2 lines and one saying the rest are not logged", capped)
	}
	if len(stopped) != 0 {
		t.Errorf("a stopped sink got %q", stopped)
	}
}
