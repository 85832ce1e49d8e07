package clients

import (
	"math/rand/v2"
	"time"
)

// Req names a request a client sends.
type Req uint8

const (
	ReqNone        Req = iota
	ReqInitialize      // POST initialize, no session id
	ReqInitialized     // POST notifications/initialized
	ReqCall            // POST tools/call, answered with an SSE stream
	ReqResume          // GET with Last-Event-ID
	ReqStandalone      // GET without Last-Event-ID: the standalone stream
	ReqDelete          // DELETE: end the session
	ReqDiscover        // POST server/discover: how a 2026-07-28 client opens (Config.Discover)
	ReqListen          // POST subscriptions/listen: a 2026-07-28 client's long-lived notification stream (Listener)
)

var reqNames = [...]string{"none", "initialize", "initialized", "call", "resume", "standalone", "delete", "discover", "listen"}

func (r Req) String() string { return reqNames[r] }

// InputKind says what happened to the client.
type InputKind uint8

const (
	InStartCall   InputKind = iota // the workload starts a new logical call
	InResponse                     // the answer to the request in flight arrived
	InStreamEnd                    // the call's SSE stream ended: result, error or drop
	InTimer                        // the wait the brain asked for is over
	InCallTimeout                  // the call's own timeout fired
	InFinish                       // the workload has no more calls for this client
)

// Input is one thing that happened, as the engine saw it.
type Input struct {
	Kind InputKind

	// InStartCall.
	Renew bool // the application connects a new session first (app_reconnect; the time Action.RenewAfter named has come)

	// InResponse.
	Status  int  // HTTP status
	Session bool // initialize: the response carried Mcp-Session-Id
	Purged  bool // 400 because the events after the cursor were evicted
	// RetryHint is also the Retry-After of a 503.

	// InStreamEnd.
	Result    bool          // the call's result arrived
	RPCError  bool          // the stream ended with a JSON-RPC error (an orphaned call)
	Cursor    int           // index of the last event received on the stream, -1 if none
	HasID     bool          // the client holds an event id it can resume from
	RetryHint time.Duration // the server's retry: hint, 0 if none
	NoResume  bool          // the protocol era has no resumption at all
}

// ActionKind says what the engine must do next.
type ActionKind uint8

const (
	ActAwait   ActionKind = iota // nothing to do until the next input
	ActSend                      // send Req now
	ActWait                      // wait Delay, then feed InTimer
	ActEndCall                   // the logical call is over (Outcome, Cause)
	ActIdle                      // the client is done
)

// Outcome is how a logical call ended.
type Outcome uint8

const (
	Completed Outcome = iota + 1
	Failed
)

// Cause is why a failed call's undelivered events are lost.
type Cause uint8

const (
	CauseNone      Cause = iota
	CauseAbandoned       // the client gave up: timeout, retries, 404, an error it does not recover from
	CausePurged          // a resume was answered 400 "purged"
	CauseError           // the stream ended with a JSON-RPC error: its producer died
)

// Action is the brain's decision.
type Action struct {
	Kind      ActionKind
	Req       Req           // ActSend
	Cursor    int           // ActSend ReqResume: the Last-Event-ID index
	Reconnect bool          // ActSend: sent because a stream broke or a request failed
	Reissue   bool          // ActSend ReqCall: a re-issue of the same logical call
	Delay     time.Duration // ActWait
	Outcome   Outcome       // ActEndCall
	Cause     Cause         // ActEndCall with Failed
	// ActEndCall with Failed: the application connects a new session
	// RenewAfter after the failure (app_reconnect). The engine feeds Renew
	// with the first InStartCall at or after that time; a renewal already
	// due stays as it is.
	Renew      bool
	RenewAfter time.Duration
}

// Brain is one client's protocol state. The zero value is not usable; call New.
// A Brain is not safe for concurrent use: one goroutine (or the simulator's
// single loop) owns it.
type Brain struct {
	cfg *Config
	rng *rand.Rand

	initialized bool // initialize was answered and the session (if any) is believed alive
	session     bool // holds a session id, possibly a dead one
	missing     bool // stale: the session got a 404, so it is known to be gone and gets no DELETE
	closed      bool // on_404 = fail: the connection failed for good; calls fail without a request
	renewing    bool // the DELETE of the old session is in flight; initialize comes next
	inCall      bool
	pending     Req
	next        Action // the send to make when the wait is over

	cursor   int
	hasID    bool
	mark     int // cursor when the retry count was last reset
	retries  int
	prev     time.Duration
	reissue  bool // the next ReqCall re-issues the logical call
	hanging  bool // stuck, or resumes given up (resume_give_up = "wait"): waiting for the call timeout, nothing else
	Reissues int  // re-issues of the current call
}

