package cli

import (
	"context"

	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/scenario"
)

func init() {
	register(command{name: "serve", summary: "run one reference MCP replica of a design (the live engine starts these)", run: serveCmd})
}

// designOf resolves a scenario's design by name.
func designOf(file, scName, design string, sets []string) (*scenario.Scenario, *scenario.Design, error) {
	f, err := scenario.Load(file, &scenario.Options{Set: sets, Target: scName})
	if err != nil {
		return nil, nil, usageError{err}
	}
	sc, err := f.Scenario(scName)
	if err != nil {
		return nil, nil, usageError{err}
	}
	for i := range sc.Designs {
		if sc.Designs[i].Name == design {
			return sc, &sc.Designs[i], nil
		}
	}
	var names []string
	for _, d := range sc.Designs {
		names = append(names, d.Name)
	}
	return nil, nil, usagef("scenario %s has no design %q (it runs: %v)", scName, design, names)
}

func serveCmd(ctx context.Context, env *Env, args []string) error {
	var file, scName, design string
	o := replica.ServeOptions{Stdout: env.Stdout}
	var set, allowHosts listFlag
	fs := newFlags(env, "serve", "--scenario S --design D [flags]",
		"Run one replica of design D of scenario S: MCP Streamable HTTP on /mcp, health on /healthz.\n"+
			"It prints \"listening on http://ADDR/mcp\" when ready. SIGTERM drains it (the replica refuses new\n"+
			"work, closes its streams with a retry hint, lets calls finish up to the drain limit) and exits 0;\n"+
			"SIGKILL is a crash. The production log records every event produced, one JSON line each.\n"+
			"A request whose Host, or Origin when it has one, names neither a loopback name, the --addr host nor an\n"+
			"--allow-host name gets 403 (DNS rebinding protection).")
	fs.StringVar(&file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&scName, "scenario", "", "`scenario` whose settings to use")
	fs.StringVar(&design, "design", "", "`design` to serve")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:0", "listen `address` (port 0 picks a free one)")
	fs.StringVar(&o.RedisAddr, "redis-url", "", "Redis `URL` (redis://host:port/db or host:port), for the Redis designs")
	fs.StringVar(&o.Socket, "socket", "", "also serve on a Unix socket at `path` (the LB of a live topology reaches the replica there; not for server = \"ts-sdk\")")
	fs.StringVar(&o.LogPath, "log", "", "production log `file` (none when empty); go-redis's own messages go there too, as {\"go_redis\": …} lines, instead of stderr")
	fs.Var(&set, "set", "override a scenario key, repeatable (`key=value`), as 'stormsim run --set' does")
	fs.Var(&allowHosts, "allow-host", "a host `name` (or address) clients may reach this replica by, in a Host or Origin header, besides loopback and the --addr host; repeatable; '*' allows any")
	fs.IntVar(&o.Slot, "slot", 0, "this replica's slot")
	fs.IntVar(&o.Slots, "slots", 1, "number of slots, for hash-minted session ids")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || scName == "" || design == "" {
		return usagef("serve: want --scenario and --design, and no arguments")
	}
	sc, d, err := designOf(file, scName, design, set)
	if err != nil {
		return err
	}
	o.AllowHosts, o.NotifyRate = allowHosts, sc.Workload.NotificationRate
	return replica.Serve(ctx, d, &o)
}
