package runner

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkHostLateness measures the lateness of an ordinary live run on
// this machine, the figures the saturation bounds are set from: live-smoke
// as make live runs it (six designs, three at a time), once per iteration.
// It reports the p99 and max of each measure, the load generator's CPU and
// the load average at the end; make host-lateness runs it three times and
// writes the figures to docs/measurements.md. Read them with the load
// average: a machine doing other work reads later.
func BenchmarkHostLateness(b *testing.B) {
	abs, _ := filepath.Abs("../../scenarios.toml")
	sc := load(b, "live-smoke", nil)
	for b.Loop() {
		out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Parallel: 3})
		if err != nil {
			b.Fatal(err)
		}
		h := out.Report.Host
		b.ReportMetric(h.TimerLatenessMS.P99, "timer-p99-ms")
		b.ReportMetric(h.TimerLatenessMS.Max, "timer-max-ms")
		b.ReportMetric(h.ProducerLatenessMS.P99, "producer-p99-ms")
		b.ReportMetric(h.ProducerLatenessMS.Max, "producer-max-ms")
		b.ReportMetric(h.SchedLatencyMS.P99, "sched-p99-ms")
		b.ReportMetric(h.LoadgenCPUCores, "loadgen-cores")
		b.ReportMetric(h.LoadAverage, "load-avg-1m")
		if h.Saturated {
			b.Logf("host_saturated: %v", h.Reasons)
		}
	}
}
