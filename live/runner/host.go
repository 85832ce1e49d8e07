package runner

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// Saturation bounds: a live run whose lateness exceeds any of them at the
// 99th percentile is host_saturated and gives no verdict. They were set
// from quiet runs with a margin (docs/live.md, "A saturated host"; the
// measured figures are in docs/measurements.md, make host-lateness): an
// ordinary run on an idle 2-core machine stays well below each.
const (
	// BoundTimerP99: client timers, random drops and fault steps.
	BoundTimerP99 = 250 * time.Millisecond
	// BoundProducerP99: events against their call's schedule. Higher than
	// the timers': restarts and drains make producers late on a quiet
	// machine too (make host-lateness: up to 78 ms at p99).
	BoundProducerP99 = 400 * time.Millisecond
	// BoundSchedP99: goroutines waiting to run in the load generator. It
	// is higher: the load generator's own storms (a drop wakes hundreds of
	// clients at once) keep goroutines waiting on a machine that keeps up.
	BoundSchedP99 = 500 * time.Millisecond
)

// SaturationAdvice is what to change when a run is saturated.
const SaturationAdvice = "Make the run lighter for this machine: fewer clients (--set workload.clients=N), a smaller --parallel, " +
	"or more shards (split the designs over several runs or machines with --designs); or run it on a machine with nothing else to do."

// latenessBuckets: bucket k counts samples below 2^(k/4) µs (four per
// doubling, within 19%); the last holds everything above.
const latenessBuckets = 4 * 40

// lateness is a histogram of how late something ran, safe for concurrent
// use: the clients' timers add to it from their own goroutines.
type lateness struct {
	counts [latenessBuckets]atomic.Int64
	n      atomic.Int64
	max    atomic.Int64
	inject int64 // added to every sample: the injected-lateness test hook
}

// add records one sample of ns nanoseconds late (early counts as 0).
func (l *lateness) add(ns int64) {
	ns = max(ns, 0) + l.inject
	us := float64(ns) / 1e3
	k := 0
	if us >= 1 {
		k = min(int(math.Floor(4*math.Log2(us)))+1, latenessBuckets-1)
	}
	l.counts[k].Add(1)
	l.n.Add(1)
	for {
		m := l.max.Load()
		if ns <= m || l.max.CompareAndSwap(m, ns) {
			break
		}
	}
}

// bucketTop is the upper bound of bucket k, in ms.
func bucketTop(k int) float64 {
	if k == 0 {
		return 0.001
	}
	return math.Pow(2, float64(k)/4) / 1e3
}

// summary is the histogram's count, p50, p99 and max in ms (a quantile is
// its bucket's upper bound, never above the max).
func (l *lateness) summary() report.Lateness {
	n := l.n.Load()
	s := report.Lateness{Count: n, Max: round3(float64(l.max.Load()) / 1e6)}
	if n == 0 {
		return s
	}
	q := func(p float64) float64 {
		rank := int64(math.Ceil(p * float64(n)))
		var c int64
		for k := range l.counts {
			if c += l.counts[k].Load(); c >= rank {
				return round3(min(bucketTop(k), s.Max))
			}
		}
		return s.Max
	}
	s.P50, s.P99 = q(0.5), q(0.99)
	return s
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// hostWatch measures the load generator while a run goes on.
type hostWatch struct {
	inject   time.Duration
	timers   lateness // client timers, drops, fault steps
	producer lateness // events against their schedule
	start    time.Time
	cpu0     time.Duration
	sched0   *metrics.Float64Histogram
	// noFiles counts the connections the clients could not open for want
	// of a file (dial); short lists what else of the harness ran out of
	// files (an LB process, noteShort).
	noFiles atomic.Int64
	mu      sync.Mutex
	short   []string
}

// dial is d's DialContext, counting the connections that fail for want of
// a file: the load generator's own limit, a saturation reason.
func (w *hostWatch) dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil && lb.OutOfFiles(err) {
			w.noFiles.Add(1)
		}
		return c, err
	}
}

// noteShort records that a process of the harness (not the design under
// test) ran out of files, as a saturation reason.
func (w *hostWatch) noteShort(why string) {
	w.mu.Lock()
	w.short = append(w.short, why)
	w.mu.Unlock()
}

// shortReasons are the saturation reasons of files run short.
func (w *hostWatch) shortReasons() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.short)
	if n := w.noFiles.Load(); n > 0 {
		out = append(out, fmt.Sprintf("the load generator ran out of open files (limit %d): %d connections to the endpoint could not be opened", lb.FileLimit(), n))
	}
	return out
}

// schedMetric is the Go scheduler's latency histogram.
const schedMetric = "/sched/latencies:seconds"

func newHostWatch(inject time.Duration) *hostWatch {
	w := &hostWatch{inject: inject, start: time.Now(), cpu0: processCPU(), sched0: readSched()}
	w.timers.inject, w.producer.inject = int64(inject), int64(inject)
	return w
}

