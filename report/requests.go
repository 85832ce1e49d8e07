package report

import "math"

// RequestTotals are the totals of a run of the open-loop request workload.
// Each count is taken where it happens: Requests = Completed + Failed +
// Pending is a check, not a definition.
type RequestTotals struct {
	Requests         int64 `json:"requests"`          // logical requests that arrived
	Attempts         int64 `json:"attempts"`          // attempts sent: first attempts and retries
	Retries          int64 `json:"retries"`           // attempts after the first
	Completed        int64 `json:"completed"`         // requests answered while their client waited
	Failed           int64 `json:"failed"`            // requests given up: out of retries, or refused by the retry budget
	Pending          int64 `json:"pending"`           // requests still waiting at the end of the run
	Timeouts         int64 `json:"timeouts"`          // attempts abandoned at the request timeout
	Shed             int64 `json:"shed"`              // attempts the server dropped unserved for their age
	RefusedQueue     int64 `json:"refused_queue"`     // attempts refused because the request queue was full
	RefusedAdmission int64 `json:"refused_admission"` // attempts refused by the admission bucket or the connection rate
	RefusedBudget    int64 `json:"refused_budget"`    // retries refused by the retry budget
	// Closed-loop clients only (workload.arrivals = "closed"): handshake
	// attempts sent, handshakes answered while their client waited, and
	// attempts a reconnect trigger's restart took out of the queue.
	Handshakes    int64 `json:"handshakes,omitempty"`
	Connects      int64 `json:"connects,omitempty"`
	LostInRestart int64 `json:"lost_in_restart,omitempty"`
	// ServiceS is the workers' time spent serving; WastedS the part spent
	// on attempts whose client had left by the time the answer was ready.
	ServiceS float64 `json:"service_s"`
	WastedS  float64 `json:"wasted_s"`
}

// WastedFraction is wasted_work_fraction: WastedS / ServiceS, 0 when the
// workers served nothing.
func (t *RequestTotals) WastedFraction() float64 {
	if t.ServiceS <= 0 {
		return 0
	}
	return t.WastedS / t.ServiceS
}

// GoodputRecovery is how a fault's trigger left goodput: its level before
// the fault (the mean over BaselineWindowS seconds), the highest SmoothS
// mean after the trigger ended as a fraction of it, and RecoveredS: the
// seconds from the end of the trigger until goodput was back at
// RecoveredLevel of that level and held it for RecoveredHoldS, judged
// before arrivals stop (Series.JudgeUntilS). Null RecoveredS is stuck.
type GoodputRecovery struct {
	PrePerS        float64  `json:"pre_per_s"`
	AfterPeakRatio float64  `json:"after_peak_ratio"`
	RecoveredS     *float64 `json:"recovered_s"`
	// AttemptsAfterPerS is the mean rate of attempts sent (first attempts
	// and retries) from the end of the trigger until arrivals stop: the
	// load the retries hold the server at.
	AttemptsAfterPerS float64 `json:"attempts_after_per_s"`
}

// RecoveredLevel and RecoveredHoldS define "recovered": goodput, averaged
// over SmoothS, at RecoveredLevel of its pre-trigger level or above (less
// three standard deviations of Poisson noise on that mean) from every step
// of a RecoveredHoldS window on.
const (
	RecoveredLevel = 0.9
	RecoveredHoldS = 10
)

