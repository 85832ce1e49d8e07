package scenario_test

import (
	"fmt"
	"log"

	"github.com/stormsim/stormsim/scenario"
)

// Load reads a scenarios file strictly (an unknown key or an impossible
// value is an error naming the file and the key path), and Set applies
// key=value overrides to one scenario as a layer above it, as --set does.
func ExampleLoad() {
	f, err := scenario.Load("../scenarios.toml", &scenario.Options{
		Target: "deploy-restart",
		Set:    []string{"workload.clients=500", "client.profile=go-sdk"},
	})
	if err != nil {
		log.Fatal(err)
	}
	sc, err := f.Scenario("deploy-restart")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %v, %d replicas behind %s, %d clients, %d designs\n",
		sc.Name, sc.Duration, sc.Replicas, sc.LB, sc.Workload.Clients, len(sc.Designs))
	fmt.Println("first fault:", sc.Faults[0].Kind())
	// Output:
	// deploy-restart: 5m0s, 3 replicas behind sticky, 500 clients, 6 designs
	// first fault: rolling-restart
}