// New returns a brain that follows cfg and draws jitter from rng.
func New(cfg *Config, rng *rand.Rand) *Brain {
	b := &Brain{}
	b.Init(cfg, rng)
	return b
}

// Init resets b in place to a fresh client; the simulator keeps brains in a
// slice and uses this instead of New.
func (b *Brain) Init(cfg *Config, rng *rand.Rand) {
	*b = Brain{cfg: cfg, rng: rng, cursor: -1, mark: -1}
}

// Config returns the configuration b follows.
func (b *Brain) Config() *Config { return b.cfg }

// HasSession reports whether b holds a session id (possibly a dead one).
func (b *Brain) HasSession() bool { return b.session }

// InCall reports whether a logical call is open.
func (b *Brain) InCall() bool { return b.inCall }

// Pending is the request in flight, if any.
func (b *Brain) Pending() Req { return b.pending }

func (b *Brain) send(r Req, reconnect bool) Action {
	b.pending = r
	a := Action{Kind: ActSend, Req: r, Reconnect: reconnect}
	if r == ReqResume {
		a.Cursor = b.cursor
	}
	if r == ReqCall {
		a.Reissue = b.reissue
		a.Reconnect = a.Reconnect || b.reissue
		b.reissue = false
	}
	return a
}

func (b *Brain) fail(c Cause) Action {
	b.inCall, b.pending, b.hanging, b.renewing = false, ReqNone, false, false
	a := Action{Kind: ActEndCall, Outcome: Failed, Cause: c}
	a.RenewAfter, a.Renew = b.cfg.ReconnectAfter()
	return a
}

// connFailed closes the connection for good when a is the end of the call
// and the client is one whose connection fails with it (on_404 = "fail",
// go-sdk: a resume answered with anything but 2xx, a resume out of retries,
// a non-transient error on a call's POST). The session id is kept: closing
// it later still sends a DELETE, as go-sdk's ClientSession.Close does.
func (b *Brain) connFailed(a Action) Action {
	if a.Kind == ActEndCall && b.cfg.On404 == On404Fail {
		b.closed = true
	}
	return a
}

// giveUp ends the client's attempts to get request r through: the call
// fails with cause c, unless r is a resume and the client leaves the call
// waiting for its timeout once it stops resuming (resume_give_up = "wait").
func (b *Brain) giveUp(r Req, c Cause) Action {
	if r == ReqResume && b.cfg.ResumeGiveUp == GiveUpWait {
		b.pending, b.hanging, b.next = ReqNone, true, Action{}
		return Action{Kind: ActAwait}
	}
	return b.fail(c)
}

// later schedules a reconnect send after d. It gives up instead when the
// retry budget is spent.
func (b *Brain) later(r Req, d time.Duration) Action {
	if b.retries >= b.cfg.MaxRetries {
		return b.giveUp(r, CauseAbandoned)
	}
	b.retries++
	if r == ReqCall {
		b.reissue = true
		b.Reissues++
	}
	b.next = b.send(r, true)
	b.pending = ReqNone
	if d <= 0 { // send at once: the request is in flight now
		a := b.next
		b.next, b.pending = Action{}, a.Req
		return a
	}
	return Action{Kind: ActWait, Delay: d}
}

func (b *Brain) backoff() time.Duration {
	d := Delay(b.cfg, b.retries, b.prev, b.rng)
	b.prev = d
	return d
}

func (b *Brain) startCall(renew bool) Action {
	b.inCall, b.hanging = true, false
	b.cursor, b.mark, b.hasID, b.retries, b.prev, b.reissue, b.Reissues = -1, -1, false, 0, 0, false, 0
	if renew {
		// The application replaces its session: it closes the old one (a
		// DELETE, unless the server already said it is gone, as go-sdk's
		// ClientSession.Close does) and connects anew.
		b.closed = false
		if b.session && b.initialized && !b.missing {
			b.renewing = true
			return b.send(ReqDelete, false)
		}
		b.session, b.initialized, b.missing = false, false, false
		return b.open(true)
	}
	if b.closed {
		return b.fail(CauseAbandoned) // go-sdk: "connection closed", no request
	}
	if !b.initialized {
		return b.open(false)
	}
	return b.send(ReqCall, false)
}

