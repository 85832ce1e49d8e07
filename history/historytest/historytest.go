// Package historytest writes histories by hand for tests: every test states
// the whole history it judges, in milliseconds, so the expected counts can
// be read off it.
package historytest

import (
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
)

// Ms is a millisecond in a history's nanoseconds: the builder's times are
// written in ms.
const Ms = int64(1e6)

// Builder builds a hand-written history in H.
type Builder struct{ H *history.History }

// New returns a builder of an empty history: a 60 s horizon, 1 s steps, an
// event every 200 ms, production logs read.
func New() *Builder {
	return &Builder{H: &history.History{Horizon: 60_000 * Ms, Step: 1_000 * Ms, Interval: 200 * Ms, HaveProduction: true}}
}

// Call adds a logical call of client c, number k, with E events, started at
// start ms. end < 0 leaves it pending.
func (b *Builder) Call(c, k, e int32, start, end int64, out clients.Outcome, cause clients.Cause) {
	if end >= 0 {
		end *= Ms
	}
	b.H.Calls = append(b.H.Calls, history.Call{Client: c, Seq: k, E: e, Start: start * Ms, End: end, Outcome: out, Cause: cause})
}

// Req adds a request (its times given in ms) and returns its position.
func (b *Builder) Req(r history.Request) int32 {
	r.Sent *= Ms
	r.Answered *= Ms
	r.Closed *= Ms
	b.H.Requests = append(b.H.Requests, r)
	return int32(len(b.H.Requests) - 1)
}

// Recv records receipts on request ri's stream: index idx[i] at ts[i] ms.
func (b *Builder) Recv(ri int32, idx []int32, ts []int64) {
	if len(idx) != len(ts) {
		panic("recv: indices and times differ in length")
	}
	r := b.H.Requests[ri]
	for i := range idx {
		b.H.Receipts = append(b.H.Receipts, history.Receipt{Client: r.Client, Seq: r.Seq, Attempt: r.Attempt, Index: idx[i], T: ts[i] * Ms, Req: ri})
	}
}

// Drop records the end of request ri's stream at t ms, before the result.
func (b *Builder) Drop(ri int32, t int64) {
	r := b.H.Requests[ri]
	b.H.Drops = append(b.H.Drops, history.Drop{Client: r.Client, Seq: r.Seq, T: t * Ms, Req: ri})
}

// Produce logs the start of an attempt at start ms, then indices from..to,
// the first at first ms and one per Interval after it.
func (b *Builder) Produce(c, k, a int32, start, first int64, from, to int32) {
	b.H.Produced = append(b.H.Produced, history.Produced{Client: c, Seq: k, Attempt: a, T: start * Ms, Start: true})
	t := first * Ms
	for i := from; i <= to; i++ {
		b.H.Produced = append(b.H.Produced, history.Produced{Client: c, Seq: k, Attempt: a, Index: i, T: t})
		t += b.H.Interval
	}
}

// Handshake adds the initialize and initialized every session-ful client
// sends before its first call.
func (b *Builder) Handshake(c int32) {
	b.Req(history.Request{Client: c, Seq: -1, Attempt: -1, Kind: clients.ReqInitialize, Sent: 0, Answered: 20, Closed: 20, Status: 200})
	b.Req(history.Request{Client: c, Seq: -1, Attempt: -1, Kind: clients.ReqInitialized, Session: true, Sent: 30, Answered: 40, Closed: 40, Status: 202})
}

// Seq returns the indices from..to.
func Seq(from, to int32) []int32 {
	var s []int32
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// At returns n times, the first at t0 ms and one per dt ms after it.
func At(t0, dt int64, n int) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = t0 + int64(i)*dt
	}
	return ts
}
