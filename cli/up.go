package cli

import (
	"context"
	"path/filepath"

	"github.com/stormsim/stormsim/live/up"
)

func init() {
	register(command{name: "up", summary: "start a live topology for one design and storm it until Ctrl-C", run: upCmd})
}

func upCmd(ctx context.Context, env *Env, args []string) error {
	var file, design string
	o := up.Options{Stdout: env.Stdout, Stderr: env.Stderr}
	var set, allowHosts listFlag
	fs := newFlags(env, "up", "SCENARIO --design NAME [flags]",
		"Start the live topology of one design of SCENARIO: a `stormsim serve` process per replica, a private\n"+
			"redis-server on a loopback port when the design needs one, and the load balancer, which checks the\n"+
			"replicas' health (health_check.interval, health_check.threshold). Print one line per replica\n"+
			"(\"slot 0 pid 1234 http://…\"), then the MCP endpoint to point any MCP client at, and apply the\n"+
			"scenario's fault schedule in a loop until Ctrl-C. `stormsim fault --up STATE …` applies a fault on\n"+
			"demand. The replicas' production logs, the up log and their counters go to a folder named at start.\n"+
			"On exit every process stormsim started is stopped. The replicas answer a request whose Host (which the\n"+
			"load balancer passes through), or Origin when it has one, is a loopback name, the --listen or --advertise\n"+
			"host (every address of this machine when --listen is on every interface) or an --allow-host name, and\n"+
			"refuse any other with 403 (DNS rebinding protection).")
	fs.StringVar(&file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&design, "design", "", "`design` to run")
	fs.StringVar(&o.RedisAddr, "redis-url", "", "use this Redis (`URL`: redis://host:port/db or host:port) instead of starting one; stormsim never stops or restarts it")
	fs.BoolVar(&o.Once, "once", false, "serve the scenario's whole duration and drain, with its fault schedule once, then stop")
	fs.BoolVar(&o.NoSchedule, "no-schedule", false, "do not apply the scenario's fault schedule: faults come from outside (stormsim fault)")
	fs.StringVar(&o.StatePath, "state", "", "write the topology's state as JSON to `file`, kept current (default: state.json in the logs folder)")
	fs.StringVar(&o.LogDir, "logs", "", "`folder` for the production logs, the up log and the counters (default: a new folder under the temporary directory)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "`address` (host:port) the load balancer listens on; 0.0.0.0:8080 serves clients on other machines")
	fs.StringVar(&o.ControlListen, "control-listen", "127.0.0.1:0", "`address` (host:port) of the control endpoint stormsim fault talks to; anything but loopback opens it to the network, guarded by the state file's token alone")
	fs.StringVar(&o.Advertise, "advertise", "", "`host` to write into the state file's endpoint and control URLs (and print) instead of the listening host, as clients elsewhere reach it (a Service name)")
	fs.Var(&set, "set", "override a scenario key, repeatable (`key=value`), as 'stormsim run --set' does")
	fs.Var(&allowHosts, "allow-host", "another host `name` clients reach the load balancer by (a Kubernetes Service's, say), repeatable; '*' allows any Host and Origin")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || design == "" {
		return usagef("up: want SCENARIO and --design")
	}
	sc, d, err := designOf(file, pos[0], design, set)
	if err != nil {
		return err
	}
	o.File, _ = filepath.Abs(file)
	o.Set, o.AllowHosts = set, allowHosts
	return up.Run(ctx, sc, d, &o)
}
