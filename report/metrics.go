package report

import (
	"math"
	"reflect"
	"slices"
	"strings"
)

// Metric names that thresholds and comparisons may use, beyond the totals:
// the lost_by_cause split, the latency quantiles, the time to recover
// (the worst over the faults) and the storm height.
var extraMetrics = []string{
	"lost_purged", "lost_unproduced", "lost_abandoned", "lost_other",
	"replay_latency_ms_p50", "replay_latency_ms_p90", "replay_latency_ms_p99", "replay_latency_ms_max",
	"recovery_latency_ms_p50", "recovery_latency_ms_p90", "recovery_latency_ms_p99", "recovery_latency_ms_max",
	"recovery_after_fault_s", "storm_height", "lost_fraction",
}

// MetricNames lists every metric a threshold or a comparison may name.
func MetricNames() []string {
	var names []string
	t := reflect.TypeOf(Totals{})
	for i := 0; i < t.NumField(); i++ {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if n != "" && n != "lost_by_cause" {
			names = append(names, n)
		}
	}
	names = append(names, extraMetrics...)
	names = append(names, requestMetrics...)
	slices.Sort(names)
	return names
}

// IsMetric reports whether name is a metric.
func IsMetric(name string) bool { return slices.Contains(MetricNames(), name) }

// Metric returns a design's value of a metric. ok is false for an unknown
// name; a nil value means there is none (a latency with no samples, a fault
// the rates never recovered from, a run without faults).
func (d *Design) Metric(name string) (v *float64, ok bool) {
	f := func(x float64) *float64 { return &x }
	t := d.Totals
	if d.IsUnknown(name) && IsMetric(name) {
		return nil, true // the run could not know it: n/a, never a pass
	}
	if v, ok := d.requestMetric(name); ok {
		return v, true
	}
	switch name {
	case "lost_purged":
		return f(float64(t.LostByCause.Purged)), true
	case "lost_unproduced":
		return f(float64(t.LostByCause.Unproduced)), true
	case "lost_abandoned":
		return f(float64(t.LostByCause.Abandoned)), true
	case "lost_other":
		return f(float64(t.LostByCause.Other)), true
	case "lost_fraction":
		if t.EventsExpected == 0 {
			return f(0), true
		}
		return f(float64(t.EventsLost) / float64(t.EventsExpected)), true
	case "storm_height":
		var peak int64
		for _, x := range d.Series.Reconnects {
			peak = max(peak, x)
		}
		step := d.Series.StepS
		if step <= 0 {
			step = 1
		}
		return f(float64(peak) / step), true
	case "recovery_after_fault_s":
		if len(d.RecoveryAfterFaultS) == 0 {
			return nil, true
		}
		var worst float64
		for _, r := range d.RecoveryAfterFaultS {
			if r.Seconds == nil {
				return f(math.Inf(1)), true // never recovered: not empty, infinitely late
			}
			worst = max(worst, *r.Seconds)
		}
		return f(worst), true
	}
	for _, l := range []struct {
		prefix string
		lat    *Latency
	}{{"replay_latency_ms_", &d.ReplayLatencyMS}, {"recovery_latency_ms_", &d.RecoveryLatencyMS}} {
		if q, found := strings.CutPrefix(name, l.prefix); found {
			switch q {
			case "p50":
				return l.lat.P50, true
			case "p90":
				return l.lat.P90, true
			case "p99":
				return l.lat.P99, true
			case "max":
				return l.lat.Max, true
			}
			return nil, false
		}
	}
	rv := reflect.ValueOf(t)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		n, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if n != name || n == "lost_by_cause" {
			continue
		}
		switch fv := rv.Field(i); fv.Kind() {
		case reflect.Int64:
			return f(float64(fv.Int())), true
		case reflect.Float64:
			return f(fv.Float()), true
		}
	}
	return nil, false
}
