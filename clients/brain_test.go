package clients

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func brain(t *testing.T, profile string) *Brain {
	t.Helper()
	cfg, err := Profile(profile)
	if err != nil {
		t.Fatal(err)
	}
	return New(&cfg, rand.New(rand.NewPCG(1, 2)))
}

// open drives a brain through initialize to an open call stream.
func open(t *testing.T, b *Brain) {
	t.Helper()
	steps := []struct {
		in   Input
		want Req
	}{
		{Input{Kind: InStartCall}, ReqInitialize},
		{Input{Kind: InResponse, Status: 200, Session: true}, ReqInitialized},
		{Input{Kind: InResponse, Status: 202}, ReqCall},
	}
	for _, s := range steps {
		if a := b.Step(s.in); a.Kind != ActSend || a.Req != s.want {
			t.Fatalf("after %+v: got %+v, want send %v", s.in, a, s.want)
		}
	}
	if a := b.Step(Input{Kind: InResponse, Status: 200}); a.Kind != ActAwait {
		t.Fatalf("call 200: %+v", a)
	}
}

// Each profile reacts to a 404 on resume as docs/domain.md §3 says.
func TestOn404(t *testing.T) {
	t.Parallel()
	cases := []struct {
		profile     string
		wantKind    ActionKind
		wantReq     Req
		keepSession bool
	}{
		{"compliant", ActSend, ReqInitialize, false}, // re-initialises, then re-issues
		{"go-sdk", ActEndCall, 0, false},             // ErrSessionMissing: the connection fails for good
		{"ts-sdk", ActWait, 0, true},                 // retried as any failed resume, keeps the stale id (TestResumeGiveUp)
		{"python-sdk", ActEndCall, 0, true},          // local error, no re-initialise
		{"stuck", ActAwait, 0, true},                 // "SSE unsupported": hangs until the call timeout
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			t.Parallel()
			b := brain(t, c.profile)
			open(t, b)
			a := b.Step(Input{Kind: InStreamEnd, Cursor: 5, HasID: true})
			if a.Kind == ActWait {
				a = b.Step(Input{Kind: InTimer})
			}
			if a.Kind != ActSend || a.Req != ReqResume || a.Cursor != 5 || !a.Reconnect {
				t.Fatalf("after a drop with an id: %+v, want a resume from 5", a)
			}
			a = b.Step(Input{Kind: InResponse, Status: 404})
			if a.Kind != c.wantKind || (c.wantKind == ActSend && a.Req != c.wantReq) {
				t.Fatalf("on 404: %+v, want kind %v req %v", a, c.wantKind, c.wantReq)
			}
			if b.HasSession() != c.keepSession {
				t.Errorf("holds a session after 404: %v, want %v", b.HasSession(), c.keepSession)
			}
			if c.profile == "compliant" {
				b.Step(Input{Kind: InResponse, Status: 200, Session: true})
				if a := b.Step(Input{Kind: InResponse, Status: 202}); a.Req != ReqCall || !a.Reissue {
					t.Errorf("after re-initialising: %+v, want a re-issued call", a)
				}
			}
		})
	}
}

// A drop before any event id: go-sdk fails the call at once (as the real
// SDK does: "request terminated without response"), ts-sdk waits for its
// timeout, compliant opens the standalone GET, and with no session
// re-issues.
func TestDropWithoutID(t *testing.T) {
	t.Parallel()
	g := brain(t, "go-sdk")
	open(t, g)
	if a := g.Step(Input{Kind: InStreamEnd, Cursor: -1}); a.Kind != ActEndCall || a.Outcome != Failed || a.Cause != CauseAbandoned {
		t.Errorf("go-sdk: %+v, want the call failed", a)
	}
	b := brain(t, "ts-sdk")
	open(t, b)
	if a := b.Step(Input{Kind: InStreamEnd, Cursor: -1}); a.Kind != ActAwait {
		t.Errorf("ts-sdk: %+v, want to wait for the timeout", a)
	}
	if a := b.Step(Input{Kind: InCallTimeout}); a.Kind != ActEndCall || a.Outcome != Failed || a.Cause != CauseAbandoned {
		t.Errorf("ts-sdk timeout: %+v", a)
	}
	c := brain(t, "compliant")
	open(t, c)
	a := c.Step(Input{Kind: InStreamEnd, Cursor: -1})
	if a.Kind == ActWait {
		a = c.Step(Input{Kind: InTimer})
	}
	if a.Req != ReqStandalone {
		t.Errorf("compliant with a session: %+v, want the standalone GET", a)
	}
	s := brain(t, "compliant")
	s.Step(Input{Kind: InStartCall})
	s.Step(Input{Kind: InResponse, Status: 200, Session: false})
	s.Step(Input{Kind: InResponse, Status: 202})
	s.Step(Input{Kind: InResponse, Status: 200})
	a = s.Step(Input{Kind: InStreamEnd, Cursor: -1})
	if a.Kind == ActWait {
		a = s.Step(Input{Kind: InTimer})
	}
	if a.Req != ReqCall || !a.Reissue {
		t.Errorf("compliant without a session: %+v, want a re-issue", a)
	}
}

