package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/scenario"
)

func init() {
	register(command{name: "up", summary: "start a live topology for one design and storm it until Ctrl-C", run: upCmd})
}

func upCmd(ctx context.Context, env *Env, args []string) error {
	var file, design, redisAddr, statePath, logDir, listen, controlListen, advertise string
	var once, noSchedule bool
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
	fs.StringVar(&redisAddr, "redis-url", "", "use this Redis (`URL`: redis://host:port/db or host:port) instead of starting one; stormsim never stops or restarts it")
	fs.BoolVar(&once, "once", false, "serve the scenario's whole duration and drain, with its fault schedule once, then stop")
	fs.BoolVar(&noSchedule, "no-schedule", false, "do not apply the scenario's fault schedule: faults come from outside (stormsim fault)")
	fs.StringVar(&statePath, "state", "", "write the topology's state as JSON to `file`, kept current (default: state.json in the logs folder)")
	fs.StringVar(&logDir, "logs", "", "`folder` for the production logs, the up log and the counters (default: a new folder under the temporary directory)")
	fs.StringVar(&listen, "listen", "127.0.0.1:0", "`address` (host:port) the load balancer listens on; 0.0.0.0:8080 serves clients on other machines")
	fs.StringVar(&controlListen, "control-listen", "127.0.0.1:0", "`address` (host:port) of the control endpoint stormsim fault talks to; anything but loopback opens it to the network, guarded by the state file's token alone")
	fs.StringVar(&advertise, "advertise", "", "`host` to write into the state file's endpoint and control URLs (and print) instead of the listening host, as clients elsewhere reach it (a Service name)")
	fs.Var(&set, "set", "override a scenario key, repeatable (`key=value`), as 'stormsim run --set' does")
	fs.Var(&allowHosts, "allow-host", "another host `name` clients reach the load balancer by (a Kubernetes Service's, say), repeatable; '*' allows any Host and Origin")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || design == "" {
		return usagef("up: want SCENARIO and --design")
	}
	if err := checkListen("listen", listen); err != nil {
		return err
	}
	if err := checkListen("control-listen", controlListen); err != nil {
		return err
	}
	if err := checkAdvertise(advertise); err != nil {
		return err
	}
	sc, d, err := designOf(file, pos[0], design, set)
	if err != nil {
		return err
	}
	if logDir, statePath, err = upFolders(logDir, statePath, sc.Name, d.Name); err != nil {
		return err
	}
	u, err := newUpRun(env, logDir, statePath)
	if err != nil {
		return err
	}
	u.advertise = advertise
	defer u.close()
	u.state.Scenario, u.state.Design = sc.Name, d.Name
	u.logf("logs in %s", logDir)

	ctl, err := listenControl(controlListen)
	if err != nil {
		return err
	}
	defer ctl.Close()
	abs, _ := filepath.Abs(file)
	t, err := topo.Start(ctx, sc, d, &topo.Options{
		File: abs, RedisAddr: redisAddr, LogDir: logDir, Set: set, Counts: true, Detach: true, Listen: listen,
		AllowHosts: upAllowHosts(listen, advertise, allowHosts),
		Health:     &lb.Health{Interval: sc.HealthCheck.Interval, Threshold: sc.HealthCheck.Threshold},
		Notify:     u.changed,
	})
	if errors.Is(err, topo.ErrListen) {
		return fmt.Errorf("up: --listen %s: %w", listen, err)
	}
	if err != nil {
		return err
	}
	defer t.Close()
	if h, _, _ := net.SplitHostPort(listen); advertise == "" && unspecified(h) {
		u.logf("the LB listens on every interface (%s) and the state file names its address so: give --advertise HOST for other machines to reach it", listen)
	}
	run := u.serve(ctx, sc, ctl)
	fmt.Fprintf(env.Stdout, "logs: %s\nstate: %s\ncontrol: %s\n", logDir, statePath, u.state.Control)
	if pid := t.RedisPID(); pid != 0 {
		fmt.Fprintf(env.Stdout, "redis pid %d %s\n", pid, t.RedisAddr())
	}
	u.setTopology(t) // prints a line per slot
	fmt.Fprintf(env.Stdout, "endpoint: %s\n", u.state.Endpoint)
	if f, ok := env.Stdout.(*os.File); ok {
		f.Sync()
	}
	return u.storm(ctx, run, sc, t, noSchedule, once)
}

// storm applies the scenario's fault schedule, once (--once) or in rounds,
// until Ctrl-C, and stops the topology.
func (u *upRun) storm(ctx, run context.Context, sc *scenario.Scenario, t *topo.Topology, noSchedule, once bool) error {
	start := time.Now()
	var steps []faults.Step
	switch {
	case noSchedule:
		u.logf("no fault schedule (--no-schedule): faults come from stormsim fault --up %s", u.statePath)
	default:
		steps = faults.Timeline(sc.Faults, sc.FaultContext())
	}
	if once {
		horizon := sc.Duration + sc.Drain
		u.logf("serving %v (duration %v, drain %v), then stopping (--once)", horizon, sc.Duration, sc.Drain)
		if len(steps) > 0 {
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				u.play(run, steps, start, "schedule, ")
			}()
		}
		select {
		case <-ctx.Done():
			return u.finish(t)
		case <-time.After(time.Until(start.Add(horizon))):
		}
		u.logf("served the whole %v: stopping", horizon)
		return u.finish(t)
	}
	for round := 1; len(steps) > 0; round++ {
		rs := time.Now()
		u.play(run, steps, rs, fmt.Sprintf("round %d, ", round))
		select {
		case <-ctx.Done():
			return u.finish(t)
		case <-time.After(time.Until(rs.Add(sc.Duration))):
		}
	}
	<-ctx.Done()
	return u.finish(t)
}

// upFolders makes the logs folder (a new one under the temporary directory
// when logDir is empty) and returns it and the state file's path, both
// absolute (state.json in the logs folder when statePath is empty).
func upFolders(logDir, statePath, scName, design string) (string, string, error) {
	var err error
	if logDir == "" {
		logDir, err = os.MkdirTemp("", fmt.Sprintf("stormsim-up-%s-%s-", scName, design))
	} else {
		err = os.MkdirAll(logDir, 0o755)
	}
	if err != nil {
		return "", "", fmt.Errorf("up: the logs folder: %w", err)
	}
	logDir, _ = filepath.Abs(logDir)
	if statePath == "" {
		statePath = filepath.Join(logDir, "state.json")
	}
	statePath, _ = filepath.Abs(statePath)
	return logDir, statePath, nil
}

// upAllowHosts are the names besides loopback the replicas answer to:
// the --listen host, or every address of this machine when it is on every
// interface, the --advertise host and the --allow-host names.
func upAllowHosts(listen, advertise string, extra []string) []string {
	var out []string
	if h, _, err := net.SplitHostPort(listen); err == nil && !unspecified(h) {
		out = append(out, h)
	} else if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok {
				out = append(out, ip.IP.String())
			}
		}
	}
	if advertise != "" {
		out = append(out, advertise)
	}
	return append(out, extra...)
}

// play applies steps at their times from start, until run ends; label
// begins each log line.
func (u *upRun) play(run context.Context, steps []faults.Step, start time.Time, label string) {
	for _, s := range steps {
		select {
		case <-run.Done():
			return
		case <-time.After(time.Until(start.Add(s.At))):
		}
		u.apply(run, s, fmt.Sprintf("%s%v", label, s.At))
	}
}
