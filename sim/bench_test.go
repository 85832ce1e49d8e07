package sim

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/scenario"
)

// benchScenario is the pinned workload of `make bench`: deploy-restart at
// 100,000 clients with all six designs (sim/testdata/bench.toml).
func benchScenario(b *testing.B) *scenario.Scenario {
	b.Helper()
	f, err := scenario.Load("testdata/bench.toml", nil)
	if err != nil {
		b.Fatal(err)
	}
	sc, err := f.Scenario("deploy-restart-100k")
	if err != nil {
		b.Fatal(err)
	}
	return sc
}

// BenchmarkEngine runs the pinned workload and reports the queue events
// processed, the stream events counted arithmetically, the wall time, and
// the cost per queue event relative to a bare container/heap pop+push at the
// same pending count, measured in the same run.
func BenchmarkEngine(b *testing.B) {
	sc := benchScenario(b)
	var queueEvents, arith, pendingSum, pendingN, rounds, visits int64
	var wall, busy time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := Run(context.Background(), sc, nil)
		wall += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range out.Stats {
			queueEvents += s.QueueEvents
			arith += s.ArithmeticEvents
			pendingSum += s.PendingSum
			pendingN += s.QueueEvents
			rounds += s.PurgeRounds
			visits += s.PurgeVisits
			busy += s.Busy
		}
	}
	n := float64(b.N)
	meanPending := int(pendingSum / max(pendingN, 1))
	heapNs := bareHeapNs(meanPending)
	// Designs run in parallel, so the cost per event is each engine's own
	// loop time (all of its work, arithmetic counting included) per event.
	perEvent := float64(busy.Nanoseconds()) / float64(queueEvents)
	b.ReportMetric(float64(queueEvents)/n, "queue-events/op")
	b.ReportMetric(float64(arith)/n, "stream-events/op")
	b.ReportMetric(wall.Seconds()/n, "wall-s/op")
	b.ReportMetric(perEvent/heapNs, "cost/heap-op")
	b.ReportMetric(heapNs, "heap-ns")
	b.ReportMetric(perEvent, "ns/queue-event")
	b.ReportMetric(float64(meanPending), "pending")
	b.ReportMetric(float64(rounds)/n, "purge-rounds/op")
	b.ReportMetric(float64(visits)/n, "purge-visits/op")
}

type intHeap []int64

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// bareHeapNs is the median cost in ns of one container/heap pop+push with
// pending items queued, over five measurements after a collection.
func bareHeapNs(pending int) float64 {
	runtime.GC()
	var ms []float64
	for i := 0; i < 5; i++ {
		ms = append(ms, bareHeapOnce(pending))
	}
	slices.Sort(ms)
	return ms[2]
}

func bareHeapOnce(pending int) float64 {
	pending = max(pending, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	h := make(intHeap, pending)
	for i := range h {
		h[i] = rng.Int64N(1 << 40)
	}
	heap.Init(&h)
	const ops = 1_000_000
	start := time.Now()
	for i := 0; i < ops; i++ {
		x := heap.Pop(&h).(int64)
		heap.Push(&h, x+rng.Int64N(1<<30))
	}
	return float64(time.Since(start).Nanoseconds()) / ops
}
