package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/topo"
)

func init() {
	register(command{name: "up", summary: "start a live topology for one design and storm it until Ctrl-C", run: upCmd})
}

func upCmd(ctx context.Context, env *Env, args []string) error {
	var file, design, redisAddr string
	var once bool
	fs := newFlags(env, "up", "SCENARIO --design NAME [flags]",
		"Start the live topology of one design of SCENARIO: a `stormsim serve` process per replica, a private\n"+
			"redis-server on a loopback port when the design needs one, and the load balancer. Print the MCP endpoint\n"+
			"to point any MCP client at, then apply the scenario's fault schedule in a loop until Ctrl-C.\n"+
			"On exit every process stormsim started is stopped.")
	fs.StringVar(&file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&design, "design", "", "`design` to run")
	fs.StringVar(&redisAddr, "redis-url", "", "use this Redis (`URL`: redis://host:port/db or host:port) instead of starting one; stormsim never stops or restarts it")
	fs.BoolVar(&once, "once", false, "apply the fault schedule once, then stop")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || design == "" {
		return usagef("up: want SCENARIO and --design")
	}
	sc, d, err := designOf(file, pos[0], design, nil)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(file)
	t, err := topo.Start(ctx, sc, d, &topo.Options{File: abs, RedisAddr: redisAddr})
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintf(env.Stdout, "endpoint: %s\n", t.Endpoint())
	fmt.Fprintf(env.Stdout, "pids: %v\n", t.PIDs())
	if f, ok := env.Stdout.(*os.File); ok {
		f.Sync()
	}
	steps := faults.Timeline(sc.Faults, sc.FaultContext())
	for round := 1; ; round++ {
		start := time.Now()
		for _, s := range steps {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Until(start.Add(s.At))):
			}
			if err := t.Apply(ctx, s); err != nil {
				fmt.Fprintf(env.Stderr, "up: fault step at %v: %v\n", s.At, err)
			} else {
				fmt.Fprintf(env.Stderr, "up: round %d, %v: %s\n", round, s.At, s.Describe())
			}
		}
		if once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(sc.Duration))):
		}
	}
}