// reinit starts over with initialize and marks the call for re-issue.
func (b *Brain) reinit() Action {
	if b.retries >= b.cfg.MaxRetries {
		return b.fail(CauseAbandoned)
	}
	b.retries++
	b.session, b.initialized, b.missing, b.reissue = false, false, false, true
	b.Reissues++
	b.hasID, b.cursor, b.mark = false, -1, -1
	return b.open(true)
}

// open sends the request that opens a client's conversation with a
// server: initialize, or server/discover in an era without one.
func (b *Brain) open(reconnect bool) Action {
	if b.cfg.Discover {
		return b.send(ReqDiscover, reconnect)
	}
	return b.send(ReqInitialize, reconnect)
}

func (b *Brain) on404() Action {
	switch b.cfg.On404 {
	case On404Reinit:
		return b.reinit()
	case On404Fail:
		// ErrSessionMissing: the connection is closed, and closing it sends
		// no DELETE. A 404 on notifications/initialized fails the connect
		// itself: the application holds no session, and its next call
		// connects again.
		b.closed = b.pending != ReqInitialized
		b.session, b.initialized = false, false
		return b.fail(CauseAbandoned)
	case On404Stuck:
		if b.pending == ReqResume || b.pending == ReqStandalone {
			b.pending, b.hanging = ReqNone, true
			return Action{Kind: ActAwait}
		}
		return b.fail(CauseAbandoned)
	default: // stale: keep the dead id
		b.missing = true
		return b.fail(CauseAbandoned)
	}
}

// onError handles a stream that can never resume.
func (b *Brain) onError(c Cause) Action {
	if b.cfg.OnError == OnErrorReissue {
		b.hasID, b.cursor, b.mark = false, -1, -1
		if b.retries >= b.cfg.MaxRetries {
			return b.fail(c)
		}
		b.retries++
		b.reissue = true
		b.Reissues++
		return b.send(ReqCall, true)
	}
	return b.fail(c)
}

// retryStatus handles 503 and 409: retried with backoff (or after the
// server's Retry-After hint) only by clients that retry on any failure; the
// others give up.
func (b *Brain) retryStatus(r Req, hint time.Duration) Action {
	if b.cfg.RetryOn != RetryOnAny {
		if r == ReqInitialize || r == ReqInitialized || r == ReqDiscover {
			b.session, b.initialized = false, false
		}
		return b.giveUp(r, CauseAbandoned)
	}
	if b.retries >= b.cfg.MaxRetries {
		return b.giveUp(r, CauseAbandoned)
	}
	d := hint
	if d <= 0 || !b.cfg.HonorRetryHint {
		d = b.backoff() // attempt n waits the n-th delay: before counting it
	}
	b.retries++
	b.next = b.send(r, true)
	b.pending = ReqNone
	return Action{Kind: ActWait, Delay: d}
}

// Step feeds one input to the brain and returns what to do next.
func (b *Brain) Step(in Input) Action {
	switch in.Kind {
	case InStartCall:
		return b.startCall(in.Renew)
	case InTimer:
		a := b.next
		b.next = Action{}
		if a.Kind != ActSend {
			return Action{Kind: ActAwait}
		}
		b.pending = a.Req
		return a
	case InCallTimeout:
		if !b.inCall {
			return Action{Kind: ActAwait}
		}
		return b.fail(CauseAbandoned)
	case InFinish:
		b.inCall = false
		if b.session && b.initialized && !b.missing { // no DELETE of a session the server said is gone
			return b.send(ReqDelete, false)
		}
		return Action{Kind: ActIdle}
	case InStreamEnd:
		return b.streamEnd(in)
	case InResponse:
		return b.response(in)
	}
	return Action{Kind: ActAwait}
}