// The retry budget ends the call; progress resets it when the profile says so.
func TestRetryBudget(t *testing.T) {
	t.Parallel()
	b := brain(t, "python-sdk") // 2 retries, no reset on progress
	open(t, b)
	for i := 0; i < 2; i++ {
		a := b.Step(Input{Kind: InStreamEnd, Cursor: 1 + i, HasID: true})
		if a.Kind != ActWait {
			t.Fatalf("retry %d: %+v", i, a)
		}
		b.Step(Input{Kind: InTimer})
		b.Step(Input{Kind: InResponse, Status: 200})
	}
	if a := b.Step(Input{Kind: InStreamEnd, Cursor: 9, HasID: true}); a.Kind != ActEndCall || a.Outcome != Failed {
		t.Errorf("third drop: %+v, want the call to fail", a)
	}
	g := brain(t, "go-sdk") // 5 retries, resets on progress
	open(t, g)
	for i := 0; i < 20; i++ {
		if a := g.Step(Input{Kind: InStreamEnd, Cursor: 1 + i, HasID: true}); a.Kind != ActWait {
			t.Fatalf("drop %d with progress: %+v, want another retry", i, a)
		}
		g.Step(Input{Kind: InTimer})
		g.Step(Input{Kind: InResponse, Status: 200})
	}
}

// A server retry hint replaces the delay, unjittered.
func TestRetryHint(t *testing.T) {
	t.Parallel()
	b := brain(t, "go-sdk")
	open(t, b)
	if a := b.Step(Input{Kind: InStreamEnd, Cursor: 3, HasID: true, RetryHint: 1234 * time.Millisecond}); a.Kind != ActWait || a.Delay != 1234*time.Millisecond {
		t.Errorf("%+v, want a wait of exactly the hint", a)
	}
}

// Delay follows each strategy and jitter's formula.
func TestDelay(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	base := Config{Base: time.Second, Factor: 2, Cap: 10 * time.Second}
	cases := []struct {
		strategy, jitter string
		n                int
		lo, hi           time.Duration
	}{
		{StrategyNone, JitterNone, 3, 0, 0},                                    // immediate
		{StrategyConstant, JitterNone, 5, time.Second, time.Second},            // always base
		{StrategyExponential, JitterNone, 2, 4 * time.Second, 4 * time.Second}, // base·factor^n
		{StrategyExponential, JitterNone, 9, 10 * time.Second, 10 * time.Second},
		{StrategyExponential, JitterFull, 2, 0, 4 * time.Second},
		{StrategyExponential, JitterEqual, 2, 2 * time.Second, 4 * time.Second},
		{StrategyExponential, JitterAdditive, 2, 4 * time.Second, 8 * time.Second},
		{StrategyDecorrelated, JitterNone, 0, time.Second, 3 * time.Second},
	}
	for _, c := range cases {
		cfg := base
		cfg.Strategy, cfg.Jitter = c.strategy, c.jitter
		for i := 0; i < 200; i++ {
			if d := Delay(&cfg, c.n, 0, rng); d < c.lo || d > c.hi {
				t.Fatalf("%s/%s n=%d: %v not in [%v, %v]", c.strategy, c.jitter, c.n, d, c.lo, c.hi)
			}
		}
	}
}

func TestProfilesValid(t *testing.T) {
	t.Parallel()
	for _, n := range ProfileNames() {
		c, _ := Profile(n)
		if errs := c.Validate(); len(errs) > 0 {
			t.Errorf("profile %s: %v", n, errs)
		}
	}
}

// With no backoff the reconnect is sent at once, and its answer still
// reaches the brain: a 503 on it is retried, not ignored.
func TestZeroDelayKeepsPending(t *testing.T) {
	t.Parallel()
	cfg, _ := Profile("compliant")
	cfg.Strategy = StrategyNone
	b := New(&cfg, rand.New(rand.NewPCG(1, 1)))
	open(t, b)
	a := b.Step(Input{Kind: InStreamEnd, Cursor: 4, HasID: true})
	if a.Kind != ActSend || a.Req != ReqResume {
		t.Fatalf("drop: %+v, want an immediate resume", a)
	}
	if b.Pending() != ReqResume {
		t.Fatalf("pending = %v, want resume", b.Pending())
	}
	if a := b.Step(Input{Kind: InResponse, Status: 503}); a.Kind != ActWait {
		t.Fatalf("503 on the resume: %+v, want a retry", a)
	}
}

