package cli

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// BenchmarkPlanSweep times the plan sweep a planner runs most: `stormsim
// plan deploy-restart --sweep workload.clients=1000..10000@10`, 10 load
// points × 6 designs in the simulator, plan files and charts included.
func BenchmarkPlanSweep(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var out, errb bytes.Buffer
		start := time.Now()
		code := run(context.Background(), &Env{Stdout: &out, Stderr: &errb}, []string{"plan", "deploy-restart",
			"--file", "../" + DefaultFile, "--out", b.TempDir(), "--quiet", "--sweep", "workload.clients=1000..10000@10"})
		wall := time.Since(start)
		if code != ExitOK {
			b.Fatalf("plan: exit %d\n%s\n%s", code, out.String(), errb.String())
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
	}
}
