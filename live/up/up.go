// Package up is `stormsim up`: a live topology of one design kept running
// until it is stopped, with the scenario's fault schedule played in rounds
// (or once, or not at all), a state file kept current, and a control
// endpoint that applies a fault on demand. The client side is here too:
// what `stormsim fault` and a run aimed at an up (`run --up`, a shard) use
// to read the state file and send a fault.
package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/scenario"
)

// InputError is a problem with what Run or ReadState was given (a listening
// address that is not host:port, a state file that is not one): the
// command line exits 2 for it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputf(format string, args ...any) error { return &InputError{fmt.Errorf(format, args...)} }

// Options are `stormsim up`'s settings besides the scenario and design.
type Options struct {
	File          string   // the scenarios file, absolute, which the replicas load
	Set           []string // --set overrides, passed on to the replicas
	RedisAddr     string   // a Redis to use instead of starting one; never stopped or restarted
	StatePath     string   // the state file; state.json in the logs folder when empty
	LogDir        string   // the logs folder; a new one under the temporary directory when empty
	Listen        string   // the load balancer's listening address
	ControlListen string   // the control endpoint's listening address
	Advertise     string   // the host the state file names instead of the listening one
	AllowHosts    []string // more host names the replicas answer to
	Once          bool     // serve the scenario's whole duration with its schedule once, then stop
	NoSchedule    bool     // play no schedule: faults come from the control endpoint
	Stdout        io.Writer
	Stderr        io.Writer
}

// Run starts design d's topology and storms it until ctx ends (or, with
// Once, the scenario's horizon passes), then stops every process it
// started and writes the counters.
func Run(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, o *Options) error {
	if err := checkListen("listen", o.Listen); err != nil {
		return err
	}
	if err := checkListen("control-listen", o.ControlListen); err != nil {
		return err
	}
	if err := checkAdvertise(o.Advertise); err != nil {
		return err
	}
	logDir, statePath, err := folders(o.LogDir, o.StatePath, sc.Name, d.Name)
	if err != nil {
		return err
	}
	u, err := newUpRun(o.Stdout, o.Stderr, logDir, statePath)
	if err != nil {
		return err
	}
	u.advertise = o.Advertise
	defer u.close()
	u.state.Scenario, u.state.Design = sc.Name, d.Name
	u.logf("logs in %s", logDir)

	ctl, err := listenControl(o.ControlListen)
	if err != nil {
		return err
	}
	defer ctl.Close()
	t, err := topo.Start(ctx, sc, d, &topo.Options{
		File: o.File, RedisAddr: o.RedisAddr, LogDir: logDir, Set: o.Set, Counts: true, Detach: true, Listen: o.Listen,
		AllowHosts: allowHosts(o.Listen, o.Advertise, o.AllowHosts),
		Health:     &lb.Health{Interval: sc.HealthCheck.Interval, Threshold: sc.HealthCheck.Threshold},
		Notify:     u.changed,
	})
	if errors.Is(err, topo.ErrListen) {
		return fmt.Errorf("up: --listen %s: %w", o.Listen, err)
	}
	if err != nil {
		return err
	}
	defer t.Close()
	if h, _, _ := net.SplitHostPort(o.Listen); o.Advertise == "" && unspecified(h) {
		u.logf("the LB listens on every interface (%s) and the state file names its address so: give --advertise HOST for other machines to reach it", o.Listen)
	}
	run := u.serve(ctx, sc, ctl)
	fmt.Fprintf(o.Stdout, "logs: %s\nstate: %s\ncontrol: %s\n", logDir, statePath, u.state.Control)
	if pid := t.RedisPID(); pid != 0 {
		fmt.Fprintf(o.Stdout, "redis pid %d %s\n", pid, t.RedisAddr())
	}
	fmt.Fprintf(o.Stdout, "lb pid %d %s\n", t.LBPID(), t.Addr())
	u.setTopology(t) // prints a line per slot
	fmt.Fprintf(o.Stdout, "endpoint: %s\n", u.state.Endpoint)
	if f, ok := o.Stdout.(*os.File); ok {
		f.Sync()
	}
	return u.storm(ctx, run, sc, t, o.NoSchedule, o.Once)
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

// folders makes the logs folder (a new one under the temporary directory
// when logDir is empty) and returns it and the state file's path, both
// absolute (state.json in the logs folder when statePath is empty).
func folders(logDir, statePath, scName, design string) (string, string, error) {
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

// allowHosts are the names besides loopback the replicas answer to:
// the --listen host, or every address of this machine when it is on every
// interface, the --advertise host and the --allow-host names.
func allowHosts(listen, advertise string, extra []string) []string {
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
// A step that fails is logged, and the play goes on.
func (u *upRun) play(run context.Context, steps []faults.Step, start time.Time, label string) {
	topo.Play(run, nil, start, steps, func(_ int, s faults.Step) error { //nolint:errcheck // do never fails
		u.apply(run, s, fmt.Sprintf("%s%v", label, s.At)) //nolint:errcheck // apply logs it
		return nil
	})
}