// Retries after 503s wait base, base·f, base·f², ...: no step is skipped.
func TestBackoffSequenceAfter503(t *testing.T) {
	t.Parallel()
	cfg, _ := Profile("compliant")
	cfg.Jitter, cfg.Factor, cfg.MaxRetries = JitterNone, 2, 10
	b := New(&cfg, rand.New(rand.NewPCG(1, 1)))
	b.Step(Input{Kind: InStartCall})
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, w := range want {
		a := b.Step(Input{Kind: InResponse, Status: 503})
		if a.Kind != ActWait || a.Delay != w {
			t.Fatalf("503 #%d: %+v, want a wait of %v", i, a, w)
		}
		b.Step(Input{Kind: InTimer})
	}
}

// What a client's next call sends after its call failed, by profile, cause
// and client.app_reconnect (docs/reference.md, "Client profiles").
func TestAppReconnect(t *testing.T) {
	t.Parallel()
	resume404 := []Input{{Kind: InStreamEnd, Cursor: 5, HasID: true}, {Kind: InTimer}, {Kind: InResponse, Status: 404}}
	purged := []Input{{Kind: InStreamEnd, Cursor: 5, HasID: true}, {Kind: InTimer}, {Kind: InResponse, Status: 400, Purged: true}}
	timeout := []Input{{Kind: InCallTimeout}}
	// ts-sdk retries the resume, and the call waits for its timeout.
	tsResume404 := append(slices.Clone(resume404), Input{Kind: InResponse, Status: 404}, Input{Kind: InCallTimeout})
	cases := []struct {
		name    string
		profile string
		app     string
		fail    []Input // after open: how the call fails
		renew   bool    // the next InStartCall carries Renew
		want    []Req   // what the next call sends first, in order; none: it fails at once
	}{
		// go-sdk's ClientSession is closed by ErrSessionMissing: no request.
		{"go-sdk 404 never", "go-sdk", AppReconnectNever, resume404, false, nil},
		// a resume answered 400 fails go-sdk's connection too.
		{"go-sdk purged never", "go-sdk", AppReconnectNever, purged, false, nil},
		// a call timeout leaves the connection as it was.
		{"go-sdk timeout never", "go-sdk", AppReconnectNever, timeout, false, []Req{ReqCall}},
		// the application connects anew; the missing session gets no DELETE.
		{"go-sdk 404 on_failure", "go-sdk", AppReconnectOnFailure, resume404, true, []Req{ReqInitialize, ReqInitialized}},
		// Close sends a DELETE for a session not known missing, then initialize.
		{"go-sdk purged on_failure", "go-sdk", AppReconnectOnFailure, purged, true, []Req{ReqDelete, ReqInitialize, ReqInitialized}},
		// before the renewal is due, the closed session fails the call at once.
		{"go-sdk 404 30s, not yet", "go-sdk", "30s", resume404, false, nil},
		// ts-sdk keeps the dead id: the call is sent and will get 404.
		{"ts-sdk 404 never", "ts-sdk", AppReconnectNever, tsResume404, false, []Req{ReqCall}},
		{"ts-sdk 404 on_failure", "ts-sdk", AppReconnectOnFailure, tsResume404, true, []Req{ReqInitialize, ReqInitialized}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := Profile(c.profile)
			cfg.AppReconnect = c.app
			b := New(&cfg, rand.New(rand.NewPCG(1, 2)))
			open(t, b)
			var a Action
			for _, in := range c.fail {
				if a = b.Step(in); a.Kind == ActWait {
					a = b.Step(Input{Kind: InTimer})
				}
			}
			if a.Kind != ActEndCall || a.Outcome != Failed {
				t.Fatalf("the call did not fail: %+v", a)
			}
			if d, ok := cfg.ReconnectAfter(); a.Renew != ok || a.RenewAfter != d {
				t.Errorf("renew %v after %v, want %v after %v", a.Renew, a.RenewAfter, ok, d)
			}
			a = b.Step(Input{Kind: InStartCall, Renew: c.renew})
			if len(c.want) == 0 {
				if a.Kind != ActEndCall || a.Outcome != Failed {
					t.Fatalf("next call: %+v, want it failed without a request", a)
				}
				return
			}
			for i, r := range c.want {
				if a.Kind != ActSend || a.Req != r {
					t.Fatalf("next call, request %d: %+v, want %v", i, a, r)
				}
				if r == ReqInitialize && !a.Reconnect {
					t.Errorf("the re-initialize after a failed call is not a reconnect")
				}
				status := 200
				if r == ReqInitialized {
					status = 202
				}
				a = b.Step(Input{Kind: InResponse, Status: status, Session: r == ReqInitialize})
			}
		})
	}
}

