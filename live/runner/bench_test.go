package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/report"
)

// BenchmarkLiveStreams finds the most concurrent streams the live engine
// holds on this machine: memory-sticky with 3 replicas behind the LB (a
// process of its own), every client one call of 62 events at 1 event/s,
// the clients arriving over benchRamp seconds. A
// level is held when every stream offered at it got at least 99% of its
// events within 1 s of production and the run's saturation check was clean
// (the host kept up, and neither the clients' process nor the LB's ran out
// of open files, which at two files a stream caps the LB near 10,000). The benchmark bisects between a low and
// a high level (STORMSIM_BENCH_STREAMS, default 2000..12000; the high one
// is taken as not held) down to STORMSIM_BENCH_STEP streams (default 1000),
// one run per level tried. It then runs the level held and the lowest
// level not held STORMSIM_BENCH_REPEAT more times each (default 1; 0 for
// none) and prints in how many runs each was held, since one run per level
// decides the bisection and a level near the knee holds on some runs and
// not on others. Last, it runs the level held once more with every
// stream cut at once (a client-drop of all of them) and times the storm's
// absorption: from the cut to the first new event of the last stream to
// recover, of which the clients' own backoff, 1 s + U(0, 1 s), is a part.
//
// For the level held it prints the CPU time per delivered event, split by
// process (this process: the clients and the runner; the LB; each replica;
// Redis, when the design has one), read from /proc/PID/stat of every child
// while it runs, and the host's lateness (the run's host block, its
// saturation verdict included). Beside the whole run's figure it prints
// the steady one: the CPU per event delivered while every stream was open,
// from 2 s after the last arrival to 2 s before the first call ends, which
// leaves out each stream's setup (a connection, an initialize, the
// notification and the call) and the judging after the run, the part the
// relay floor (BenchmarkRelayFloor) has no counterpart of. STORMSIM_BENCH_EVENTS shortens the calls
// (at least 10 events) for a quick check; STORMSIM_BENCH_STORM=off skips
// the storm run, for a measurement of one level (STORMSIM_BENCH_STREAMS=
// N-1..N with a step of 1000 or more runs the level N-1 alone).
//
// With STORMSIM_CPUPROFILE_DIR set (package live/internal/cpuprof), the LB
// and the replicas of every run write their CPU profiles there; the
// clients' is the test binary's own -cpuprofile.
//
// The open files a process may have cap a level: the clients hold one
// socket per stream, the LB two (one each side), so 20,000 files fit about
// 9,900 streams in the LB's process.
func BenchmarkLiveStreams(b *testing.B) {
	lo, hi, step, events := benchSettings(b)
	repeats := envCount(b, "STORMSIM_BENCH_REPEAT", 1, 0, "a count of runs, 0 or more")
	for range b.N {
		fmt.Printf("bisecting streams held between %d and %d (taken as not held), to %d; calls of %d events at 1 event/s\n", lo, hi, step, events)
		best := benchRun(b, lo, events, false)
		if !best.held() {
			fmt.Printf("the low level, %d streams, was not held: lower STORMSIM_BENCH_STREAMS\n", lo)
			b.ReportMetric(0, "streams-held")
			continue
		}
		failed := hi // the lowest level run and not held; hi when none was
		for l, h := lo, hi; h-l > step; {
			mid := l + max((h-l)/2/step, 1)*step
			if r := benchRun(b, mid, events, false); r.held() {
				l, best = mid, r
			} else {
				h, failed = mid, mid
			}
		}
		fmt.Printf("streams held: %d\n", best.n)
		best.print()
		b.ReportMetric(float64(best.n), "streams-held")
		best.reportMetrics(b)
		benchRepeat(b, repeats, best.n, failed, hi, events)
		if os.Getenv("STORMSIM_BENCH_STORM") == "off" {
			continue
		}
		storm := benchRun(b, best.n, events, true)
		fmt.Printf("storm of %d reconnects at %d streams: absorbed in %.2f s (recovery p50 %.2f s, p99 %.2f s)\n",
			storm.stormCut, best.n, storm.storm[2], storm.storm[0], storm.storm[1])
		b.ReportMetric(storm.storm[2], "storm-absorb-s")
	}
}

