package up

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/stormsim/stormsim/faults"
)

// FaultFlags are the flags of `stormsim fault` that its shorthands read.
type FaultFlags struct {
	Hard, Persistent       bool
	Downtime, RestartAfter time.Duration
}

// Shorthands is the help of the short forms ParseFault takes, one a line.
const Shorthands = `  restart SLOT [--hard] [--downtime D]   drain (or, with --hard, kill) the slot's process and start a fresh one D later
  crash SLOT [--restart-after D]         kill it; it stays down unless --restart-after
  drop FRACTION                          cut that fraction of the open connections through the LB
  partition SLOT DURATION                make the slot unreachable from the LB for DURATION
  latency EXTRA DURATION                 add EXTRA to every request through the LB for DURATION
  store-outage DURATION                  stop the redis-server up started (SIGSTOP) for DURATION
  store-restart [--persistent]           restart it, empty unless --persistent`

// ParseFault builds the fault a command line names, as a scenario's fault
// block of that kind at 0 s: KIND KEY=VALUE..., for any registered kind
// (faults.Kinds) with the keys of its block in scenarios.toml, or one of
// the Shorthands. The up validates it again against its topology.
func ParseFault(pos []string, fl FaultFlags) (faults.Fault, error) {
	kind, args := pos[0], pos[1:]
	if sh, ok := shorthands[kind]; ok && !keyed(args) {
		p := &shortArgs{kind: kind, args: args}
		f, err := sh(p, fl)
		if err == nil {
			err = p.err
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	if !slices.Contains(faults.LiveKinds(), kind) {
		return nil, inputf("fault: %q is not a fault this command takes (a kind with KEY=VALUE arguments: %s; or a shorthand: %s)",
			kind, strings.Join(faults.LiveKinds(), ", "), strings.Join(slices.Sorted(maps.Keys(shorthands)), ", "))
	}
	return blockOf(kind, args)
}

// keyed reports whether the arguments are KEY=VALUE pairs.
func keyed(args []string) bool {
	return len(args) > 0 && strings.Contains(args[0], "=")
}

// blockOf decodes KEY=VALUE arguments as the TOML block of a fault of kind
// (a value that is no TOML value is a string: 10s, a name), refusing keys
// the kind does not have.
func blockOf(kind string, args []string) (faults.Fault, error) {
	f, _ := faults.New(kind)
	var b strings.Builder
	fmt.Fprintf(&b, "kind = %q\n", kind)
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, inputf("fault %s: %q is not KEY=VALUE", kind, a)
		}
		var probe map[string]any
		if _, err := toml.Decode("v = "+v, &probe); err != nil {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	md, err := toml.Decode(b.String(), f)
	if err != nil {
		return nil, inputf("fault %s: %v", kind, err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return nil, inputf("fault %s: %s: unknown key for kind %q", kind, u[0], kind)
	}
	return f, nil
}

// shortArgs reads a shorthand's positional arguments; the first problem
// is kept in err.
type shortArgs struct {
	kind string
	args []string
	err  error
}

func (p *shortArgs) want(n int, what string) bool {
	if p.err == nil && len(p.args) != n {
		p.err = inputf("fault %s: want %s", p.kind, what)
	}
	return p.err == nil
}

func (p *shortArgs) slot(i int) int {
	n, err := strconv.Atoi(p.args[i])
	if p.err == nil && (err != nil || n < 0) {
		p.err = inputf("fault %s: slot %q is not a slot number", p.kind, p.args[i])
	}
	return n
}

func (p *shortArgs) dur(i int, what string) time.Duration {
	d, err := time.ParseDuration(p.args[i])
	if p.err == nil && (err != nil || d <= 0) {
		p.err = inputf("fault %s: %s %q is not a positive duration such as 10s", p.kind, what, p.args[i])
	}
	return d
}

// shorthands build a fault from the short forms of Shorthands.
var shorthands = map[string]func(p *shortArgs, fl FaultFlags) (faults.Fault, error){
	"restart": func(p *shortArgs, fl FaultFlags) (faults.Fault, error) {
		if !p.want(1, "SLOT") {
			return nil, p.err
		}
		return &faults.Restart{Kind_: "restart", Replica: p.slot(0), Downtime: fl.Downtime, Graceful: !fl.Hard}, nil
	},
	"crash": func(p *shortArgs, fl FaultFlags) (faults.Fault, error) {
		if !p.want(1, "SLOT") {
			return nil, p.err
		}
		return &faults.Crash{Kind_: "crash", Replica: p.slot(0), RestartAfter: fl.RestartAfter}, nil
	},
	"drop": func(p *shortArgs, _ FaultFlags) (faults.Fault, error) {
		if !p.want(1, "FRACTION") {
			return nil, p.err
		}
		x, err := strconv.ParseFloat(p.args[0], 64)
		if err != nil || x <= 0 || x > 1 {
			return nil, inputf("fault drop: fraction %q is not in (0, 1]", p.args[0])
		}
		return &faults.ClientDrop{Kind_: "client-drop", Fraction: x}, nil
	},
	"partition": func(p *shortArgs, _ FaultFlags) (faults.Fault, error) {
		if !p.want(2, "SLOT DURATION") {
			return nil, p.err
		}
		return &faults.Partition{Kind_: "partition", Replica: p.slot(0), Duration: p.dur(1, "duration")}, nil
	},
	"latency": func(p *shortArgs, _ FaultFlags) (faults.Fault, error) {
		if !p.want(2, "EXTRA DURATION") {
			return nil, p.err
		}
		return &faults.Latency{Kind_: "latency", Extra: p.dur(0, "extra"), Duration: p.dur(1, "duration")}, nil
	},
	"store-outage": func(p *shortArgs, _ FaultFlags) (faults.Fault, error) {
		if !p.want(1, "DURATION") {
			return nil, p.err
		}
		return &faults.StoreOutage{Kind_: "store-outage", Duration: p.dur(0, "duration")}, nil
	},
	"store-restart": func(p *shortArgs, fl FaultFlags) (faults.Fault, error) {
		if !p.want(0, "no argument") {
			return nil, p.err
		}
		return &faults.StoreRestart{Kind_: "store-restart", Persistent: fl.Persistent}, nil
	},
}
