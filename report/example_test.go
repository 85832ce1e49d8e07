package report_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/report"
)

// Read loads a report.json, or the report.json inside a run folder, and
// refuses a schema this version does not understand. Metric gives any
// metric a threshold may name; a latency with no samples is nil, never 0.
func ExampleRead() {
	dir, err := os.MkdirTemp("", "report")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A run writes this file; here is a small one by hand.
	data := `{"schema":1,"scenario":"crash","engine":"sim","seed":42,"duration_s":300,
	 "designs":[{"name":"memory-sticky","lb":"sticky","profile":"compliant",
	   "totals":{"calls":100,"events_expected":5000,"events_delivered":4900,"events_lost":100,
	     "session_requests":400,"http_404":20,"rate_404":0.05},
	   "replay_latency_ms":{"count":0,"p50":null,"p90":null,"p99":null,"max":null}}]}`
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(data), 0o644); err != nil {
		log.Fatal(err)
	}

	r, err := report.Read(dir)
	if err != nil {
		log.Fatal(err)
	}
	d := r.Design("memory-sticky")
	lost, _ := d.Metric("lost_fraction")
	p99, _ := d.Metric("replay_latency_ms_p99")
	fmt.Printf("%s/%s: rate_404 %.2f, lost_fraction %.2f, replay p99 %v\n", r.Scenario, d.Name, d.Totals.Rate404, *lost, p99)
	// Output: crash/memory-sticky: rate_404 0.05, lost_fraction 0.02, replay p99 <nil>
}
