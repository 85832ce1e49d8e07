package runner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// TryOptions are the settings of Try: one client, one call, one server.
type TryOptions struct {
	URL  string // the server's MCP endpoint
	Impl string // the client: clients.ImplNative (the compliant profile), ImplGoSDK or ImplTSSDK
	// Tool is the tool to call; empty finds one whose input schema takes
	// events and interval_ms, as a run against a server you bring does.
	Tool string
	// Arguments is the call's arguments, a JSON object template with
	// {events}, {interval_ms} and {bytes} placeholders; the stream tool's
	// when empty (scenario.DefaultToolArguments).
	Arguments string
	Era       string // the protocol era the client speaks; 2025-11-25 when empty
	Events    int    // the call's length, for {events}; 5 when 0
}

// tryScenario is the scenario Try runs: one client making one call, over
// the live engine, against the server --set server.url names.
const tryScenario = `
[design.client]
mode = "stateful"
sessions = "local"
events = "memory"
[scenario.client]
designs = ["client"]
seed = 1
duration = "1s"
drain = "30s"
replicas = 1
rtt = "0ms"
[scenario.client.workload]
clients = 1
arrival_rate = 1000
calls_per_client = 1
think = "0s"
events_min = %[1]d
events_max = %[1]d
event_rate = 50
event_bytes = 16
drop_every = "0s"
continue_after_failure = false
`

// Try is one client of kind o.Impl making one call to the server at
// o.URL, as a live run's clients do it (initialize, the call, a resume
// after a stream closes, honouring the server's retry hint): stormsim run
// --target with one client. It returns the run's report, whose one design
// says how the call ended, and an error when the call did not complete.
func Try(ctx context.Context, o TryOptions) (*report.Report, error) {
	if o.Events <= 0 {
		o.Events = 5
	}
	sets := []string{"server.url=" + strconv.Quote(o.URL), "server.tool.name=" + strconv.Quote(o.Tool)}
	if o.Arguments != "" {
		sets = append(sets, "server.tool.arguments="+strconv.Quote(o.Arguments))
	}
	if o.Impl != "" && o.Impl != clients.ImplNative {
		sets = append(sets, "client.impl="+strconv.Quote(o.Impl))
	}
	if o.Era != "" {
		sets = append(sets, "era="+strconv.Quote(o.Era))
	}
	f, err := scenario.Parse("stormsim client", []byte(fmt.Sprintf(tryScenario, o.Events)), &scenario.Options{Set: sets, Target: "client"})
	if err != nil {
		return nil, err
	}
	sc, err := f.Scenario("client")
	if err != nil {
		return nil, err
	}
	out, err := Run(ctx, sc, &Options{Set: sets})
	if err != nil {
		return nil, err
	}
	t := out.Report.Designs[0].Totals
	if t.Calls != 1 || t.CallsCompleted != 1 {
		return out.Report, fmt.Errorf("client: the call to %s did not complete (%d calls, %d completed, %d failed, %d pending)",
			o.URL, t.Calls, t.CallsCompleted, t.CallsFailed, t.CallsPending)
	}
	return out.Report, nil
}
