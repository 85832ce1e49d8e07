package faults

import (
	"strings"
	"testing"
	"time"
)

var ctx = Context{Replicas: 3, Duration: 300 * time.Second}

// Every kind turns its block into the steps an engine executes.
func TestSteps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		f    Fault
		want []Step
	}{
		{&Restart{Replica: 1, At: 60 * time.Second, Downtime: 5 * time.Second, Graceful: true},
			[]Step{{At: 60 * time.Second, Kind: StepStop, Replica: 1, Graceful: true}, {At: 65 * time.Second, Kind: StepStart, Replica: 1}}},
		{&Crash{Replica: 2, At: 10 * time.Second}, // no restart
			[]Step{{At: 10 * time.Second, Kind: StepStop, Replica: 2}}},
		{&ClientDrop{At: time.Second, Fraction: 0.3, Away: 5 * time.Second},
			[]Step{{At: time.Second, Kind: StepClientDrop, Fraction: 0.3, Away: 5 * time.Second}}},
		{&Scale{At: time.Second, Replicas: 5}, []Step{{At: time.Second, Kind: StepScale, Replicas: 5}}},
		{&Latency{At: time.Second, Duration: time.Second, Extra: time.Millisecond},
			[]Step{{At: time.Second, Kind: StepLatency, Extra: time.Millisecond}, {At: 2 * time.Second, Kind: StepLatency, Extra: -time.Millisecond}}},
	}
	for _, c := range cases {
		got := c.f.Steps(ctx)
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d steps, want %d", c.f.Kind(), len(got), len(c.want))
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s step %d: %+v, want %+v", c.f.Kind(), i, got[i], c.want[i])
			}
		}
	}
	roll := &RollingRestart{At: 90 * time.Second, Interval: 45 * time.Second, Downtime: 15 * time.Second}
	if s := roll.Steps(ctx); len(s) != 6 || s[4].At != 180*time.Second || s[4].Replica != 2 {
		t.Errorf("rolling restart: %+v", s)
	}
	if sp := roll.Span(ctx); sp.Until != 195*time.Second {
		t.Errorf("rolling restart span until %v, want 195s", sp.Until)
	}
}

// The timeline is ordered by time, stable for ties, and knows each step's fault.
func TestTimeline(t *testing.T) {
	t.Parallel()
	fs := []Fault{&Crash{Replica: 0, At: 50 * time.Second}, &ClientDrop{At: 10 * time.Second, Fraction: 1}, &Crash{Replica: 1, At: 50 * time.Second}}
	steps := Timeline(fs, ctx)
	if steps[0].Fault != 1 || steps[1].Fault != 0 || steps[2].Fault != 2 {
		t.Errorf("timeline order: %+v", steps)
	}
}

// Every kind reports each bad key with its name.
func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		f    Fault
		want string
	}{
		{&Restart{Replica: 7, At: time.Second}, "replica: 7 is not a replica"},
		{&Crash{At: 400 * time.Second}, `at: "6m40s" is after the scenario ends`},
		{&ClientDrop{At: time.Second, Fraction: 0}, "fraction: 0 is not in (0, 1]"},
		{&RollingRestart{At: time.Second}, "interval: 0s must be positive"},
		{&RollingRestart{At: time.Second, Interval: time.Second, Replicas: []int{0, 0}}, "replicas[1]: replica 0 is listed twice"},
		{&Scale{At: time.Second, Replicas: 0}, "replicas: 0 is not in 1..1000"},
		{&Partition{At: time.Second, Replica: 0}, "duration: 0s must be positive"},
		{&Latency{At: time.Second, Duration: time.Second}, "extra: 0s must be positive"},
		{&StoreOutage{At: -time.Second, Duration: time.Second}, "at: -1s is negative"},
		{&LBHealthDelay{At: time.Second, Delay: -1}, "delay: -1ns is negative"},
	}
	for _, c := range cases {
		errs := c.f.Validate(ctx)
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		if !strings.Contains(strings.Join(msgs, "; "), c.want) {
			t.Errorf("%s: %v, want %q", c.f.Kind(), msgs, c.want)
		}
	}
	for _, k := range Kinds() {
		if _, err := New(k); err != nil {
			t.Error(err)
		}
	}
	if _, err := New("meteor"); err == nil {
		t.Error("an unknown kind was accepted")
	}
}
