package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/up"
)

func init() {
	register(command{name: "fault", summary: "apply a fault now to the topology of a running stormsim up", run: faultCmd})
}

// faultUsage lists the faults `stormsim fault` takes.
const faultUsage = `--up STATE FAULT ARGS

  restart SLOT [--hard] [--downtime D]   drain (or, with --hard, kill) the slot's process and start a fresh one D later
  crash SLOT [--restart-after D]         kill it; it stays down unless --restart-after
  drop FRACTION                          cut that fraction of the open connections through the LB
  partition SLOT DURATION                make the slot unreachable from the LB for DURATION
  latency EXTRA DURATION                 add EXTRA to every request through the LB for DURATION
  store-outage DURATION                  stop the redis-server up started (SIGSTOP) for DURATION
  store-restart [--persistent]           restart it, empty unless --persistent`

func faultCmd(ctx context.Context, env *Env, args []string) error {
	var statePath string
	var hard, persistent bool
	var downtime, restartAfter time.Duration
	fs := newFlags(env, "fault", faultUsage,
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
	f, err := faultOf(pos, hard, persistent, downtime, restartAfter)
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

// faultOf builds the fault a command line names, as a scenario's fault
// block of that kind at 0 s.
func faultOf(pos []string, hard, persistent bool, downtime, restartAfter time.Duration) (faults.Fault, error) {
	kind, args := pos[0], pos[1:]
	want := func(n int, what string) error {
		if len(args) != n {
			return usagef("fault %s: want %s", kind, what)
		}
		return nil
	}
	slot := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, usagef("fault %s: slot %q is not a slot number", kind, s)
		}
		return n, nil
	}
	dur := func(s, what string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, usagef("fault %s: %s %q is not a positive duration such as 10s", kind, what, s)
		}
		return d, nil
	}
	switch kind {
	case "restart", "crash":
		if err := want(1, "SLOT"); err != nil {
			return nil, err
		}
		n, err := slot(args[0])
		if err != nil {
			return nil, err
		}
		if kind == "crash" {
			return &faults.Crash{Kind_: kind, Replica: n, RestartAfter: restartAfter}, nil
		}
		return &faults.Restart{Kind_: kind, Replica: n, Downtime: downtime, Graceful: !hard}, nil
	case "drop":
		if err := want(1, "FRACTION"); err != nil {
			return nil, err
		}
		x, err := strconv.ParseFloat(args[0], 64)
		if err != nil || x <= 0 || x > 1 {
			return nil, usagef("fault drop: fraction %q is not in (0, 1]", args[0])
		}
		return &faults.ClientDrop{Kind_: "client-drop", Fraction: x}, nil
	case "partition":
		if err := want(2, "SLOT DURATION"); err != nil {
			return nil, err
		}
		n, err := slot(args[0])
		if err != nil {
			return nil, err
		}
		d, err := dur(args[1], "duration")
		if err != nil {
			return nil, err
		}
		return &faults.Partition{Kind_: kind, Replica: n, Duration: d}, nil
	case "latency":
		if err := want(2, "EXTRA DURATION"); err != nil {
			return nil, err
		}
		extra, err := dur(args[0], "extra")
		if err != nil {
			return nil, err
		}
		d, err := dur(args[1], "duration")
		if err != nil {
			return nil, err
		}
		return &faults.Latency{Kind_: kind, Extra: extra, Duration: d}, nil
	case "store-outage":
		if err := want(1, "DURATION"); err != nil {
			return nil, err
		}
		d, err := dur(args[0], "duration")
		if err != nil {
			return nil, err
		}
		return &faults.StoreOutage{Kind_: kind, Duration: d}, nil
	case "store-restart":
		if err := want(0, "no argument"); err != nil {
			return nil, err
		}
		return &faults.StoreRestart{Kind_: kind, Persistent: persistent}, nil
	}
	return nil, usagef("fault: %q is not a fault this command takes (restart, crash, drop, partition, latency, store-outage, store-restart)", kind)
}
