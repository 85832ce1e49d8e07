package check

import (
	"slices"
	"testing"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/history/historytest"
	"github.com/stormsim/stormsim/report"
)

// reconHist is two calls. Client 0's call (E 5): attempt 0 produces and
// delivers 1..3 and its producer dies; the re-issue produces and delivers
// 1..5. Client 1's call (E 6): 1..6 produced, 1..2 delivered, the resume
// after 2 is answered 400 purged (the store had evicted 1..3), the call
// fails on the purge.
func reconHist() *historytest.Builder {
	b := historytest.New()
	a0 := b.Req(history.Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: 0, Answered: 50, Closed: 700, Status: 200})
	a1 := b.Req(history.Request{Client: 0, Seq: 0, Attempt: 1, Kind: clients.ReqCall, Reconnect: true, Reissue: true, Sent: 900, Answered: 950, Closed: 1910, Status: 200})
	b.Call(0, 0, 5, 0, 1910, clients.Completed, clients.CauseNone)
	b.Produce(0, 0, 0, 10, 200, 1, 3)
	b.Produce(0, 0, 1, 920, 1100, 1, 5)
	b.Recv(a0, historytest.Seq(1, 3), historytest.At(210, 200, 3))
	b.Drop(a0, 700)
	b.Recv(a1, historytest.Seq(1, 5), historytest.At(1110, 200, 5))

	c := b.Req(history.Request{Client: 1, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: 0, Answered: 50, Closed: 500, Status: 200})
	b.Req(history.Request{Client: 1, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Cursor: 2, Reconnect: true, Sent: 3000, Answered: 3050, Closed: 3050, Status: 400, Purged: true})
	b.Call(1, 0, 6, 0, 3050, clients.Failed, clients.CausePurged)
	b.Produce(1, 0, 0, 10, 200, 1, 6)
	b.Recv(c, historytest.Seq(1, 2), historytest.At(210, 200, 2))
	b.Drop(c, 500)
	return b
}

// reconCounts is what the replicas counted of reconHist, truly.
func reconCounts() *ServerCounts {
	return &ServerCounts{
		Horizon: 60_000 * historytest.Ms,
		Attempts: map[string]AttemptCount{
			"c0.k0.a0": {Stream: "s0", Events: 5, Produced: 3, Killed: true, KilledAt: 750 * historytest.Ms, Memory: true, StoreGone: true},
			"c0.k0.a1": {Stream: "s1", Events: 5, Produced: 5, ResultsSent: 1, Memory: true, StoreFirst: 1},
			"c1.k0.a0": {Stream: "s2", Events: 6, Produced: 6, Memory: true, StoreFirst: 4},
		},
	}
}

// TestReconcile holds reconHist to its counters, truthful and then wrong in
// one way each: every check must name the call the wrong count is about.
func TestReconcile(t *testing.T) {
	t.Parallel()
	set := func(tok string, f func(*AttemptCount)) func(*ServerCounts) {
		return func(sc *ServerCounts) {
			a := sc.Attempts[tok]
			f(&a)
			sc.Attempts[tok] = a
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*ServerCounts)
		want   []report.Mismatch // call and check of each mismatch; nil: ok
	}{
		// the truth: everything reconciles
		{"truthful", func(*ServerCounts) {}, nil},
		// the replica says it produced 4 of attempt 1's events; the client got 5, the log has 5
		{"under-reported", set("c0.k0.a1", func(a *AttemptCount) { a.Produced = 4 }),
			[]report.Mismatch{{Call: "c0.k0.a1", Check: "production"}, {Call: "c0.k0.a1", Check: "phantom"}}},
		// the client got a result no replica sent
		{"result unsent", set("c0.k0.a1", func(a *AttemptCount) { a.ResultsSent = 0 }),
			[]report.Mismatch{{Call: "c0.k0.a1", Check: "result"}}},
		// the checker counts 2 unproduced, but no replica killed an attempt
		{"no kill", set("c0.k0.a0", func(a *AttemptCount) { a.Killed = false }),
			[]report.Mismatch{{Call: "c0.k0", Check: "unproduced"}}},
		// the killed attempt had produced all 5: nothing can be unproduced
		{"unproduced too many", set("c0.k0.a0", func(a *AttemptCount) { a.Produced = 5 }),
			[]report.Mismatch{{Call: "c0.k0.a0", Check: "production"}, {Call: "c0.k0", Check: "unproduced"}}},
		// the store still held event 3 when the resume after 2 was answered purged
		{"purge not evicted", set("c1.k0.a0", func(a *AttemptCount) { a.StoreFirst = 3 }),
			[]report.Mismatch{{Call: "c1.k0.a0", Check: "purged"}}},
		// Redis took more entries than the replica produced (5 and the priming event)
		{"redis over", func(sc *ServerCounts) {
			sc.Priming = true
			sc.Redis = map[string]StreamInfo{"c0.k0.a1": {Exists: true, EntriesAdded: 7, Length: 7, FirstIndex: 0}}
		}, []report.Mismatch{{Call: "c0.k0.a1", Check: "redis"}}},
		// Redis took one fewer, and no store fault could fail an append
		{"redis under", func(sc *ServerCounts) {
			sc.Priming = true
			sc.Redis = map[string]StreamInfo{"c0.k0.a1": {Exists: true, EntriesAdded: 5, Length: 5, FirstIndex: 0}}
		}, []report.Mismatch{{Call: "c0.k0.a1", Check: "redis"}}},
		// with a store fault, fewer entries than produced is a failed append, not a mismatch
		{"redis under, store fault", func(sc *ServerCounts) {
			sc.Priming, sc.StoreFaults = true, true
			sc.Redis = map[string]StreamInfo{"c0.k0.a1": {Exists: true, EntriesAdded: 5, Length: 5, FirstIndex: 0}}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := reconHist().H
			j := history.Judge(h)
			sc := reconCounts()
			tc.change(sc)
			r := Reconcile(h, j, sc)
			var got []report.Mismatch
			for _, m := range r.Mismatches {
				got = append(got, report.Mismatch{Call: m.Call, Check: m.Check})
			}
			if !slices.Equal(got, tc.want) || r.OK != (tc.want == nil) || r.MismatchCount != int64(len(tc.want)) {
				t.Errorf("mismatches %+v (ok %v, count %d), want %+v", r.Mismatches, r.OK, r.MismatchCount, tc.want)
			}
			if r.EventsReceived != 10 || r.CallsChecked != 2 || r.UnproducedCalls != 1 || r.PurgeAnswers != 1 || r.PurgedChecked != 4 {
				t.Errorf("checked %+v, want 10 receipts, 2 calls, 1 unproduced, 1 purge answer, 4 purged events", *r)
			}
		})
	}
}

// TestReconcileMissing: a replica whose counters could not be read leaves
// its calls unreconciled, not mismatched.
func TestReconcileMissing(t *testing.T) {
	t.Parallel()
	h := reconHist().H
	sc := reconCounts()
	delete(sc.Attempts, "c1.k0.a0")
	sc.Missing = []string{"replica 2 (pid 99)"}
	r := Reconcile(h, history.Judge(h), sc)
	if !r.OK || r.Unreconciled != 1 || r.MismatchCount != 0 {
		t.Errorf("%+v, want ok with 1 call unreconciled", *r)
	}
	sc.Missing = nil
	if r := Reconcile(h, history.Judge(h), sc); r.OK {
		t.Errorf("an attempt no replica counted, with every replica's counters read, reconciled: %+v", *r)
	}
}
