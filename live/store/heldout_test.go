package store

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// The store model on cases it was never fitted to: calibrate measures
// 256-byte payloads, and TestRedisStreamModel and TestRedisCallStreamModel
// hold the model at payloads of 1, 100, 256, 1,000 and 5,000 bytes and
// calls of 1 to 100 events. Here, payloads of 640 and 2,900 bytes and calls
// of 37 and 163 events (past the 100 entries of a node), written the way
// the replica writes them (priming event, progress, result), several calls
// to a session as a run has them, against MEMORY USAGE on a private
// redis-server: the sum over the session's streams, which is what the live
// engine's store_peak_bytes adds up, within 2%.
func TestRedisStoreModelHeldOut(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	ctx := context.Background()
	s := NewRedis(rdb, nil)
	defer s.Close()
	result := bytes.Repeat([]byte("r"), topology.ResultBytes)
	for _, payload := range []int{640, 2900} {
		cost := topology.DefaultStore.RedisStreamCost(payload)
		msg := bytes.Repeat([]byte("x"), topology.MessageBytes(payload))
		for _, e := range []int64{37, 163} {
			session := fmt.Sprintf("held-out-%d-%d", payload, e)
			var want, got int64
			for call := range 3 {
				stream := fmt.Sprint("call", call)
				if err := s.Append(ctx, session, stream, Event{Index: 0}); err != nil {
					t.Fatal(err)
				}
				progress := e - 1
				if call == 2 {
					progress = e / 2 // a call still running when the store is read
				}
				for i := int64(1); i <= progress; i++ {
					if err := s.Append(ctx, session, stream, Event{Index: i, Data: msg}); err != nil {
						t.Fatal(err)
					}
				}
				final := call < 2
				if final {
					if err := s.Append(ctx, session, stream, Event{Index: e, Data: result, Final: true}); err != nil {
						t.Fatal(err)
					}
				}
				n, err := rdb.MemoryUsage(ctx, streamKey(session, stream), 0).Result()
				if err != nil {
					t.Fatal(err)
				}
				want += cost.Stream(progress, true, final)
				got += n
			}
			diff := float64(want-got) / float64(got)
			t.Logf("payload %d B, calls of %d events: the model says %d bytes, MEMORY USAGE %d (%+.2f%%)", payload, e, want, got, 100*diff)
			if math.Abs(diff) > 0.02 {
				t.Errorf("payload %d B, calls of %d events: the model says %d bytes, MEMORY USAGE %d: %+.2f%%, beyond 2%%", payload, e, want, got, 100*diff)
			}
		}
	}
}