func readSched() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// schedSince summarises the scheduler latencies since the watch began: the
// difference of the two cumulative histograms.
func (w *hostWatch) schedSince() report.Lateness {
	now := readSched()
	if now == nil || w.sched0 == nil || len(now.Counts) != len(w.sched0.Counts) {
		return report.Lateness{}
	}
	counts := make([]uint64, len(now.Counts))
	var n uint64
	for i := range counts {
		counts[i] = now.Counts[i] - w.sched0.Counts[i]
		n += counts[i]
	}
	s := report.Lateness{Count: int64(n)}
	if n == 0 {
		return s
	}
	// Bucket i holds [Buckets[i], Buckets[i+1]); a quantile is its upper
	// bound (the last finite one for the open top bucket).
	top := func(i int) float64 {
		b := now.Buckets[i+1]
		if math.IsInf(b, 1) {
			b = now.Buckets[i]
		}
		return round3(b * 1e3)
	}
	q := func(p float64) float64 {
		rank := uint64(math.Ceil(p * float64(n)))
		var c uint64
		for i, x := range counts {
			if c += x; c >= rank {
				return top(i)
			}
		}
		return top(len(counts) - 1)
	}
	s.P50, s.P99 = q(0.5), q(0.99)
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] > 0 {
			s.Max = top(i)
			break
		}
	}
	return s
}

// addProduced records how late each event of h's production log came
// against its call's schedule: the producer's start plus index × interval.
// Events due inside a store fault (skip) are left out: a producer blocked
// on a Redis that does not answer is the fault, not the host.
func (w *hostWatch) addProduced(h *history.History, skip func(at int64) bool) {
	type key struct {
		client, seq, attempt int32
		replica              int
	}
	start := map[key]int64{}
	for _, p := range h.Produced {
		if p.Start {
			start[key{p.Client, p.Seq, p.Attempt, p.Replica}] = p.T
		}
	}
	for _, p := range h.Produced {
		if p.Start || p.Index <= 0 {
			continue
		}
		t0, ok := start[key{p.Client, p.Seq, p.Attempt, p.Replica}]
		if !ok {
			continue
		}
		due := t0 + int64(p.Index)*h.Interval
		if skip(due) {
			continue
		}
		w.producer.add(p.T - due)
	}
}

// verdict is the host block of the run, whose clients sent requests.
func (w *hostWatch) verdict(requests int) *report.Host {
	wall := time.Since(w.start)
	h := &report.Host{
		Verdict: "ok", TimerLatenessMS: w.timers.summary(), ProducerLatenessMS: w.producer.summary(),
		SchedLatencyMS: w.schedSince(), Cores: runtime.NumCPU(), LoadAverage: loadAverage(),
		InjectedLatenessMS: float64(w.inject) / 1e6,
	}
	if wall > 0 {
		h.LoadgenCPUCores = round3(float64(processCPU()-w.cpu0) / float64(wall))
		h.LoadgenRequestsPerS = round3(float64(requests) / wall.Seconds())
	}
	h.BoundsMS.TimerP99 = float64(BoundTimerP99) / 1e6
	h.BoundsMS.ProducerP99 = float64(BoundProducerP99) / 1e6
	h.BoundsMS.SchedP99 = float64(BoundSchedP99) / 1e6
	for _, c := range []struct {
		what  string
		l     report.Lateness
		bound float64
	}{
		{"client timers and scheduled drops fired", h.TimerLatenessMS, h.BoundsMS.TimerP99},
		{"producers emitted", h.ProducerLatenessMS, h.BoundsMS.ProducerP99},
		{"goroutines waited to run", h.SchedLatencyMS, h.BoundsMS.SchedP99},
	} {
		if c.l.Count > 0 && c.l.P99 > c.bound {
			h.Reasons = append(h.Reasons, fmt.Sprintf("%s %s ms late at p99, over the bound of %s ms", c.what, ms3(c.l.P99), ms3(c.bound)))
		}
	}
	h.Reasons = append(h.Reasons, w.shortReasons()...)
	if len(h.Reasons) > 0 {
		h.Verdict, h.Saturated, h.Advice = report.VerdictSaturated, true, SaturationAdvice
	}
	return h
}

func ms3(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// loadAverage is the machine's 1-minute load average, 0 where unknown.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// storeFaultAt says whether an instant (ns from the start) falls inside a
// store fault of sc, or within store.timeout plus a second after one: the
// producers' lateness there is the fault's.
func storeFaultAt(sc *scenario.Scenario) func(at int64) bool {
	type win struct{ from, until int64 }
	var wins []win
	slack := time.Second
	for _, d := range sc.Designs {
		slack = max(slack, d.Store.Timeout+time.Second)
	}
	ctxF := sc.FaultContext()
	for _, f := range sc.Faults {
		if faults.TouchesStore(f, ctxF) {
			sp := f.Span(ctxF)
			wins = append(wins, win{int64(sp.At), int64(sp.Until) + int64(slack)})
		}
	}
	return func(at int64) bool {
		for _, w := range wins {
			if at >= w.from && at <= w.until {
				return true
			}
		}
		return false
	}
}

// timer records a timer, drop or fault step that ran ns late; a nil watch
// records nothing.
func (w *hostWatch) timer(ns int64) {
	if w != nil {
		w.timers.add(ns)
	}
}
