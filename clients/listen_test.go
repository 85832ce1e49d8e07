package clients

import (
	"math/rand/v2"
	"testing"
	"time"
)

func listenCfg(t *testing.T, name string) *Config {
	t.Helper()
	c, err := Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestListenerReopensUnderBackoff: a listener opens once, is open after a
// 200, re-opens after a drop under the profile's backoff (the same waits
// Delay gives for attempts 0, 1, ... with the same draws), resets the
// count once a stream is open again, and opens nothing once stopped.
func TestListenerReopensUnderBackoff(t *testing.T) {
	t.Parallel()
	cfg := listenCfg(t, "compliant")
	var l Listener
	l.Init(cfg, rand.New(rand.NewPCG(1, 2)))
	ref := rand.New(rand.NewPCG(1, 2))
	if a := l.Open(); !a.Send || a.Delay != 0 || a.Reopen {
		t.Fatalf("first open: %+v, want an immediate send", a)
	}
	if a := l.Open(); a.Send {
		t.Fatalf("a second Open while one is pending sent %+v", a)
	}
	l.Answered(200, 0)
	if !l.IsOpen() {
		t.Fatal("not open after a 200")
	}
	a := l.Dropped(0)
	want0 := Delay(cfg, 0, 0, ref)
	if !a.Send || !a.Reopen || a.Delay != want0 || l.IsOpen() {
		t.Fatalf("drop: %+v, want a re-open after %v", a, want0)
	}
	a = l.Answered(503, 0)
	want1 := Delay(cfg, 1, want0, ref)
	if !a.Send || a.Delay != want1 {
		t.Fatalf("refused re-open: %+v, want a retry after %v (attempt 1)", a, want1)
	}
	l.Answered(200, 0)
	a = l.Dropped(0)
	if want := Delay(cfg, 0, 0, ref); a.Delay != want {
		t.Fatalf("drop after a reopened stream: wait %v, want %v (the count resets once open)", a.Delay, want)
	}
	l.Stop()
	if l.Due() {
		t.Fatal("a stopped listener still has a request due")
	}
	if a := l.Answered(200, 0); a.Send || l.IsOpen() {
		t.Fatalf("stopped: %+v open %v", a, l.IsOpen())
	}
}

// TestListenerHonoursHint: a profile that honours retry hints waits at
// least the hint before it re-opens; one that does not ignores it.
func TestListenerHonoursHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		honour bool
		want   func(d time.Duration) bool
	}{
		{true, func(d time.Duration) bool { return d >= time.Hour }}, // the hint wins
		{false, func(d time.Duration) bool { return d < time.Hour }}, // the backoff alone
	} {
		cfg := listenCfg(t, "compliant")
		cfg.HonorRetryHint = tc.honour
		var l Listener
		l.Init(cfg, rand.New(rand.NewPCG(3, 4)))
		l.Open()
		l.Answered(200, 0)
		if a := l.Dropped(time.Hour); !tc.want(a.Delay) {
			t.Errorf("honour %v: waited %v after a 1 h hint", tc.honour, a.Delay)
		}
	}
}
