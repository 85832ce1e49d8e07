package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/topology"
)

// startRedis starts a private redis-server for one test; a missing
// redis-server fails the test, it is not skipped.
func startRedis(t testing.TB) (*redisd.Server, *redis.Client) {
	t.Helper()
	srv, err := redisd.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := srv.PID()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() {
		rdb.Close()
		srv.Close()
		if redisd.Alive(pid) {
			t.Errorf("redis-server %d outlived its test", pid)
		}
	})
	return srv, rdb
}

func appendN(t *testing.T, s Events, session, stream string, from, to int64) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := s.Append(context.Background(), session, stream, Event{Index: i, Data: []byte(fmt.Sprintf("e%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
}

// Both stores: append and replay keep order, and a replay gives only that
// stream's events after the cursor.
func TestAppendReplayOrder(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	for name, s := range map[string]Events{"memory": NewMemory(0, 0), "redis": NewRedis(rdb, nil)} {
		appendN(t, s, "sess", "a", 0, 20)
		appendN(t, s, "sess", "b", 0, 5) // another stream of the same session
		got, err := s.After(context.Background(), "sess", "a", 7)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 13 || got[0].Index != 8 || string(got[12].Data) != "e20" {
			t.Fatalf("%s: replay after 7 = %d events from %v", name, len(got), got)
		}
		for i, e := range got {
			if e.Index != int64(8+i) {
				t.Fatalf("%s: event %d has index %d", name, i, e.Index)
			}
		}
		if got, _ := s.After(context.Background(), "sess", "a", 20); len(got) != 0 {
			t.Errorf("%s: replay after the last event gave %d", name, len(got))
		}
	}
}

// MAXLEN eviction in Redis, and the byte cap in memory, give ErrPurged for a
// cursor before what is left, never a partial replay.
func TestEvictionGivesPurged(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	r := NewRedis(rdb, &RedisOptions{MaxLen: 10})
	appendN(t, r, "s", "x", 0, 999)
	if _, err := r.After(context.Background(), "s", "x", 5); !errors.Is(err, ErrPurged) {
		t.Errorf("redis: replay from an evicted cursor: %v, want ErrPurged", err)
	}
	if got, err := r.After(context.Background(), "s", "x", 995); err != nil || len(got) != 4 {
		t.Errorf("redis: recent replay: %d events, %v", len(got), err)
	}
	// MAXLEN is exact, as the simulator trims: the last 10 events stay, the
	// 11th from the end is gone ("~" would keep up to a node more).
	if got, err := r.After(context.Background(), "s", "x", 989); err != nil || len(got) != 10 {
		t.Errorf("redis: replay of the last 10 events: %d events, %v", len(got), err)
	}
	if got, err := r.After(context.Background(), "s", "x", 988); !errors.Is(err, ErrPurged) {
		t.Errorf("redis: replay from the 11th event from the end: %d events, %v, want ErrPurged", len(got), err)
	}
	m := NewMemory(100, 0) // 100 bytes: about 30 events of 3 bytes
	appendN(t, m, "s", "x", 0, 99)
	if m.Bytes() > 100 {
		t.Errorf("memory holds %d bytes, over its cap", m.Bytes())
	}
	if _, err := m.After(context.Background(), "s", "x", 5); !errors.Is(err, ErrPurged) {
		t.Errorf("memory: %v, want ErrPurged", err)
	}
	if _, err := m.After(context.Background(), "s", "nope", 5); !errors.Is(err, ErrUnknownStream) {
		t.Errorf("memory: unknown stream: %v", err)
	}
}

// A follower on another replica reads the stream live, to its result.
func TestFollowLive(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	r := NewRedis(rdb, nil)
	done := make(chan error, 1)
	go func() {
		for i := int64(0); i <= 30; i++ {
			if err := r.Append(context.Background(), "s", "live", Event{Index: i, Data: []byte("x"), Final: i == 30}); err != nil {
				done <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		done <- nil
	}()
	cursor := int64(-1)
	var final bool
	for deadline := time.Now().Add(10 * time.Second); !final && time.Now().Before(deadline); {
		evs, err := r.Follow(context.Background(), "s", "live", cursor, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Index != cursor+1 {
				t.Fatalf("followed %d after %d", e.Index, cursor)
			}
			cursor, final = e.Index, e.Final
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !final || cursor != 30 {
		t.Errorf("followed to %d, final %v", cursor, final)
	}
}

// A lease that is not renewed runs out: that is how a follower knows the
// call was orphaned.
func TestLeaseRunsOut(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	r := NewRedis(rdb, nil)
	ctx := context.Background()
	if err := r.Lease(ctx, "s", "c", 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.Leased(ctx, "s", "c"); !ok {
		t.Fatal("lease not held right after taking it")
	}
	time.Sleep(400 * time.Millisecond)
	if ok, _ := r.Leased(ctx, "s", "c"); ok {
		t.Error("the lease outlived its time")
	}
}

// Sessions are shared records; closing one deletes its streams.
func TestSessions(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	r := NewRedis(rdb, &RedisOptions{SessionTTL: time.Minute})
	ctx := context.Background()
	if ok, _ := r.SessionExists(ctx, "s"); ok {
		t.Fatal("a session exists before it is created")
	}
	r.CreateSession(ctx, "s")
	appendN(t, r, "s", "x", 0, 3)
	if ok, _ := r.SessionExists(ctx, "s"); !ok {
		t.Fatal("created session not found")
	}
	if err := r.SessionClosed(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.SessionExists(ctx, "s"); ok {
		t.Error("closed session still exists")
	}
	if _, err := r.After(ctx, "s", "x", 0); !errors.Is(err, ErrPurged) {
		t.Errorf("replay of a closed session's stream: %v, want ErrPurged", err)
	}
}

// SIGSTOP makes every call fail after the client's timeout (a store
// outage); SIGCONT brings it back. A restart without persistence loses
// everything.
func TestOutageAndRestart(t *testing.T) {
	t.Parallel()
	srv, rdb := startRedis(t)
	r := NewRedis(rdb, nil)
	ctx := context.Background()
	appendN(t, r, "s", "x", 0, 4)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := r.Append(ctx, "s", "x", Event{Index: 5, Data: []byte("lost")})
	if err == nil {
		t.Fatal("append to a stopped redis-server succeeded")
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("the failure came after %v, not after the timeout", took)
	}
	if err := srv.Cont(); err != nil {
		t.Fatal(err)
	}
	var recovered bool
	for i := 0; i < 50 && !recovered; i++ {
		recovered = r.Append(ctx, "s", "x", Event{Index: 6, Data: []byte("after")}) == nil
		time.Sleep(20 * time.Millisecond)
	}
	if !recovered {
		t.Fatal("no recovery after SIGCONT")
	}
	// The append that timed out may still have been applied once Redis woke
	// up (its bytes were already in the socket), or not: either way the
	// replay is complete or refused, never partial.
	evs, err := r.After(ctx, "s", "x", 4)
	switch {
	case errors.Is(err, ErrPurged):
	case err == nil && len(evs) == 2 && evs[0].Index == 5 && evs[1].Index == 6:
	default:
		t.Errorf("replay across the outage: %v %v; want events 5 and 6, or ErrPurged", evs, err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	var after error
	for i := 0; i < 50; i++ {
		if _, after = r.After(ctx, "s", "x", 0); after == nil || errors.Is(after, ErrPurged) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !errors.Is(after, ErrPurged) {
		t.Errorf("replay after a restart without persistence: %v, want ErrPurged", after)
	}
}

// An append that never happened leaves a gap, and a replay across it is
// refused rather than partial.
func TestGapIsPurged(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	r := NewRedis(rdb, nil)
	appendN(t, r, "s", "g", 0, 4)
	appendN(t, r, "s", "g", 6, 8) // 5 was never stored
	if _, err := r.After(context.Background(), "s", "g", 4); !errors.Is(err, ErrPurged) {
		t.Errorf("replay across a gap: %v, want ErrPurged", err)
	}
	if evs, err := r.After(context.Background(), "s", "g", 6); err != nil || len(evs) != 2 {
		t.Errorf("replay after the gap: %v %v", evs, err)
	}
}

// After Close an append fails with ErrClosed instead of waiting forever.
func TestRedisAppendAfterClose(t *testing.T) {
	_, rdb := startRedis(t)
	r := NewRedis(rdb, nil)
	if err := r.Append(context.Background(), "s", "x", Event{Index: 0}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	done := make(chan error, 1)
	go func() { done <- r.Append(context.Background(), "s", "x", Event{Index: 1}) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("append after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("append after Close hangs")
	}
}

// StreamBytes sums MEMORY USAGE over the event streams only: it grows with
// the events held, leaves session records out, and falls to 0 once the
// sessions are closed.
func TestStreamBytes(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	ctx := context.Background()
	s := NewRedis(rdb, nil)
	defer s.Close()
	if n, err := StreamBytes(ctx, rdb); err != nil || n != 0 {
		t.Fatalf("empty Redis: %d bytes, %v", n, err)
	}
	if err := s.CreateSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if n, err := StreamBytes(ctx, rdb); err != nil || n != 0 {
		t.Fatalf("a session record and no stream: %d bytes, %v", n, err)
	}
	var want int64
	for i, name := range []string{"a", "b", "c"} {
		appendN(t, s, "s1", name, 0, int64(100*(i+1)))
	}
	for _, name := range []string{"a", "b", "c"} {
		n, err := rdb.MemoryUsage(ctx, streamKey("s1", name), 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		want += n
	}
	got, err := StreamBytes(ctx, rdb)
	if err != nil || got != want || got < 600*10 {
		t.Fatalf("three streams of 101, 201 and 301 events: %d bytes (%v), MEMORY USAGE sums to %d", got, err, want)
	}
	appendN(t, s, "s2", "a", 0, 300)
	if more, err := StreamBytes(ctx, rdb); err != nil || more <= got {
		t.Errorf("another 301 events: %d bytes (%v), was %d", more, err, got)
	}
	for _, sess := range []string{"s1", "s2"} {
		if err := s.SessionClosed(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := StreamBytes(ctx, rdb); err != nil || n != 0 {
		t.Errorf("every session closed: %d bytes, %v", n, err)
	}
}

// The store model's Redis memory (topology.DefaultStore.RedisStreamCost)
// against MEMORY USAGE of streams the live store wrote, at message sizes
// from a few bytes to more than a node and at lengths from one event to
// ten nodes: within 2% everywhere (it is within 0.6% on Redis 7.0; the rest
// of the difference is the key's name).
func TestRedisStreamModel(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	ctx := context.Background()
	s := NewRedis(rdb, nil)
	defer s.Close()
	for _, payload := range []int{1, 100, 256, 1000, 5000} {
		cost := topology.DefaultStore.RedisStreamCost(payload)
		msg := bytes.Repeat([]byte("x"), topology.MessageBytes(payload))
		stream := fmt.Sprint(payload)
		lengths := []int64{1, cost.PerNode, cost.PerNode + 1, 3*cost.PerNode + 1, 3*cost.PerNode + 1 + cost.PerNode/2, 10 * cost.PerNode}
		var n int64
		for _, at := range lengths {
			for ; n < at; n++ {
				if err := s.Append(ctx, "model", stream, Event{Index: n, Data: msg}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := rdb.MemoryUsage(ctx, streamKey("model", stream), 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := cost.Bytes(n); math.Abs(float64(want-got)) > 0.02*float64(got) {
				t.Errorf("payload %d, %d events (%d per node): the model says %d bytes, MEMORY USAGE %d", payload, n, cost.PerNode, want, got)
			}
		}
	}
}

// A call's stream as the replica writes it (live/replica): the empty
// priming event, progress notifications, then the result, which names a
// second field. The model (RedisStreamCost.Stream) follows it through the
// node boundaries, where a uniform count would be a whole node off: a
// 10-event call fits one node.
func TestRedisCallStreamModel(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	ctx := context.Background()
	s := NewRedis(rdb, nil)
	defer s.Close()
	cost := topology.DefaultStore.RedisStreamCost(256)
	msg := bytes.Repeat([]byte("x"), topology.MessageBytes(256))
	result := bytes.Repeat([]byte("r"), topology.ResultBytes)
	for _, e := range []int64{1, 2, 9, 10, 11, 12, 20, 21, 50, 100} {
		stream := fmt.Sprint("call", e)
		check := func(progress int64, final bool) {
			t.Helper()
			got, err := rdb.MemoryUsage(ctx, streamKey("model", stream), 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := cost.Stream(progress, true, final); math.Abs(float64(want-got)) > 0.02*float64(got) {
				t.Errorf("a %d-event call, %d progress events in, result %v: the model says %d bytes, MEMORY USAGE %d", e, progress, final, want, got)
			}
		}
		if err := s.Append(ctx, "model", stream, Event{Index: 0}); err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i < e; i++ {
			if err := s.Append(ctx, "model", stream, Event{Index: i, Data: msg}); err != nil {
				t.Fatal(err)
			}
		}
		check(e-1, false) // still running: the result is yet to come
		if err := s.Append(ctx, "model", stream, Event{Index: e, Data: result, Final: true}); err != nil {
			t.Fatal(err)
		}
		check(e-1, true)
	}
}
