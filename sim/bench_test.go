package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// benchClientsEnv, set in a child process of BenchmarkMillion, makes it run
// the bench scenario once at that many clients and print its counts.
const benchClientsEnv = "STORMSIM_BENCH_CLIENTS"

// scaledBench is the bench scenario at n clients, with the arrival rate,
// the Redis concurrency (shards) and the memory store's cap per replica
// scaled by n/100,000 from its 2000 clients/s, 8 and 10 MiB, so that the
// arrivals take as long and each store is as loaded per stream.
func scaledBench(n int) (*scenario.Scenario, error) {
	k := float64(n) / 100_000
	set := []string{
		fmt.Sprintf("workload.clients=%d", n),
		fmt.Sprintf("workload.arrival_rate=%g", 2000*k),
		fmt.Sprintf("store.concurrency=%d", max(1, int(8*k+0.5))),
		fmt.Sprintf("store.memory_cap_bytes=%d", int64(float64(10<<20)*k)),
	}
	f, err := scenario.Load("testdata/bench.toml", &scenario.Options{Set: set, Target: "deploy-restart-100k"})
	if err != nil {
		return nil, err
	}
	return f.Scenario("deploy-restart-100k")
}

// childRun is what one run of the scaled bench scenario in a child process
// took.
type childRun struct {
	wall          time.Duration
	rss           int64 // peak resident set, bytes
	queue, stream int64 // queue events and stream events, over the designs
}

// BenchmarkMillion runs deploy-restart with all six designs at 100,000 and
// at 1,000,000 clients (scaledBench), each in a child process of its own
// so that its peak RSS is its own, and reports both wall times and their
// ratio, the events per client and the peak RSS per client.
func BenchmarkMillion(b *testing.B) {
	if v := os.Getenv(benchClientsEnv); v != "" {
		benchChild(b, v)
		return
	}
	for i := 0; i < b.N; i++ {
		small, big := benchChildRun(b, 100_000), benchChildRun(b, 1_000_000)
		b.ReportMetric(small.wall.Seconds(), "wall-s-100k")
		b.ReportMetric(big.wall.Seconds(), "wall-s-1m")
		b.ReportMetric(big.wall.Seconds()/small.wall.Seconds(), "wall-1m/100k")
		for _, r := range []struct {
			name string
			n    float64
			run  childRun
		}{{"100k", 1e5, small}, {"1m", 1e6, big}} {
			b.ReportMetric(float64(r.run.queue)/r.n, "queue-events/client-"+r.name)
			b.ReportMetric(float64(r.run.stream)/r.n, "stream-events/client-"+r.name)
			b.ReportMetric(float64(r.run.rss)/(1<<20), "peak-rss-MiB-"+r.name)
			b.ReportMetric(float64(r.run.rss)/r.n, "rss-bytes/client-"+r.name)
		}
	}
}

func benchChild(b *testing.B, clients string) {
	n, err := strconv.Atoi(clients)
	if err != nil {
		b.Fatalf("%s=%q: %v", benchClientsEnv, clients, err)
	}
	sc, err := scaledBench(n)
	if err != nil {
		b.Fatal(err)
	}
	out, err := Run(context.Background(), sc, nil)
	if err != nil {
		b.Fatal(err)
	}
	var q, a int64
	for _, s := range out.Stats {
		q, a = q+s.QueueEvents, a+s.ArithmeticEvents
	}
	fmt.Printf("counts %d %d\n", q, a)
}

func benchChildRun(b *testing.B, n int) childRun {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkMillion$", "-test.benchtime=1x", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", benchClientsEnv, n))
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	r := childRun{wall: time.Since(start)}
	if err != nil {
		b.Fatalf("the run at %d clients: %v\n%s", n, err, out)
	}
	r.rss = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "counts %d %d", &r.queue, &r.stream); err == nil {
			return r
		}
	}
	b.Fatalf("the run at %d clients printed no counts:\n%s", n, out)
	return r
}
