package calibrate

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/redisd"
)

// BenchmarkCalibrateRedis measures a private redis-server as TestMeasureRealRedis
// does (1 KB events, concurrency 1 and 16), with full one-second steps, and
// reports what this host's Redis sustains beside docs/domain.md §5's figures for
// 1 KB events under load: XADD p50 0.3–0.5 ms and p99 0.8–1.8 ms at
// concurrency 16, 65–88k appends/s one at a time, ≈205k/s pipelined. It
// asserts no speed: how fast a machine is, is a figure, not a test. make
// bench-live runs it.
func BenchmarkCalibrateRedis(b *testing.B) {
	srv, err := redisd.Start(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 16})
	defer rdb.Close()
	for i := range b.N {
		res, err := Measure(context.Background(), rdb, &Options{
			EventBytes: 1024, Concurrency: []int{16}, Step: time.Second,
			Rand: rand.New(rand.NewPCG(1, uint64(i))),
		})
		if err != nil {
			b.Fatal(err)
		}
		var one, pipe, replay float64
		for _, s := range res.Steps {
			one, pipe, replay = max(one, s.AppendOpsPerS), max(pipe, s.PipelinedOpsPerS), max(replay, s.ReplayOpsPerS)
		}
		c16 := res.Steps[len(res.Steps)-1].Append
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(one, "appends/s")
		b.ReportMetric(pipe, "pipelined-appends/s")
		b.ReportMetric(replay, "replays-of-100/s")
		b.ReportMetric(ms(res.Append.P50), "append-p50-ms@1")
		b.ReportMetric(ms(c16.P50), "append-p50-ms@16")
		b.ReportMetric(ms(c16.P99), "append-p99-ms@16")
		b.ReportMetric(float64(res.AppendCost)/float64(time.Microsecond), "append-cpu-µs")
		b.Logf("appends %.0f/s one at a time (§5: 65–88k), %.0f/s pipelined (§5: ≈205k); at concurrency 16 p50 %v (§5: 0.3–0.5 ms), p99 %v (§5: 0.8–1.8 ms)",
			one, pipe, c16.P50, c16.P99)
	}
}
