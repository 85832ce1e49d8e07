package clients

import (
	"math/rand/v2"
	"time"
)

// Listener is one client's subscriptions/listen stream (2026-07-28): the
// long-lived POST stream on which it receives the server's notifications.
// It has no event ids and no replay, so a client keeps it open for as long
// as it wants notifications. What it does when the stream drops or its
// open is refused is the profile's listen_reopen, here and nowhere else
// (both engines drive a Listener): under "backoff" it opens a new one
// after the profile's backoff (Delay, with the server's retry hint when
// the profile honours hints) and never gives up while the client listens,
// for a stream of notifications has no call to fail; under "none" it opens
// no other and stops listening, as go-sdk v1.8 does. The zero value is not
// usable; call Init. A Listener is not safe for concurrent use.
type Listener struct {
	cfg *Config
	rng *rand.Rand

	open    bool          // the stream is open
	pending bool          // a listen request is in flight or waiting for its backoff
	stopped bool          // the client no longer listens
	n       int           // failed opens since the stream was last open
	prev    time.Duration // the previous backoff, for the decorrelated strategy
}

// ListenAction is what the engine must do for a listener.
type ListenAction struct {
	Send   bool          // send subscriptions/listen after Delay
	Delay  time.Duration // 0: now
	Reopen bool          // the send re-opens a stream that dropped or was refused
}

// Init resets l to a listener that follows cfg and draws jitter from rng.
func (l *Listener) Init(cfg *Config, rng *rand.Rand) { *l = Listener{cfg: cfg, rng: rng} }

// Open is the client's first listen request, when it starts to listen.
func (l *Listener) Open() ListenAction {
	if l.pending || l.open || l.stopped {
		return ListenAction{}
	}
	return l.send(0, false)
}

// Answered is the listen request's answer: 200 opens the stream (the
// acknowledgement follows on it); anything else (0: none came) is retried
// after the backoff, or under listen_reopen = "none" stops the listener.
func (l *Listener) Answered(status int, hint time.Duration) ListenAction {
	if !l.pending {
		return ListenAction{}
	}
	l.pending = false
	if l.stopped {
		return ListenAction{}
	}
	if status == 200 {
		l.open, l.n, l.prev = true, 0, 0
		return ListenAction{}
	}
	return l.retry(hint)
}

// Dropped is the stream ending without the client closing it: a restart,
// a cut, a partition, a drain. The client opens a new one after the
// backoff, or under listen_reopen = "none" stops listening.
func (l *Listener) Dropped(hint time.Duration) ListenAction {
	if !l.open {
		return ListenAction{}
	}
	l.open = false
	if l.stopped {
		return ListenAction{}
	}
	return l.retry(hint)
}

// Stop ends the client's listening: it closes the stream and opens no other.
func (l *Listener) Stop() { l.stopped, l.open = true, false }

// IsOpen reports whether the stream is open.
func (l *Listener) IsOpen() bool { return l.open }

// Due reports, when an action's Delay is over, whether its request is
// still to be sent: not once the client has stopped listening.
func (l *Listener) Due() bool { return l.pending && !l.stopped }

// retry re-opens the stream after the backoff, or stops the listener when
// the profile re-opens none.
func (l *Listener) retry(hint time.Duration) ListenAction {
	if l.cfg.ListenReopen == ListenReopenNone {
		l.Stop()
		return ListenAction{}
	}
	d := Delay(l.cfg, l.n, l.prev, l.rng)
	if l.cfg.HonorRetryHint && hint > d {
		d = hint
	}
	l.prev = d
	l.n++
	return l.send(d, true)
}

// send counts a listen request, which the engine sends after d (when Due
// still holds then).
func (l *Listener) send(d time.Duration, reopen bool) ListenAction {
	l.pending = true
	return ListenAction{Send: true, Delay: d, Reopen: reopen}
}