func (b *Brain) response(in Input) Action {
	r := b.pending
	b.pending = ReqNone
	ok := in.Status >= 200 && in.Status < 300
	switch r {
	case ReqInitialize:
		if ok {
			b.initialized, b.session, b.missing = true, in.Session, false
			return b.send(ReqInitialized, false)
		}
		return b.retryStatus(ReqInitialize, in.RetryHint)
	case ReqDiscover:
		if ok {
			// Nothing to hold: no session, no initialized notification.
			b.initialized, b.session, b.missing = true, false, false
			return b.send(ReqCall, false)
		}
		return b.retryStatus(ReqDiscover, in.RetryHint)
	case ReqInitialized:
		switch {
		case ok:
			return b.send(ReqCall, false)
		case in.Status == 404:
			b.pending = r
			return b.on404()
		}
		return b.retryStatus(ReqInitialized, in.RetryHint)
	case ReqCall:
		switch {
		case ok:
			return Action{Kind: ActAwait}
		case in.Status == 404:
			b.pending = r
			return b.on404()
		case in.Status == 503:
			return b.retryStatus(ReqCall, in.RetryHint)
		}
		return b.connFailed(b.fail(CauseAbandoned))
	case ReqResume, ReqStandalone:
		if !ok && r == ReqResume && b.cfg.ResumeGiveUp == GiveUpWait {
			// The TypeScript SDK: any failed resume is retried as a
			// network error is, a 404 too (which says the session is
			// gone), and a 405 ends the resuming at once; either way the
			// call is left waiting.
			if in.Status == 404 {
				b.missing = true
			}
			if in.Status == 405 {
				return b.giveUp(r, CauseAbandoned)
			}
			return b.retryStatus(r, in.RetryHint)
		}
		switch {
		case ok:
			// The standalone stream never carries the call's events: all
			// that is left is to wait for the call timeout.
			b.hanging = r == ReqStandalone
			return Action{Kind: ActAwait}
		case in.Status == 404:
			b.pending = r
			return b.on404()
		case in.Status == 400 || in.Status == 405:
			c := CauseAbandoned
			if in.Purged {
				c = CausePurged
			}
			return b.connFailed(b.onError(c))
		case in.Status == 409 || in.Status == 503:
			return b.connFailed(b.retryStatus(r, in.RetryHint))
		}
		return b.connFailed(b.fail(CauseAbandoned))
	case ReqDelete:
		b.session, b.initialized, b.missing = false, false, false
		if b.renewing && b.inCall {
			b.renewing = false
			return b.open(true)
		}
		return Action{Kind: ActIdle}
	}
	return Action{Kind: ActAwait}
}

func (b *Brain) streamEnd(in Input) Action {
	if in.Result {
		b.inCall, b.pending = false, ReqNone
		return Action{Kind: ActEndCall, Outcome: Completed}
	}
	if b.hanging {
		return Action{Kind: ActAwait}
	}
	if in.RPCError {
		return b.onError(CauseError)
	}
	if in.Cursor > b.cursor || b.pending == ReqCall || b.pending == ReqNone {
		b.cursor = in.Cursor
	}
	b.hasID = in.HasID
	b.pending = ReqNone
	if b.cursor > b.mark {
		if b.cfg.ResetOnProgress {
			b.retries, b.prev = 0, 0
		}
		b.mark = b.cursor
	}
	hint := time.Duration(0)
	if b.cfg.HonorRetryHint {
		hint = in.RetryHint
	}
	delay := func() time.Duration {
		if hint > 0 {
			return hint
		}
		return b.backoff()
	}
	switch {
	case in.NoResume && b.cfg.NoID == NoIDFail:
		// An era without resumption sends no event id, so every break is
		// one before any id. A client that fails such a call at once does
		// so here too: go-sdk v1.8 at 2026-07-28 answers the call with
		// "request terminated without response" and sends nothing more
		// (mcp/streamable.go lines 2692 and 2532, processStream and handleSSE;
		// TestDrift2026GoSDK).
		return b.fail(CauseAbandoned)
	case in.NoResume:
		return b.later(ReqCall, delay())
	case b.hasID:
		return b.connFailed(b.later(ReqResume, delay()))
	}
	switch b.cfg.NoID {
	case NoIDFail:
		return b.fail(CauseAbandoned)
	case NoIDReissue:
		return b.later(ReqCall, delay())
	case NoIDStandalone:
		if b.session {
			if b.retries >= b.cfg.MaxRetries {
				return b.fail(CauseAbandoned)
			}
			d := delay()
			b.retries++
			b.next = b.send(ReqStandalone, true)
			b.pending = ReqNone
			b.hanging = false
			return Action{Kind: ActWait, Delay: d}
		}
		return b.later(ReqCall, delay())
	}
	b.hanging = true // wait for the call timeout
	return Action{Kind: ActAwait}
}
