package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/up"
)

func init() {
	register(command{name: "fault", summary: "apply a fault now to the topology of a running stormsim up", run: faultCmd})
}

// faultUsage lists the faults `stormsim fault` takes: any registered kind
// with its scenario keys, and the short forms.
func faultUsage() string {
	return "--up STATE FAULT ARGS\n\n" +
		"  KIND KEY=VALUE...                      a fault block of scenarios.toml, at 0 s: " + strings.Join(faults.LiveKinds(), ", ") + "\n" +
		up.Shorthands
}

func faultCmd(ctx context.Context, env *Env, args []string) error {
	var statePath string
	var hard, persistent bool
	var downtime, restartAfter time.Duration
	fs := newFlags(env, "fault", faultUsage(),
		"Apply one fault now to the topology of a running `stormsim up`, through its control endpoint (on\n"+
			"loopback unless up's --control-listen says otherwise; its address and token are in up's state file).\n"+
			"The fault is the scenario's fault of that kind (docs/reference.md, \"Fault kinds\"), carried out by the\n"+
			"same code as a scheduled one; up's log and state file show it. Prints each step done, and those still\n"+
			"to come.")
	fs.StringVar(&statePath, "up", "", "the state `file` of the stormsim up to fault (its --state; state.json in its logs folder by default)")
	fs.BoolVar(&hard, "hard", false, "restart: kill the process instead of draining it")
	fs.DurationVar(&downtime, "downtime", 0, "restart: how long the slot stays without a process")
	fs.DurationVar(&restartAfter, "restart-after", 0, "crash: start a fresh process this much later (0: stays down)")
	fs.BoolVar(&persistent, "persistent", false, "store-restart: the store keeps its data")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if statePath == "" || len(pos) == 0 {
		return usagef("fault: want --up STATE and a fault (stormsim fault --help lists them)")
	}
	f, err := up.ParseFault(pos, up.FaultFlags{Hard: hard, Persistent: persistent, Downtime: downtime, RestartAfter: restartAfter})
	if err != nil {
		return err
	}
	st, err := up.ReadState(statePath)
	if err != nil {
		return err
	}
	a, err := up.PostFault(ctx, st, f)
	if a == nil {
		return fmt.Errorf("fault: the stormsim up of %s: %w", statePath, err)
	}
	for _, s := range a.Applied {
		fmt.Fprintf(env.Stdout, "applied: %s\n", s)
	}
	for _, s := range a.Later {
		fmt.Fprintf(env.Stdout, "to come %s\n", s)
	}
	if err != nil {
		return fmt.Errorf("fault: %w", err)
	}
	return nil
}
