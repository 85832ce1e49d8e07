package clients

import (
	"fmt"
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

// TestListenReopen: under listen_reopen = "backoff" a listener re-opens a
// stream that dropped and an open that was refused, after the backoff;
// under "none" (the go-sdk profile's) it stops at either: no request, none
// due, and a later Open sends nothing.
func TestListenReopen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile string
		refused bool // the first open is answered 503, rather than opened and dropped
		reopen  bool
	}{
		{"compliant", false, true}, // backoff: a drop is re-opened
		{"compliant", true, true},  // backoff: a refusal is retried
		{"go-sdk", false, false},   // none: a drop stops the listener
		{"go-sdk", true, false},    // none: a refusal stops it too
	} {
		cfg := listenCfg(t, tc.profile)
		var l Listener
		l.Init(cfg, rand.New(rand.NewPCG(5, 6)))
		l.Open()
		var a ListenAction
		if tc.refused {
			a = l.Answered(503, 0)
		} else {
			l.Answered(200, 0)
			a = l.Dropped(0)
		}
		what := fmt.Sprintf("%s (listen_reopen %q), refused %v", tc.profile, cfg.ListenReopen, tc.refused)
		if a.Send != tc.reopen || a.Send && (!a.Reopen || a.Delay < cfg.Base) {
			t.Errorf("%s: %+v, want a re-open after the backoff: %v", what, a, tc.reopen)
		}
		if l.Due() != tc.reopen || l.IsOpen() {
			t.Errorf("%s: due %v open %v, want due %v and closed", what, l.Due(), l.IsOpen(), tc.reopen)
		}
		if !tc.reopen {
			if a := l.Open(); a.Send {
				t.Errorf("%s: Open after the listener stopped sent %+v", what, a)
			}
		}
	}
}

// A bad listen_reopen is named with its value and the valid ones.
func TestListenReopenValidate(t *testing.T) {
	t.Parallel()
	cfg := listenCfg(t, "compliant")
	cfg.ListenReopen = "later"
	var got []string
	for _, e := range cfg.Validate() {
		got = append(got, e.Error())
	}
	want := `listen_reopen: "later" is not one of [backoff none]`
	if len(got) != 1 || got[0] != want {
		t.Errorf("errors %q, want [%q]", got, want)
	}
}
