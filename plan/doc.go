// Package plan turns the simulator into a capacity planner: it sweeps
// numeric scenario keys over a grid, runs every grid point and design in the
// simulator, and recommends, per design, the largest load that still meets
// the service goals (Goals: DefaultGoals under the scenario's goals table and
// --goal, never its expect table) and the store to provision for it.
//
// The steps are separate and pure, so each can be tested on its own:
//
//   - ParseSweep reads one --sweep KEY=VALUES: a list "a,b,c" or a log range
//     "lo..hi@N". Every numeric key of the scenario key table may be swept.
//   - NewGrid builds the grid of points (the first axis is the load axis)
//     and resolves one scenario per point through a Loader, which applies
//     the point as --set overrides.
//   - Run simulates every point and design, in parallel, and keeps per row
//     what the recommendation and the files need. Same seed, same rows,
//     whatever the number of jobs.
//   - Recommend judges each row against the goals and, per design (and
//     per value of the other axes), finds the largest load L such that every
//     grid load ≤ L passes (a design that fails at a load fails at every
//     larger one), sizes the store there from the simulated peaks plus
//     HeadroomPercent, names the cheapest design that meets every goal at
//     the target load (a tie in cost goes to the lower recovery latency),
//     and for every other design the goal that binds it there.
//
// For the request workload, FindTipping (stormsim plan --tipping) is a
// search instead of a grid: per design, the largest load in LO..HI at
// which the scenario's trigger still leaves the design recovered, found by
// bisection with several seeds per probe. A probe is recovered when at
// least a stated share of its seeds meet the recovery goal
// (goodput_recovered_s_max, judged by Judge); probes whose frequencies
// contradict monotonicity are reported. TippingFiles writes tipping.json,
// tipping.csv and tipping.md.
//
// Sizing always comes from what the simulated store held
// (report.Totals.StorePeakBytes) and did (StorePeakOpsPerS), never from a
// formula.
//
// When no sweep is given, DefaultSweep picks one from the scenario.
//
//	ax, err := plan.ParseSweep("workload.clients=1000..8000@4")
//	load := func(set []string) (*scenario.Scenario, error) {
//		f, err := scenario.Load("scenarios.toml", &scenario.Options{Set: set, Target: "deploy-restart"})
//		if err != nil {
//			return nil, err
//		}
//		return f.Scenario("deploy-restart")
//	}
//	g, err := plan.NewGrid(load, []plan.Axis{ax}, nil)
//	res, err := plan.Run(ctx, g, &plan.Options{Jobs: 2})
//	rec := plan.Recommend(res, g.Goals(nil), g.Axes[0].Max())
//	files, err := plan.Files(res, rec) // plan.json, plan.csv, plan.md
package plan