// benchRepeat runs the level held, and failed (the lowest level the
// bisection ran and did not hold; none when it is hi), k more times each,
// and prints and reports the share of each one's runs that held.
func benchRepeat(b *testing.B, k, held, failed, hi, events int) {
	if k == 0 {
		return
	}
	share := func(n, ok int) float64 { // ok: the bisection's run, held or not
		for range k {
			if benchRun(b, n, events, false).held() {
				ok++
			}
		}
		fmt.Printf("streams %d: held in %d of %d runs\n", n, ok, k+1)
		return float64(ok) / float64(k+1)
	}
	b.ReportMetric(share(held, 1), "held-share-at-level")
	if failed < hi {
		b.ReportMetric(share(failed, 0), "held-share-above")
	}
}

// benchSettings reads the benchmark's settings from the environment.
func benchSettings(b *testing.B) (lo, hi, step, events int) {
	lo, hi, step, events = 2000, 12000, 1000, 62
	if v := os.Getenv("STORMSIM_BENCH_STREAMS"); v != "" {
		a, c, ok := strings.Cut(v, "..")
		var err1, err2 error
		lo, err1 = strconv.Atoi(strings.TrimSpace(a))
		hi, err2 = strconv.Atoi(strings.TrimSpace(c))
		if !ok || err1 != nil || err2 != nil || lo <= 0 || hi <= lo {
			b.Fatalf("STORMSIM_BENCH_STREAMS=%q: want LOW..HIGH, two counts with 0 < LOW < HIGH", v)
		}
	}
	step = envCount(b, "STORMSIM_BENCH_STEP", step, 1, "a positive count of streams")
	events = envCount(b, "STORMSIM_BENCH_EVENTS", events, 10, "a count of at least 10 events per call")
	return lo, hi, step, events
}

// envCount is the count in the environment variable name, at least least,
// or def when it is unset; want says what a bad value should have been.
func envCount(b *testing.B, name string, def, least int, want string) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want %s", name, v, want)
	}
	return n
}

// levelResult is one run of the benchmark at n streams.
type levelResult struct {
	n, calls, onTime int
	late             int   // events that came more than 1 s after production
	lastLate         int64 // when the last of them was produced, ns into the run
	delivered        int64
	cpu              map[string]float64 // CPU seconds, by process (procRole)
	kernel           float64            // the kernel's part of cpu's seconds (system time)
	host             *report.Host
	steady           steadyCPU  // the window in which every stream was open
	storm            [3]float64 // recovery p50, p99, max in seconds, with a storm
	stormCut         int        // streams the storm cut
}

// held reports whether every stream offered got ≥ 99% of its events
// within 1 s of production and the run's saturation check is clean (the
// host kept up, and no process of the harness ran out of files).
func (r levelResult) held() bool {
	return r.calls == r.n && r.onTime == r.n && (r.host == nil || !r.host.Saturated)
}

func (r levelResult) cpuTotal() float64 {
	var s float64
	for _, v := range r.cpu {
		s += v
	}
	return s
}

