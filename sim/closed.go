package sim

import (
	"time"

	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/workload"
)

// The request workload's closed-loop clients (workload.arrivals =
// "closed"): workload.clients clients join at arrival_rate a second. Each
// keeps at most one logical request outstanding: it sends it, waits for
// the answer or its request timeout, retries under the client's request
// keys (clients.Config.Retry: at once, or after the profile's backoff with
// its jitter), and after the answer, or after giving the request up,
// thinks (workload.Think) before its next. A client that waits out a
// backoff sends nothing meanwhile, which is what lets backoff relieve the
// server. Each client holds a connection: its first attempt on a new one
// is a handshake that costs replica.handshake_time (protocol.RequestCost)
// and passes the admission bucket; its requests on it do not. The
// reconnect trigger drops every connection at once: the server loses its
// queue, and every client abandons what it waited for and handshakes
// again at the same instant. docs/model.md, "Closed-loop clients".

// closedClient is one closed-loop client. An event scheduled for it
// carries its gen, so a reconnect cancels its pending backoff and think.
type closedClient struct {
	att  int32         // the attempt it waits for, -1 for none
	cur  int32         // its logical request, -1 while it thinks
	gen  int32         // bumped by a reconnect
	conn bool          // it holds an accepted connection
	prev time.Duration // the last backoff wait of this request or handshake
}

// join starts a client: it connects and sends its first request.
func (e *reqEngine) join() {
	e.arrived++
	e.cl = append(e.cl, closedClient{att: -1, cur: -1})
	e.next(int32(len(e.cl) - 1))
}

// next starts client c's next logical request; none starts at or after
// duration, as no open-loop request arrives then.
func (e *reqEngine) next(c int32) {
	if e.now >= int64(e.sc.Duration) {
		return
	}
	e.cl[c].cur = int32(len(e.outcome))
	e.outcome = append(e.outcome, reqWaiting)
	e.t.Requests++
	e.csend(c, 0)
}

// csend sends attempt n of client c's handshake, when it holds no
// connection and the server handshakes, or of its request.
func (e *reqEngine) csend(c int32, n int16) {
	cl := &e.cl[c]
	hs := !cl.conn && e.rc.HandshakeTime > 0
	if n == 0 {
		cl.prev = 0
	}
	if hs {
		e.t.Handshakes++
	}
	ans, a, ok := e.enter(c, n, !cl.conn, hs)
	if ok {
		e.cl[c].att = a
		return
	}
	if ans.Why == protocol.WhyBudget {
		e.giveUp(c)
		return
	}
	e.cretry(c, n, ans.RetryHint)
}

// cretry sends client c's attempt n+1 after the client's wait, or gives
// its request up.
func (e *reqEngine) cretry(c int32, n int16, hint time.Duration) {
	cl := &e.cl[c]
	cl.att = -1
	wait, ok := e.cc.Retry(int(n), hint, cl.prev, e.rng)
	if !ok {
		e.giveUp(c)
		return
	}
	cl.prev = wait
	e.push(reqEv{at: e.now + int64(wait), kind: rqCSend, req: c, n: n + 1, a: cl.gen})
}

// giveUp fails client c's request, if it has one, and thinks.
func (e *reqEngine) giveUp(c int32) {
	cl := &e.cl[c]
	cl.att = -1
	if cl.cur >= 0 {
		e.fail(cl.cur)
		cl.cur = -1
	}
	e.think(c)
}

// think schedules client c's next request after its think time.
func (e *reqEngine) think(c int32) {
	d := workload.Think(&e.sc.Workload, e.thk.Float64())
	e.push(reqEv{at: e.now + d, kind: rqCNext, req: c, a: e.cl[c].gen})
}

// ctimeout abandons attempt a if its client still waits for it.
func (e *reqEngine) ctimeout(a int32) {
	at := &e.att[a]
	if at.done || at.gone || e.cl[at.req].att != a {
		return
	}
	at.gone = true
	e.t.Timeouts++
	e.cretry(at.req, at.n, 0)
}

// answered takes the answer to attempt a, which its client waited for: a
// handshake connects it, and it sends its request (or, after a reconnect
// found it thinking, its next one) at once; a request completes, and the
// client thinks.
func (e *reqEngine) answered(a int32) {
	at := &e.att[a]
	at.done = true
	c := at.req
	cl := &e.cl[c]
	cl.att = -1
	cl.conn = true
	if at.hs {
		e.t.Connects++
		if cl.cur < 0 {
			e.next(c)
		} else {
			e.csend(c, 0)
		}
		return
	}
	e.t.Completed++
	e.outcome[cl.cur] = reqCompleted
	e.series.Goodput[e.at()]++
	cl.cur = -1
	e.think(c)
}

// dropAll is the reconnect trigger: the restarted server's queue is lost,
// and every client abandons what it waited for (an attempt in service is
// finished for nobody) and reconnects at once.
func (e *reqEngine) dropAll() {
	for _, a := range e.queue {
		e.att[a].done, e.att[a].gone = true, true
	}
	e.t.LostInRestart += int64(len(e.queue))
	e.queue = e.queue[:0]
	for c := range e.cl {
		cl := &e.cl[c]
		if cl.att >= 0 {
			e.att[cl.att].gone = true
			cl.att = -1
		}
		cl.gen++
		cl.conn = false
		e.csend(int32(c), 0)
	}
}