// A bad app_reconnect is named with its value.
func TestAppReconnectValidate(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"sometimes": `"sometimes" is not one of [never on_failure] or a duration`, "-1s": "-1s is negative", "30s": "", "never": "", "on_failure": ""} {
		cfg, _ := Profile("go-sdk")
		cfg.AppReconnect = v
		var got string
		for _, e := range cfg.Validate() {
			got += e.Error()
		}
		if want == "" && got != "" || want != "" && !strings.Contains(got, "app_reconnect: "+want) {
			t.Errorf("app_reconnect = %q: %q, want %q", v, got, want)
		}
	}
}

// resume_give_up: a ts-sdk client retries a resume answered 404, as any
// failed resume, and once its retries are spent it leaves the call waiting
// for the call timeout; under "fail" the first 404 fails the call.
func TestResumeGiveUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		giveUp string
		breaks []Input // after the stream broke with an id and the resume was sent
	}{
		{"404", GiveUpWait, []Input{{Kind: InResponse, Status: 404}, {Kind: InResponse, Status: 404}}},
		{"503", GiveUpWait, []Input{{Kind: InResponse, Status: 503}, {Kind: InResponse, Status: 503}}},
		{"network", GiveUpWait, []Input{{Kind: InStreamEnd, Cursor: 5, HasID: true}, {Kind: InStreamEnd, Cursor: 5, HasID: true}}},
		{"404 fail", GiveUpFail, []Input{{Kind: InResponse, Status: 404}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := Profile("ts-sdk")
			cfg.ResumeGiveUp = c.giveUp
			b := New(&cfg, rand.New(rand.NewPCG(1, 3)))
			open(t, b)
			a := b.Step(Input{Kind: InStreamEnd, Cursor: 5, HasID: true})
			resumes := 0
			for _, in := range append([]Input{{Kind: InTimer}}, c.breaks...) {
				if a.Kind == ActWait {
					a = b.Step(Input{Kind: InTimer})
				}
				if in.Kind == InTimer {
					continue
				}
				if a.Kind != ActSend || a.Req != ReqResume {
					t.Fatalf("after %d resumes: %+v, want a resume", resumes, a)
				}
				resumes++
				a = b.Step(in)
			}
			if c.giveUp == GiveUpFail {
				if a.Kind != ActEndCall || a.Outcome != Failed {
					t.Fatalf("under fail: %+v, want the call failed", a)
				}
				return
			}
			if resumes != cfg.MaxRetries || a.Kind != ActAwait || !b.InCall() {
				t.Fatalf("after %d resumes: %+v (in call %v), want the call left waiting after %d", resumes, a, b.InCall(), cfg.MaxRetries)
			}
			if a := b.Step(Input{Kind: InStreamEnd, Cursor: 5, HasID: true}); a.Kind != ActAwait {
				t.Fatalf("a stream end while waiting: %+v", a)
			}
			if a := b.Step(Input{Kind: InCallTimeout}); a.Kind != ActEndCall || a.Outcome != Failed || a.Cause != CauseAbandoned {
				t.Fatalf("the call timeout: %+v, want the call failed, abandoned", a)
			}
		})
	}
}

// Under 2026-07-28 (no resumption, so no event id) a break re-issues the
// call with backoff, except for a profile that fails a call whose stream
// broke before any id (no_id = "fail", go-sdk): it fails at once, and the
// next call goes out without a new server/discover.
func TestBreakWithoutResumption(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		profile string
		want    ActionKind
	}{
		{"compliant", ActWait}, // a re-issue after its backoff
		{"ts-sdk", ActWait},    // unchecked: that SDK does not speak the revision
		{"go-sdk", ActEndCall}, // "request terminated without response"
	} {
		t.Run(c.profile, func(t *testing.T) {
			t.Parallel()
			b := brain(t, c.profile)
			b.cfg.Discover = true
			if a := b.Step(Input{Kind: InStartCall}); a.Req != ReqDiscover {
				t.Fatalf("start: %+v, want server/discover", a)
			}
			if a := b.Step(Input{Kind: InResponse, Status: 200}); a.Req != ReqCall {
				t.Fatalf("discover 200: %+v, want the call", a)
			}
			b.Step(Input{Kind: InResponse, Status: 200})
			a := b.Step(Input{Kind: InStreamEnd, Cursor: 3, NoResume: true})
			if a.Kind != c.want {
				t.Fatalf("break: %+v, want kind %d", a, c.want)
			}
			if a.Kind == ActEndCall {
				if a.Outcome != Failed || b.Reissues != 0 {
					t.Errorf("break: %+v with %d re-issues, want failed and none", a, b.Reissues)
				}
				if n := b.Step(Input{Kind: InStartCall}); n.Req != ReqCall {
					t.Errorf("next call: %+v, want the call itself", n)
				}
				return
			}
			if n := b.Step(Input{Kind: InTimer}); n.Req != ReqCall || !n.Reissue {
				t.Errorf("after the wait: %+v, want a re-issue", n)
			}
		})
	}
}
