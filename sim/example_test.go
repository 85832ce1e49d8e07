package sim_test

import (
	"context"
	"fmt"
	"log"

	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
)

// Run simulates a scenario in virtual time and returns its report, one row
// per design. The same seed gives the same numbers, so this output holds.
func ExampleRun() {
	f, err := scenario.Load("../scenarios.toml", &scenario.Options{
		Target: "crash",
		Set:    []string{"workload.clients=300"},
	})
	if err != nil {
		log.Fatal(err)
	}
	sc, err := f.Scenario("crash")
	if err != nil {
		log.Fatal(err)
	}
	out, err := sim.Run(context.Background(), sc, &sim.Options{Designs: []string{"memory-sticky", "redis-shared"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range out.Report.Designs {
		t := d.Totals
		fmt.Printf("%s: %d 404s, %d resumes, conservation holds: %v\n", d.Name, t.HTTP404, t.Resumes,
			t.EventsExpected == t.EventsDelivered+t.EventsLost+t.EventsPending)
	}
	// Output:
	// memory-sticky: 100 404s, 149 resumes, conservation holds: true
	// redis-shared: 0 404s, 232 resumes, conservation holds: true
}
