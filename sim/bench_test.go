package sim

import (
	"container/heap"
	"context"
	"fmt"
	"maps"
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
	"unsafe"

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
//
// The cost per event is taken twice. cost/heap-op is each engine's loop
// time while the designs run as a run runs them, one per core at once, so
// that two engines share the cores' caches, memory bandwidth and the
// collector, while the heap op runs alone. cost/heap-op-alone runs the same
// workload a second time with one design at a time, and times both the
// engine's loop and the heap op on the CPU clock of the thread each runs
// on: the same conditions (one goroutine, the other core free for the
// collector) and the same clock, which leaves out the time other work on a
// shared machine holds the core (that work still slows both through the
// caches).
func BenchmarkEngine(b *testing.B) {
	sc := benchScenario(b)
	var shared, alone engineRuns
	for i := 0; i < b.N; i++ {
		shared.run(b, sc, nil)
		alone.run(b, sc, &Options{Parallel: 1, cpuClock: true})
	}
	if shared.queueEvents != alone.queueEvents || shared.arith != alone.arith {
		b.Fatalf("one design at a time processed %d queue and %d stream events, all at once %d and %d",
			alone.queueEvents, alone.arith, shared.queueEvents, shared.arith)
	}
	if alone.cpu <= 0 {
		b.Fatal("the thread CPU clock could not be read")
	}
	n := float64(b.N)
	meanPending := int(shared.pendingSum / max(shared.queueEvents, 1))
	heapNs, heapCPU := bareHeapNs(meanPending)
	aloneNs := float64(alone.cpu.Nanoseconds()) / float64(alone.queueEvents)
	b.ReportMetric(float64(shared.queueEvents)/n, "queue-events/op")
	b.ReportMetric(float64(shared.arith)/n, "stream-events/op")
	b.ReportMetric(shared.wall.Seconds()/n, "wall-s/op")
	b.ReportMetric(alone.wall.Seconds()/n, "wall-s-alone/op")
	b.ReportMetric(shared.perEvent()/heapNs, "cost/heap-op")
	b.ReportMetric(aloneNs/heapCPU, "cost/heap-op-alone")
	b.ReportMetric(heapNs, "heap-ns")
	b.ReportMetric(heapCPU, "heap-cpu-ns")
	b.ReportMetric(shared.perEvent(), "ns/queue-event")
	b.ReportMetric(aloneNs, "cpu-ns/queue-event-alone")
	b.ReportMetric(float64(meanPending), "pending")
	b.ReportMetric(float64(shared.rounds)/n, "purge-rounds/op")
	b.ReportMetric(float64(shared.visits)/n, "purge-visits/op")
}

// engineRuns sums BenchmarkEngine's runs made one way.
type engineRuns struct {
	queueEvents, arith, pendingSum, rounds, visits int64
	wall, busy, cpu                                time.Duration
}

func (r *engineRuns) run(b *testing.B, sc *scenario.Scenario, opts *Options) {
	start := time.Now()
	out, err := Run(context.Background(), sc, opts)
	r.wall += time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range out.Stats {
		r.queueEvents += s.QueueEvents
		r.arith += s.ArithmeticEvents
		r.pendingSum += s.PendingSum
		r.rounds += s.PurgeRounds
		r.visits += s.PurgeVisits
		r.busy += s.Busy
		r.cpu += s.CPU
	}
}

// perEvent is each engine's own loop time (all of its work, arithmetic
// counting included) per queue event, in ns.
func (r *engineRuns) perEvent() float64 {
	return float64(r.busy.Nanoseconds()) / float64(max(r.queueEvents, 1))
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
// pending items queued, over five measurements after a collection: in wall
// time, and on the CPU clock of the thread it runs on (0 where that clock
// is not read).
func bareHeapNs(pending int) (wall, cpu float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.GC()
	var ws, cs []float64
	for i := 0; i < 5; i++ {
		w, c := bareHeapOnce(pending)
		ws, cs = append(ws, w), append(cs, c)
	}
	slices.Sort(ws)
	slices.Sort(cs)
	return ws[2], cs[2]
}

func bareHeapOnce(pending int) (wall, cpu float64) {
	pending = max(pending, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	h := make(intHeap, pending)
	for i := range h {
		h[i] = rng.Int64N(1 << 40)
	}
	heap.Init(&h)
	const ops = 1_000_000
	cpu0, ok := threadCPU()
	start := time.Now()
	for i := 0; i < ops; i++ {
		x := heap.Pop(&h).(int64)
		heap.Push(&h, x+rng.Int64N(1<<30))
	}
	wall = float64(time.Since(start).Nanoseconds()) / ops
	if cpu1, ok1 := threadCPU(); ok && ok1 {
		cpu = float64((cpu1 - cpu0).Nanoseconds()) / ops
	}
	return wall, cpu
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
	pending       int64 // the mean of events pending in a design's queue, per queue event
	busyNs        int64 // the engines' loop time, summed over the designs
	designs       []designRun
}

// designRun is one design's share of a childRun.
type designRun struct {
	name   string
	busyNs int64
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
		reportFloors(b, small, big)
	}
}

// reportFloors measures, in this process after both runs, bare loops
// at each run's size, and reports what the 1M run's wall time over the
// 100k run's would be if each queue event cost only that loop:
//   - heap-floor-1m/100k: a container/heap pop+push at the run's mean
//     pending count (the denominator of cost/heap-op), times the queue
//     events;
//   - touch-floor-1m/100k: one read-modify-write of a word in a random
//     record of as many client-sized records as the run has clients
//     (one touch of the client an event is for), times the queue events;
//     the records advised as the engine advises its clients (adviseHuge),
//     and once more at 1M on 4 KiB pages (touch-ns-1m-4k-pages);
//   - touch-rss-floor-1m/100k: the same touch in as many client-sized
//     records as fill the run's own peak RSS, so that the records span as
//     much memory as the whole run held, its other arrays, queue and
//     stores included, and not only its clients.
//
// It also measures what one exposed miss costs at each size: chase-ns-100k
// and chase-ns-1m are one read of a client-sized record whose index the
// previous read gave (a pointer chase through a random cycle of as many
// records as the run has clients, advised as the engine advises its
// clients), which no out-of-order execution or prefetch can overlap.
// excess-ns/queue-event is how much more the engines' loop time per queue
// event is at 1M than at 100k, and excess/chase that excess over
// chase-ns-1m − chase-ns-100k: how many exposed misses per event at 1M
// would account for all of it.
//
// And it measures what the engine's prefetch leaves of one miss at each
// size: step-ns-100k and step-ns-1m are one step of bareStepNs, a few
// hundred ns of work on a random client-sized record prefetched two steps
// ahead, and step-excess-ns their difference. prefetched-floor-1m/100k is
// the ratio the bench would read if each queue event at 1M cost what it
// costs at 100k plus that excess once: one record per event, prefetched as
// the engine prefetches, and nothing else slower.
//
// A floor above 10 says the loop alone costs more per event at 1M than
// at 100k. The engine's own loop time per queue event over the heap op
// at each size is cost/heap-op-100k and -1m.
func reportFloors(b *testing.B, small, big childRun) {
	hs, _ := bareHeapNs(int(small.pending))
	hb, _ := bareHeapNs(int(big.pending))
	ts, tb := bareTouchNs(100_000, true), bareTouchNs(1_000_000, true)
	tb4k := bareTouchNs(1_000_000, false)
	qs, qb := float64(small.queue), float64(big.queue)
	b.ReportMetric(hs, "heap-ns-100k")
	b.ReportMetric(hb, "heap-ns-1m")
	b.ReportMetric(qb*hb/(qs*hs), "heap-floor-1m/100k")
	b.ReportMetric(ts, "touch-ns-100k")
	b.ReportMetric(tb, "touch-ns-1m")
	b.ReportMetric(qb*tb/(qs*ts), "touch-floor-1m/100k")
	b.ReportMetric(tb4k, "touch-ns-1m-4k-pages")
	b.ReportMetric(float64(small.busyNs)/qs/hs, "cost/heap-op-100k")
	b.ReportMetric(float64(big.busyNs)/qb/hb, "cost/heap-op-1m")
	rec := int64(unsafe.Sizeof(client{}))
	rs, rb := bareTouchNs(int(small.rss/rec), true), bareTouchNs(int(big.rss/rec), true)
	b.ReportMetric(rs, "touch-ns-rss-100k")
	b.ReportMetric(rb, "touch-ns-rss-1m")
	b.ReportMetric(qb*rb/(qs*rs), "touch-rss-floor-1m/100k")
	cs, cb := bareChaseNs(100_000), bareChaseNs(1_000_000)
	b.ReportMetric(cs, "chase-ns-100k")
	b.ReportMetric(cb, "chase-ns-1m")
	excess := float64(big.busyNs)/qb - float64(small.busyNs)/qs
	b.ReportMetric(excess, "excess-ns/queue-event")
	if cb > cs {
		b.ReportMetric(excess/(cb-cs), "excess/chase")
	}
	ps, pb := bareStepNs(100_000), bareStepNs(1_000_000)
	b.ReportMetric(ps, "step-ns-100k")
	b.ReportMetric(pb, "step-ns-1m")
	b.ReportMetric(pb-ps, "step-excess-ns")
	if per := float64(small.busyNs) / qs; per > 0 {
		b.ReportMetric(qb/qs*(1+(pb-ps)/per), "prefetched-floor-1m/100k")
	}
	reportDesigns(b, small, big)
}

// reportDesigns reports each design's own engine loop time at 1M, in
// seconds (loop-s-1m-<design>) and over its loop time at 100k
// (loop-1m/100k-<design>), and the 1M run's wall time over its designs'
// loop times summed and shared out over the designs run at once
// (wall/loops-1m): 1 when the cores were never left idle and the run did
// nothing but loop, more when a long design ran on alone at the end or the
// setup and the rows took their share. The designs share the clients'
// and attempts' arrays and the queue, and differ in their stores; one
// design's ratio standing out from the others' points at what only it has,
// or at the design it ran beside (Run runs two at a time on two cores).
func reportDesigns(b *testing.B, small, big childRun) {
	at100k := map[string]designRun{}
	for _, d := range small.designs {
		at100k[d.name] = d
	}
	for _, d := range big.designs {
		b.ReportMetric(float64(d.busyNs)/1e9, "loop-s-1m-"+d.name)
		if s, ok := at100k[d.name]; ok && s.busyNs > 0 {
			b.ReportMetric(float64(d.busyNs)/float64(s.busyNs), "loop-1m/100k-"+d.name)
		}
	}
	if big.busyNs > 0 {
		b.ReportMetric(big.wall.Seconds()/(float64(big.busyNs)/1e9/float64(parallelism())), "wall/loops-1m")
	}
}

// bareTouchNs is the median cost in ns of one read-modify-write of a word
// in a random one of n records the size of the engine's client, the draw of
// its index included (the same at both sizes, so it lowers the floor's
// ratio), over five measurements. With huge, the records' pages are advised
// as the engine advises its clients' (adviseHuge); without, they are the
// kernel's default 4 KiB pages, for the difference the advice makes.
func bareTouchNs(n int, huge bool) float64 {
	type record struct {
		hot  uint64
		rest [unsafe.Sizeof(client{}) - 8]byte
	}
	recs := make([]record, n)
	if huge {
		defer unadviseHuge(adviseHuge(recs))
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range recs { // fault every page in before timing
		recs[i].hot = rng.Uint64()
	}
	const ops = 10_000_000
	var ws []float64
	for range 5 {
		start := time.Now()
		for range ops {
			recs[rng.IntN(n)].hot++
		}
		ws = append(ws, float64(time.Since(start).Nanoseconds())/ops)
	}
	slices.Sort(ws)
	return ws[2]
}

var chaseSink uint32

// bareStepNs is the median cost in ns of one step of a loop that does what
// the engine does at the least for each queue event, with the engine's
// prefetch: it prefetches the record two steps ahead (as prefetchNext does
// the event after the next), then reads two words of a random record of n
// client-sized ones, at an offset that depends on the step before, works
// on them for a few hundred ns without touching memory (a dependent chain
// of shifts and xors), and writes the result back. The record's indices
// are drawn beforehand, so the prefetch knows them as the heap knows its
// next events. Over three measurements, the records advised as the engine
// advises its clients.
func bareStepNs(n int) float64 {
	type record struct {
		hot [unsafe.Sizeof(client{}) / 8]uint64
	}
	recs := make([]record, n)
	defer unadviseHuge(adviseHuge(recs))
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range recs {
		recs[i].hot[0] = rng.Uint64()
	}
	const ops, ahead = 2_000_000, 2
	idx := make([]int32, ops+ahead)
	for i := range idx {
		idx[i] = int32(rng.IntN(n))
	}
	var ws []float64
	x := uint64(1)
	for range 3 {
		start := time.Now()
		for i := range ops {
			prefetchLines(unsafe.Pointer(&recs[idx[i+ahead]]), clientLines)
			r := &recs[idx[i]]
			x += r.hot[x&7] + r.hot[len(r.hot)-1]
			for range 200 {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
			}
			r.hot[0] = x
		}
		ws = append(ws, float64(time.Since(start).Nanoseconds())/ops)
	}
	chaseSink = uint32(x)
	slices.Sort(ws)
	return ws[1]
}

// bareChaseNs is the median cost in ns of one dependent read in n records
// the size of the engine's client: each record holds the index of the next
// in one random cycle through all n, so every read waits for the one
// before it, over five measurements. The records' pages are advised as the
// engine advises its clients'.
func bareChaseNs(n int) float64 {
	type record struct {
		next uint32
		rest [unsafe.Sizeof(client{}) - 4]byte
	}
	recs := make([]record, n)
	defer unadviseHuge(adviseHuge(recs))
	perm := rand.New(rand.NewPCG(3, 3)).Perm(n)
	for i := range n {
		recs[perm[i]].next = uint32(perm[(i+1)%n])
	}
	const ops = 5_000_000
	var ws []float64
	p := uint32(perm[0])
	for range 5 {
		start := time.Now()
		for range ops {
			p = recs[p].next
		}
		ws = append(ws, float64(time.Since(start).Nanoseconds())/ops)
	}
	chaseSink = p // keeps the chase from being optimized away
	slices.Sort(ws)
	return ws[2]
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
	var q, a, pending int64
	var busy time.Duration
	for _, name := range slices.Sorted(maps.Keys(out.Stats)) {
		s := out.Stats[name]
		q, a = q+s.QueueEvents, a+s.ArithmeticEvents
		pending, busy = pending+s.PendingSum, busy+s.Busy
		fmt.Printf("design %s %d\n", name, s.Busy.Nanoseconds())
	}
	fmt.Printf("counts %d %d %d %d %d\n", q, a, pending/max(q, 1), busy.Nanoseconds(), peakRSS())
}

// peakRSS is this process's own peak resident set in bytes (VmHWM in
// /proc/self/status), -1 where there is none. The rusage a parent reads at
// wait is no measure of a child's own: Linux carries into the child's
// ru_maxrss the high-water mark of the address space it was exec'd from,
// which for a child Go starts is the parent's (clone with CLONE_VM), so a
// child smaller than the parent reported the parent's peak.
func peakRSS() int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

func benchChildRun(b *testing.B, n int) childRun {
	b.Helper()
	return benchChildUnder(b, n, nil, nil)
}

// benchChildUnder is benchChildRun with the child started under the
// command wrap, when there is one (BenchmarkMillionWork's valgrind), and
// with env added to its environment.
func benchChildUnder(b *testing.B, n int, wrap, env []string) childRun {
	b.Helper()
	args := append(slices.Clone(wrap), os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkMillion$", "-test.benchtime=1x", "-test.count=1", "-test.timeout=0")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(append(os.Environ(), env...), fmt.Sprintf("%s=%d", benchClientsEnv, n))
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	r := childRun{wall: time.Since(start)}
	if err != nil {
		b.Fatalf("the run at %d clients: %v\n%s", n, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		var d designRun
		if _, err := fmt.Sscanf(line, "design %s %d", &d.name, &d.busyNs); err == nil {
			r.designs = append(r.designs, d)
			continue
		}
		if _, err := fmt.Sscanf(line, "counts %d %d %d %d %d", &r.queue, &r.stream, &r.pending, &r.busyNs, &r.rss); err == nil {
			if r.rss < 0 { // no /proc: the rusage, which may be the parent's peak (peakRSS)
				r.rss = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
			}
			return r
		}
	}
	b.Fatalf("the run at %d clients printed no counts:\n%s", n, out)
	return r
}
