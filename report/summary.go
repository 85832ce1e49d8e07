package report

import (
	"math"
	"sort"

	"github.com/montanaflynn/stats"
)

// LatencyBoundsMS are the histogram bucket bounds, in milliseconds: ten per
// decade from 0.1 ms to 10^7 ms (about 2.8 hours), so a CDF drawn from the
// histogram is within 26% of the true latency everywhere.
var LatencyBoundsMS = func() []float64 {
	var b []float64
	for k := -10; k <= 70; k++ {
		v := math.Pow(10, float64(k)/10)
		b = append(b, math.Round(v*1000)/1000)
	}
	return b
}()

// Summarise turns latency samples (ms) into a Latency block. The quantiles
// are nearest-rank, so each one is a sample that happened. samples is sorted
// in place.
func Summarise(samples []float64) Latency {
	l := Latency{Count: int64(len(samples))}
	l.Histogram.LeMS = append([]float64(nil), LatencyBoundsMS...)
	l.Histogram.Counts = make([]int64, len(LatencyBoundsMS))
	if len(samples) == 0 {
		return l
	}
	sort.Float64s(samples)
	data := stats.Float64Data(samples)
	q := func(p float64) *float64 {
		v, err := stats.PercentileNearestRank(data, p)
		if err != nil || math.IsNaN(v) {
			return nil
		}
		v = round3(v)
		return &v
	}
	l.P50, l.P90, l.P99 = q(50), q(90), q(99)
	mx := round3(samples[len(samples)-1])
	l.Max = &mx
	for _, s := range samples {
		i := sort.SearchFloat64s(LatencyBoundsMS, s)
		if i >= len(LatencyBoundsMS) {
			i = len(LatencyBoundsMS) - 1
		}
		l.Histogram.Counts[i]++
	}
	return l
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// BaselineWindowS is how many seconds before a fault form its baseline.
const BaselineWindowS = 30

// SmoothS is the window, in seconds, over which a rate is averaged to decide
// whether it is back within its band.
const SmoothS = 5

// RecoveryTitle heads, and RecoveryDefinition defines beside it, the
// table of each design's RecoveryAfterFaults in summary.md and report.html.
const (
	RecoveryTitle      = "Storm over: seconds from each fault until the rates settle"
	RecoveryDefinition = "The seconds from each fault until the reconnect rate and the 404 rate are back, for good, within 10% of their level in the 30 s before it, counted from the last client's arrival on (recovery_after_fault_s; never: not before the next fault or the end of the run). It times the storm as a whole, not a client: one client's wait for its next event after a drop is the recovery latency column, so a design whose clients quietly re-issue their calls can settle at once (0 s) while each of them waits long."
)

// RecoveryAfterFaults computes, for each fault, the seconds from the fault
// until the reconnect rate and the 404 rate are back, for good, within 10%
// of their mean over the BaselineWindowS seconds before the fault: the end
// of the last step, before the next fault, in which either was above the
// band. Rates are averaged over the SmoothS seconds from each step on, and
// the band also allows three standard deviations of Poisson noise around
// the baseline, so that a noisy baseline does not read as a storm.
// A fault that causes no excursion recovers in 0 s; one whose rates are
// still out of the band when the run (or the next fault) comes gets nil:
// its recovery is censored at RecoveryWindowS.
//
// steadyS is when the load reached its level (the stream workload's last
// arrival: workload.SteadyFromS). The baseline starts no earlier than the
// first whole step from it, so that a fault soon after the clients' ramp is
// not read against rates that were still climbing. A fault before that
// step has no steady level before it, and its baseline is the BaselineWindowS
// before it, ramp and all.
func RecoveryAfterFaults(s *Series, all []Fault, steadyS float64) []FaultRecovery {
	ids := RecoveryFaults(all)
	faults := make([]Fault, len(ids))
	for k, i := range ids {
		faults[k] = all[i]
	}
	out := make([]FaultRecovery, len(faults))
	n := len(s.Reconnects)
	step := s.StepS
	if step <= 0 {
		step = 1
	}
	for i, f := range faults {
		out[i].Fault = ids[i]
		at, end := recoveryWindow(faults, i, n, step)
		if at >= n {
			continue
		}
		w := max(int(BaselineWindowS/step), 1)
		lo := max(0, at-w)
		if from := int(math.Ceil(steadyS/step - 1e-9)); from < at {
			lo = max(lo, from)
		}
		base := func(xs []int64) float64 {
			if at == lo {
				return 0
			}
			var sum int64
			for _, x := range xs[lo:at] {
				sum += x
			}
			return float64(sum) / float64(at-lo)
		}
		bRe, b404 := base(s.Reconnects), base(s.HTTP404)
		// A step is back when the mean over the next SmoothS seconds is
		// within the band, so that one noisy second does not read as a storm.
		sw := max(int(SmoothS/step), 1)
		mean := func(xs []int64, k int) (float64, int) {
			hi := min(k+sw, end)
			var sum int64
			for _, x := range xs[k:hi] {
				sum += x
			}
			return float64(sum) / float64(hi-k), hi - k
		}
		in := func(xs []int64, k int, b float64) bool {
			m, n := mean(xs, k)
			return m <= 1.1*b+3*math.Sqrt(b/float64(n))
		}
		last := -1
		for k := at; k < end; k++ {
			if !in(s.Reconnects, k, bRe) || !in(s.HTTP404, k, b404) {
				last = k
			}
		}
		switch {
		case last < 0:
			z := 0.0
			out[i].Seconds = &z
		case last < end-1:
			sec := round3(float64(last+1)*step - f.AtS)
			out[i].Seconds = &sec
		}
	}
	for i, f := range faults {
		out[i].Goodput = goodputRecovery(s, f)
	}
	return out
}

// recoveryWindow is the steps [at, end) in which fault i of faults (the
// RecoveryFaults) may recover, in a series of n steps of step seconds: from
// its own step to the next fault's, or to the end of the series; the next
// fault's storm is not this one's.
func recoveryWindow(faults []Fault, i, n int, step float64) (at, end int) {
	at, end = int(faults[i].AtS/step), n
	for j := range faults {
		if nx := int(faults[j].AtS / step); j != i && nx > at && nx < end {
			end = nx
		}
	}
	return at, end
}

// RecoveryWindowS is, for each of RecoveryAfterFaults' entries, the
// seconds from its fault to the end of the window its recovery is read in
// (the next fault, or the end of the series); 0 for a fault after the
// series. A nil recovery means "not within this many seconds": a recovery
// censored there, at least this long, not an endless one.
func RecoveryWindowS(s *Series, all []Fault) []float64 {
	ids := RecoveryFaults(all)
	faults := make([]Fault, len(ids))
	for k, i := range ids {
		faults[k] = all[i]
	}
	step := s.StepS
	if step <= 0 {
		step = 1
	}
	out := make([]float64, len(faults))
	for i, f := range faults {
		if at, end := recoveryWindow(faults, i, len(s.Reconnects), step); at < end {
			out[i] = round3(float64(end)*step - f.AtS)
		}
	}
	return out
}

// KindExit marks a replica of a server the user brought exiting when
// nobody stopped it: a mark on the charts, not a scheduled fault, and it
// happened in one design only.
const KindExit = "exit"

// KindStoreUnreachable marks the live engine's Redis not answering when no
// scheduled fault stopped it (it died, or was killed from outside): like
// KindExit, an unscheduled mark of one design.
const KindStoreUnreachable = "store-unreachable"

// KindNeverReady marks a replica a fault restarted that never became ready
// again: a band from the fault to the end of the run, in one design.
const KindNeverReady = "never-ready"

// RecoveryFaults are the indices of the faults that get a time to recover:
// every scheduled fault, and no unscheduled mark.
func RecoveryFaults(faults []Fault) []int {
	var ids []int
	for i, f := range faults {
		if !f.Unscheduled && f.Kind != KindExit {
			ids = append(ids, i)
		}
	}
	return ids
}