// goodputRecovery is f's GoodputRecovery in s, nil when s has no goodput
// or the fault starts after it.
func goodputRecovery(s *Series, f Fault) *GoodputRecovery {
	w := goodputWindowOf(s, f)
	step, g, judge, at, until, lo := w.step, s.Goodput, w.judge, w.at, w.until, w.lo
	if g == nil || at >= judge {
		return nil
	}
	rate := func(a, b int) float64 { // mean per second over steps [a, b)
		var sum int64
		for _, x := range g[a:b] {
			sum += x
		}
		return float64(sum) / (float64(b-a) * step)
	}
	out := &GoodputRecovery{}
	if at > lo {
		out.PrePerS = round3(rate(lo, at))
	}
	sw := max(int(SmoothS/step), 1)
	hold := max(int(RecoveredHoldS/step), 1)
	var peak float64
	ok := make([]bool, 0, max(judge-sw+1-until, 0))
	// As in the reconnect rule, the level allows three standard deviations
	// of Poisson noise on a SmoothS mean, so that noise does not read as
	// a relapse.
	level := RecoveredLevel*out.PrePerS - 3*math.Sqrt(out.PrePerS/(float64(sw)*step))
	for j := until; j+sw <= judge; j++ {
		r := rate(j, j+sw)
		peak = max(peak, r)
		ok = append(ok, r >= level)
	}
	if out.PrePerS > 0 {
		out.AfterPeakRatio = round3(peak / out.PrePerS)
	}
	if judge > until && len(s.Attempts) >= judge {
		var sum int64
		for _, x := range s.Attempts[until:judge] {
			sum += x
		}
		out.AttemptsAfterPerS = round3(float64(sum) / (float64(judge-until) * step))
	}
	run := 0
	for k, good := range ok {
		if !good {
			run = 0
			continue
		}
		if run++; run == hold {
			sec := round3(float64(until+k+1-hold)*step - f.UntilS)
			out.RecoveredS = &sec
			break
		}
	}
	return out
}

// requestMetrics are the request workload's metric names.
var requestMetrics = []string{"wasted_work_fraction", "goodput_recovered_s", "goodput_after_peak_ratio", "requests_completed_fraction", "attempts_after_per_s"}

// requestMetric is Metric for the request workload's names: nil (n/a)
// for a run without them.
func (d *Design) requestMetric(name string) (*float64, bool) {
	f := func(x float64) *float64 { return &x }
	switch name {
	case "wasted_work_fraction", "requests_completed_fraction":
		t := d.Requests
		if t == nil {
			return nil, true
		}
		if name == "wasted_work_fraction" {
			return f(round3(t.WastedFraction())), true
		}
		if t.Requests == 0 {
			return f(0), true
		}
		return f(round3(float64(t.Completed) / float64(t.Requests))), true
	case "goodput_recovered_s", "goodput_after_peak_ratio", "attempts_after_per_s":
		var v *float64
		for _, r := range d.RecoveryAfterFaultS {
			g := r.Goodput
			if g == nil {
				continue
			}
			x := g.AfterPeakRatio
			if name == "attempts_after_per_s" {
				x = g.AttemptsAfterPerS
			}
			if name == "goodput_recovered_s" {
				if x = math.Inf(1); g.RecoveredS != nil {
					x = *g.RecoveredS
				}
			}
			if v == nil || x > *v {
				v = f(x)
			}
		}
		return v, true
	}
	return nil, false
}

// GoodputCounts are the completions around a fault's trigger, by the
// windows GoodputRecovery reads: Pre over the BaselineWindowS seconds
// before it (PreS seconds of them), After from the end of the trigger
// until arrivals stop (AfterS seconds).
type GoodputCounts struct {
	Pre, After   int64
	PreS, AfterS float64
}

// GoodputAround is f's GoodputCounts in s; false when s has no goodput or
// either window is empty.
func GoodputAround(s *Series, f Fault) (GoodputCounts, bool) {
	w := goodputWindowOf(s, f)
	step, g, judge, at, until, lo := w.step, s.Goodput, w.judge, w.at, w.until, w.lo
	if g == nil || at >= judge || at <= lo || until >= judge {
		return GoodputCounts{}, false
	}
	var c GoodputCounts
	for _, x := range g[lo:at] {
		c.Pre += x
	}
	for _, x := range g[until:judge] {
		c.After += x
	}
	c.PreS, c.AfterS = float64(at-lo)*step, float64(judge-until)*step
	return c, true
}

// goodputWindow is where f stands in s's goodput series, in steps: the
// baseline window [lo, at) before it, the trigger [at, until), and judge,
// the end of what is judged.
type goodputWindow struct {
	step                 float64
	lo, at, until, judge int
}

func goodputWindowOf(s *Series, f Fault) goodputWindow {
	w := goodputWindow{step: s.StepS}
	if w.step <= 0 {
		w.step = 1
	}
	w.judge = len(s.Goodput)
	if s.JudgeUntilS > 0 {
		w.judge = min(w.judge, int(math.Round(s.JudgeUntilS/w.step)))
	}
	w.at, w.until = int(f.AtS/w.step), int(math.Ceil(f.UntilS/w.step))
	w.lo = max(0, w.at-max(int(BaselineWindowS/w.step), 1))
	return w
}