// roles lists the processes of r.cpu in a fixed order.
func (r levelResult) roles() []string {
	var out []string
	for k := range r.cpu {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (r levelResult) print() {
	d := float64(max(r.delivered, 1))
	fmt.Printf("CPU per delivered event at %d streams: %.1f µs, all processes together (%d events delivered)\n", r.n, r.cpuTotal()/d*1e6, r.delivered)
	r.printSplit()
	fmt.Printf("  %-14s %7.1f µs  (%.1f s; the kernel's part of the processes' time above)\n", "kernel", r.kernel/d*1e6, r.kernel)
	r.steady.print(r.n)
	if h := r.host; h != nil {
		fmt.Printf("host at %d streams: %s; timers p99 %.1f ms (max %.1f), producers p99 %.1f ms (max %.1f), scheduler p99 %.1f ms; load generator %.2f of %d cores; load average %.2f\n",
			r.n, h.Verdict, h.TimerLatenessMS.P99, h.TimerLatenessMS.Max, h.ProducerLatenessMS.P99, h.ProducerLatenessMS.Max,
			h.SchedLatencyMS.P99, h.LoadgenCPUCores, h.Cores, h.LoadAverage)
	}
}

// printSplit prints the CPU per delivered event of each process.
func (r levelResult) printSplit() {
	d := float64(max(r.delivered, 1))
	for _, k := range r.roles() {
		fmt.Printf("  %-14s %7.1f µs  (%.1f s)\n", k, r.cpu[k]/d*1e6, r.cpu[k])
	}
}

func (r levelResult) reportMetrics(b *testing.B) {
	d := float64(max(r.delivered, 1))
	b.ReportMetric(r.cpuTotal()/d*1e6, "cpu-µs/event")
	b.ReportMetric(r.kernel/d*1e6, "kernel-µs/event")
	for _, k := range r.roles() {
		b.ReportMetric(r.cpu[k]/d*1e6, "cpu-µs/event-"+strings.ReplaceAll(k, " ", ""))
	}
	if st := r.steady; st.delivered > 0 {
		sd := float64(st.delivered)
		b.ReportMetric(st.total()/sd*1e6, "steady-cpu-µs/event")
		b.ReportMetric(st.kernel/sd*1e6, "steady-kernel-µs/event")
		for _, k := range st.roles() {
			b.ReportMetric(st.cpu[k]/sd*1e6, "steady-cpu-µs/event-"+strings.ReplaceAll(k, " ", ""))
		}
	}
	if h := r.host; h != nil {
		b.ReportMetric(h.TimerLatenessMS.P99, "timer-p99-ms")
		b.ReportMetric(h.ProducerLatenessMS.P99, "producer-p99-ms")
		b.ReportMetric(h.SchedLatencyMS.P99, "sched-p99-ms")
	}
}

// benchRamp is how long a level's clients take to arrive, at an even
// rate. Over 10 s (700 new clients a second at 7,000 streams, each with
// its connection, initialize and call) the arrivals were what a level
// failed on: every event late by more than 1 s at 7,000 streams had been
// produced during the ramp, none after it, while 8,000 streams arriving
// over 20 s had no late event at all. The level measures the streams held,
// so the ramp is 20 s; the storm run measures a burst of connections.
// The commit that set it gives the runs.
const benchRamp = 20

// benchRun runs one level: n clients arriving over benchRamp seconds, each
// one call of events events. With storm, every open stream is cut halfway
// through the calls, after the last arrival.
func benchRun(b *testing.B, n, events int, storm bool) levelResult {
	b.Helper()
	sets := []string{
		"replicas=3", fmt.Sprintf("duration=%ds", events+benchRamp+3), "drain=5s",
		"workload.clients=" + strconv.Itoa(n), "workload.arrival_rate=" + strconv.Itoa(max(n/benchRamp, 1)),
		"workload.calls_per_client=1", "workload.think=0s", "workload.events_min=" + strconv.Itoa(events), "workload.events_max=" + strconv.Itoa(events),
		"workload.event_rate=1", "workload.drop_every=0s",
		"store.memory_cap_bytes=1073741824",
	}
	sc := load(b, "steady", sets)
	if storm {
		sc.Faults = append(sc.Faults, &faults.ClientDrop{Kind_: "client-drop", At: time.Duration(benchRamp+events/2) * time.Second, Fraction: 1})
	}
	abs, _ := filepath.Abs("../../scenarios.toml")
	cpu := startCPUWatch()
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Set: sets, Designs: []string{"memory-sticky"}})
	if err != nil {
		cpu.stop()
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the replicas be reaped
	h := out.Histories["memory-sticky"]
	r := levelResult{n: n, calls: len(h.Calls), host: out.Report.Host}
	r.cpu, r.kernel = cpu.stop()
	r.delivered = out.Report.Design("memory-sticky").Totals.EventsDelivered
	r.steady = steadyWindow(cpu, out.Started, h, events)
	r.onTime, r.late, r.lastLate = onTimeStreams(h)
	if storm {
		r.storm, r.stormCut = stormRecovery(b, h, sc.Duration+sc.Drain)
		fmt.Printf("streams %6d, every one cut at once: %d streams cut, %d of %d calls still got >=99%% of their events within 1 s\n", n, r.stormCut, r.onTime, r.calls)
		return r
	}
	fmt.Printf("streams %6d: %6d of %d calls got >=99%% of their events within 1 s: held %v; CPU %.1f µs per delivered event\n",
		n, r.onTime, r.calls, r.held(), r.cpuTotal()/float64(max(r.delivered, 1))*1e6)
	if h := r.host; h != nil && h.Saturated {
		fmt.Printf("  the run's saturation check failed: %s\n", strings.Join(h.Reasons, "; "))
	}
	if r.late > 0 {
		fmt.Printf("  %d events came more than 1 s after production, the last of them produced %.1f s into the run (the arrivals end at %d s)\n",
			r.late, float64(r.lastLate)/1e9, benchRamp)
	}
	r.printSplit()
	r.steady.print(n)
	return r
}

// onTimeStreams counts the completed calls that got at least 99% of their
// events within 1 s of production, the events that came later than that,
// and when the last of those was produced (ns into the run).
func onTimeStreams(h *history.History) (held, late int, lastLate int64) {
	prod := map[[4]int32]int64{}
	for _, p := range h.Produced {
		if !p.Start {
			prod[[4]int32{p.Client, p.Seq, p.Attempt, p.Index}] = p.T
		}
	}
	onTime := map[[2]int32]int32{}
	for _, r := range h.Receipts {
		t0, ok := prod[[4]int32{r.Client, r.Seq, r.Attempt, r.Index}]
		switch {
		case !ok || r.Index < 1:
		case r.T-t0 <= int64(time.Second):
			onTime[[2]int32{r.Client, r.Seq}]++
		default:
			late, lastLate = late+1, max(lastLate, t0)
		}
	}
	for _, c := range h.Calls {
		if c.Outcome == clients.Completed && float64(onTime[[2]int32{c.Client, c.Seq}]) >= 0.99*float64(c.E) {
			held++
		}
	}
	return held, late, lastLate
}

// stormRecovery returns the recovery p50, p99 and max in seconds of the
// streams the client-drop fault cut, from the cut to each one's first new
// event (end when it never got one), and how many it cut.
func stormRecovery(b *testing.B, h *history.History, end time.Duration) ([3]float64, int) {
	var cut int64 = -1
	for _, a := range h.Faults {
		if a.Kind == "client-drop" {
			cut = a.At
		}
	}
	after := map[[2]int32][]int64{} // each call's receipt times after the cut
	for _, r := range h.Receipts {
		if r.Index >= 1 && r.T > cut {
			k := [2]int32{r.Client, r.Seq}
			after[k] = append(after[k], r.T)
		}
	}
	var rec []float64
	for _, dr := range h.Drops {
		if dr.Cause != history.DropFault {
			continue
		}
		first := int64(end) // never recovered within the run
		for _, t := range after[[2]int32{dr.Client, dr.Seq}] {
			if t > dr.T && t < first {
				first = t
			}
		}
		rec = append(rec, float64(first-cut)/1e9)
	}
	if len(rec) == 0 {
		b.Fatal("the storm cut no stream")
	}
	slices.Sort(rec)
	return [3]float64{rec[len(rec)/2], rec[min(len(rec)-1, len(rec)*99/100)], rec[len(rec)-1]}, len(rec)
}
