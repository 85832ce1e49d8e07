package history_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stormsim/stormsim/clients"
	. "github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/history/historytest"
	"github.com/stormsim/stormsim/report"
)

// The histories these tests judge are written by hand, in ms
// (historytest.Builder).
const ms = historytest.Ms

var newHist, seq, at = historytest.New, historytest.Seq, historytest.At

// judge runs Judge and checks what must hold of every judgment: the
// conservation law, the split of lost by cause, the lost series, and series
// of one length.
func judge(t *testing.T, h *History) *Judgment {
	t.Helper()
	j := Judge(h)
	tt := j.Totals
	if got := tt.EventsDelivered + tt.EventsLost + tt.EventsPending; got != tt.EventsExpected {
		t.Errorf("conservation: expected %d != delivered %d + lost %d + pending %d",
			tt.EventsExpected, tt.EventsDelivered, tt.EventsLost, tt.EventsPending)
	}
	if tt.EventsLost != tt.LostByCause.Sum() {
		t.Errorf("events_lost %d != sum of lost_by_cause %d (%+v)", tt.EventsLost, tt.LostByCause.Sum(), tt.LostByCause)
	}
	if got := sum(j.Series.EventsLost); got != tt.EventsLost {
		t.Errorf("events_lost series sums to %d, want events_lost %d", got, tt.EventsLost)
	}
	n := int((h.Horizon + h.Step - 1) / h.Step)
	names, cols := j.Series.Columns()
	for i, col := range cols {
		if len(col) != n {
			t.Errorf("series %s has %d steps, want %d", names[i], len(col), n)
		}
	}
	return j
}

// wantTotals compares every field of the totals, naming each that differs.
func wantTotals(t *testing.T, got, want report.Totals) {
	t.Helper()
	if got == want {
		return
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if g != w {
			t.Errorf("%s = %+v, want %+v", gv.Type().Field(i).Name, g, w)
		}
	}
}

func wantSamples(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s latencies = %v ms, want %v ms", what, got, want)
	}
}

// wantSeries checks a series step by step: the listed steps hold the listed
// values, every other step 0.
func wantSeries(t *testing.T, what string, got []int64, want map[int]int64) {
	t.Helper()
	for i, v := range got {
		if v != want[i] {
			t.Errorf("series %s[%d] = %d, want %d", what, i, v, want[i])
		}
	}
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// A call of E=5 whose stream breaks after index 2; the resume is answered
// 404 and the client gives up. The producer lived and produced all 5, so the
// 3 undelivered events are lost because the call was abandoned.
func TestJudgeLoss(t *testing.T) {
	t.Parallel()
	b := newHist()
	b.H.Stored = true
	b.Handshake(0)
	call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 50, Answered: 100, Closed: 1100, Status: 200})
	b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Session: true, Reconnect: true, Cursor: 2,
		Sent: 1200, Answered: 1250, Closed: 1250, Status: 404})
	b.Call(0, 0, 5, 50, 1300, clients.Failed, clients.CauseAbandoned)
	b.Produce(0, 0, 0, 60, 150, 1, 5) // 150, 350, ..., 950 ms
	b.Recv(call, []int32{0, 1, 2}, []int64{100, 160, 360})
	b.Drop(call, 1100)

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 1, CallsFailed: 1,
		EventsExpected: 5, EventsDelivered: 2, EventsLost: 3,
		LostByCause: report.Causes{Abandoned: 3},
		Drops:       1, Reconnects: 1,
		Requests: 4, SessionRequests: 3, // initialize carries no session id
		HTTP404: 1, Rate404: 1.0 / 3,
		StorePeakOpsPerS: 5, // five events stored in the first second
	})
	wantSamples(t, "replay", j.Replay, nil)
	wantSamples(t, "recovery", j.Recovery, nil)
	s := j.Series
	wantSeries(t, "http_404", s.HTTP404, map[int]int64{1: 1}) // answered at 1.25 s
	wantSeries(t, "events_lost", s.EventsLost, map[int]int64{1: 3})
	wantSeries(t, "reconnects", s.Reconnects, map[int]int64{1: 1})
	wantSeries(t, "session_requests", s.SessionRequests, map[int]int64{0: 2, 1: 1})
	wantSeries(t, "active_streams", s.ActiveStreams, map[int]int64{0: 1}) // 0.1 s to 1.1 s: open at 1 s
	wantSeries(t, "store_ops", s.StoreOps, map[int]int64{0: 5})
}

// A resume whose cursor lags behind what the client received replays index
// 3 a second time: one duplicate, counted once as delivered.
func TestJudgeDuplicate(t *testing.T) {
	t.Parallel()
	b := newHist()
	b.H.Stored = true
	call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 700, Status: 200})
	res := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Session: true, Reconnect: true, Cursor: 2,
		Sent: 800, Answered: 850, Closed: 910, Status: 200})
	b.Call(0, 0, 5, 0, 910, clients.Completed, clients.CauseNone)
	b.Produce(0, 0, 0, 10, 100, 1, 5) // 100, 300, 500, 700, 900 ms
	b.Recv(call, []int32{1, 2, 3}, []int64{110, 310, 510})
	b.Drop(call, 700)
	b.Recv(res, []int32{3, 4, 5}, []int64{860, 861, 910})

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 1, CallsCompleted: 1,
		EventsExpected: 5, EventsDelivered: 5,
		EventsDuplicated: 1,
		EventsReplayed:   1, // index 4 (produced 700 ms, before the resume's answer); 3 is a duplicate, 5 was live
		Drops:            1, Reconnects: 1, Resumes: 1,
		Requests: 2, SessionRequests: 2,
		StorePeakOpsPerS: 6, // five events and one resume read
	})
	wantSamples(t, "recovery", j.Recovery, []float64{161}) // drop 700 ms, index 4 at 861 ms
	if len(j.Replay) != 1 {
		t.Errorf("replay latencies = %v, want one sample", j.Replay)
	}
}

// A server the user brings is judged by event id (ByEventID): the same id
// twice is a duplicate, the same index twice on one stream too, and an index
// delivered again on a later stream (a resume that restarted the call's
// progress) is redone, not a duplicate.
func TestJudgeByEventID(t *testing.T) {
	t.Parallel()
	b := newHist()
	b.H.HaveProduction, b.H.ByEventID = false, true
	call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 700, Status: 200})
	res := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Session: true, Reconnect: true, Cursor: 3,
		Sent: 800, Answered: 850, Closed: 1000, Status: 200})
	b.Call(0, 0, 5, 0, 1000, clients.Completed, clients.CauseNone)
	ids := []string{"a", "b", "b", "c", "c2"} // "b" written twice; index 3 again under another id
	for i, idx := range []int32{1, 2, 2, 3, 3} {
		b.H.Receipts = append(b.H.Receipts, Receipt{Client: 0, Seq: 0, Index: idx, T: int64(100+100*i) * ms, Req: call, ID: ids[i]})
	}
	b.Drop(call, 700)
	// The resume restarts the progress: 1, 2, 3 again under new ids, then 4, 5.
	for i, idx := range []int32{1, 2, 3, 4, 5} {
		b.H.Receipts = append(b.H.Receipts, Receipt{Client: 0, Seq: 0, Index: idx, T: int64(860+10*i) * ms, Req: res, ID: fmt.Sprintf("r%d", i)})
	}

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 1, CallsCompleted: 1,
		EventsExpected: 5, EventsDelivered: 5,
		EventsDuplicated: 2, // id "b" again; index 3 again on the first stream
		EventsRedone:     3, // 1, 2, 3 again on the resume stream
		EventsReplayed:   5, // with no production log, every event of a resume stream
		Drops:            1, Reconnects: 1, Resumes: 1,
		Requests: 2, SessionRequests: 2,
	})
}

// Out of order: a new event whose index is below the highest index the call
// already received.
func TestJudgeReordering(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		order []int32
		want  int64
	}{
		{[]int32{1, 3, 2, 4}, 1},
		{[]int32{1, 2, 3, 4}, 0},
		{[]int32{2, 1, 4, 3}, 2},
		{[]int32{4, 3, 2, 1}, 3},
	} {
		t.Run(fmt.Sprint(tc.order), func(t *testing.T) {
			t.Parallel()
			b := newHist()
			call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 900, Status: 200})
			b.Call(0, 0, 4, 0, 900, clients.Completed, clients.CauseNone)
			b.Produce(0, 0, 0, 10, 100, 1, 4)
			b.Recv(call, tc.order, at(600, 100, 4))

			j := judge(t, b.H)
			wantTotals(t, j.Totals, report.Totals{
				Calls: 1, CallsCompleted: 1,
				EventsExpected: 4, EventsDelivered: 4,
				EventsOutOfOrder: tc.want,
				Requests:         1, SessionRequests: 1,
			})
		})
	}
}

// The resume is answered 400 "purged" and the call fails with cause purged:
// every event after the cursor is lost as purged, none as abandoned.
func TestJudgePurgeGap(t *testing.T) {
	t.Parallel()
	b := newHist()
	b.H.Stored = true
	call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 600, Status: 200})
	b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Session: true, Reconnect: true, Cursor: 2,
		Sent: 700, Answered: 750, Closed: 750, Status: 400, Purged: true})
	b.Call(0, 0, 6, 0, 760, clients.Failed, clients.CausePurged)
	b.Produce(0, 0, 0, 10, 100, 1, 6) // 100 ... 1100 ms: the producer lived
	b.Recv(call, []int32{1, 2}, []int64{110, 310})
	b.Drop(call, 600)

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 1, CallsFailed: 1,
		EventsExpected: 6, EventsDelivered: 2, EventsLost: 4,
		LostByCause: report.Causes{Purged: 4},
		Drops:       1, Reconnects: 1,
		Requests: 2, SessionRequests: 2,
		HTTP400:          1,
		StorePeakOpsPerS: 5, // 100 ... 900 ms in the first second, 1100 ms in the next
	})
	wantSeries(t, "events_lost", j.Series.EventsLost, map[int]int64{0: 4})
}

// The producer dies after index 3 of 10, long before the end of the run: 7
// events are never produced, and when the client gives up they are lost as
// unproduced. An event produced but never delivered is still abandoned.
func TestJudgeUnproducedTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		recv []int32
		want report.Totals
	}{
		{"all-produced-delivered", []int32{1, 2, 3}, report.Totals{
			EventsDelivered: 3, EventsLost: 7, LostByCause: report.Causes{Unproduced: 7},
		}},
		{"one-produced-undelivered", []int32{1, 2}, report.Totals{
			EventsDelivered: 2, EventsLost: 8, LostByCause: report.Causes{Unproduced: 7, Abandoned: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newHist()
			b.H.Stored = true
			call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 700, Status: 200})
			// The session lived on the dead replica.
			b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Session: true, Reconnect: true, Cursor: tc.recv[len(tc.recv)-1],
				Sent: 900, Answered: 950, Closed: 950, Status: 404})
			b.Call(0, 0, 10, 0, 1000, clients.Failed, clients.CauseAbandoned)
			b.Produce(0, 0, 0, 10, 200, 1, 3) // 200, 400, 600 ms, then nothing
			b.Recv(call, tc.recv, at(210, 200, len(tc.recv)))
			b.Drop(call, 700)

			want := tc.want
			want.Calls, want.CallsFailed = 1, 1
			want.EventsExpected = 10
			want.EventsUnproduced = 7
			want.Drops, want.Reconnects = 1, 1
			want.Requests, want.SessionRequests = 2, 2
			want.HTTP404, want.Rate404 = 1, 0.5
			want.StorePeakOpsPerS = 3
			j := judge(t, b.H)
			wantTotals(t, j.Totals, want)
		})
	}
}

// Attempt 0 produces and delivers 1..3, and its producer dies; the client
// re-issues the call, and attempt 1 produces and delivers 1..5. Indices 1..3
// are redone, not duplicated (another attempt), and not delivered twice.
func TestJudgeReissue(t *testing.T) {
	t.Parallel()
	b := newHist()
	a0 := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 700, Status: 200})
	a1 := b.Req(Request{Client: 0, Seq: 0, Attempt: 1, Kind: clients.ReqCall, Session: true, Reconnect: true, Reissue: true,
		Sent: 900, Answered: 950, Closed: 1910, Status: 200})
	b.Call(0, 0, 5, 0, 1910, clients.Completed, clients.CauseNone)
	b.Produce(0, 0, 0, 10, 200, 1, 3)   // 200, 400, 600 ms, then the process dies
	b.Produce(0, 0, 1, 920, 1100, 1, 5) // 1100 ... 1900 ms
	b.Recv(a0, seq(1, 3), at(210, 200, 3))
	b.Drop(a0, 700)
	b.Recv(a1, seq(1, 5), at(1110, 200, 5))

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 1, CallsCompleted: 1, CallsReissued: 1,
		EventsExpected: 5, EventsDelivered: 5,
		EventsRedone: 3,
		// Attempt 0 died with 4 and 5 unproduced (its next event was due at
		// 800 ms, before attempt 1 began); the re-issue produced them again,
		// so none is lost.
		EventsUnproduced: 2,
		Drops:            1, Reconnects: 1,
		Requests: 2, SessionRequests: 2,
	})
	wantSamples(t, "replay", j.Replay, nil)
	wantSamples(t, "recovery", j.Recovery, []float64{1010}) // drop 700 ms, index 4 at 1710 ms
	// Attempt 1's stream, 0.95 s to 1.91 s, is open at 1 s; attempt 0's is not.
	wantSeries(t, "active_streams", j.Series.ActiveStreams, map[int]int64{0: 1})
	wantSeries(t, "reconnects", j.Series.Reconnects, map[int]int64{0: 1})
}

// Calls still open at the horizon: their undelivered events are pending, not
// lost; a producer still producing at the horizon did not die.
func TestJudgePending(t *testing.T) {
	t.Parallel()
	b := newHist()
	call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 59_000, Answered: 59_050, Closed: 60_000, Status: 200})
	b.Call(0, 0, 5, 59_000, -1, 0, clients.CauseNone)
	b.Produce(0, 0, 0, 59_010, 59_400, 1, 3) // 59.4, 59.6, 59.8 s: the run ends
	b.Recv(call, []int32{0, 1, 2}, []int64{59_050, 59_410, 59_610})
	// A second call whose request the client has not sent yet.
	b.Call(1, 0, 4, 59_900, -1, 0, clients.CauseNone)
	// A completed call alongside.
	done := b.Req(Request{Client: 2, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 500, Status: 200})
	b.Call(2, 0, 2, 0, 500, clients.Completed, clients.CauseNone)
	b.Produce(2, 0, 0, 10, 100, 1, 2)
	b.Recv(done, []int32{1, 2}, []int64{110, 310})

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 3, CallsCompleted: 1, CallsPending: 2,
		EventsExpected: 11, EventsDelivered: 4,
		EventsPending: 7, // 3, 4, 5 of the first call; all 4 of the second
		Requests:      2, SessionRequests: 2,
	})
}

// A drop at 1 s; the resume is sent at 1.5 s, answered at 1.6 s, and its
// first event arrives at 1.7 s: both latencies are 700 ms. The events the
// replica had produced by the resume's answer are the replayed ones.
func TestJudgeReplayAndRecoveryLatency(t *testing.T) {
	t.Parallel()
	b := newHist()
	b.H.Stored = true
	call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Session: true, Sent: 0, Answered: 50, Closed: 1000, Status: 200})
	res := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqResume, Session: true, Reconnect: true, Cursor: 4,
		Sent: 1500, Answered: 1600, Closed: 2010, Status: 200})
	b.Call(0, 0, 10, 0, 2010, clients.Completed, clients.CauseNone)
	b.Produce(0, 0, 0, 10, 200, 1, 10) // index i at 200·i ms
	b.Recv(call, seq(1, 4), at(210, 200, 4))
	b.Drop(call, 1000)
	b.Recv(res, seq(5, 10), []int64{1700, 1701, 1702, 1703, 1810, 2010})

	j := judge(t, b.H)
	wantTotals(t, j.Totals, report.Totals{
		Calls: 1, CallsCompleted: 1,
		EventsExpected: 10, EventsDelivered: 10,
		EventsReplayed: 4, // 5..8, produced at or before 1.6 s; 9 and 10 came live
		Drops:          1, Reconnects: 1, Resumes: 1,
		Requests: 2, SessionRequests: 2,
		StorePeakOpsPerS: 6, // second 1: indices 5..9 and the resume read
	})
	wantSamples(t, "replay", j.Replay, []float64{700})
	wantSamples(t, "recovery", j.Recovery, []float64{700})
	wantSeries(t, "active_streams", j.Series.ActiveStreams, map[int]int64{1: 1}) // the resume, 1.6 s to 2.01 s
	wantSeries(t, "store_ops", j.Series.StoreOps, map[int]int64{0: 4, 1: 6, 2: 1})
}

// A stateless server keeps no events: what it produced for a client that had
// gone is wasted.
func TestJudgeWasted(t *testing.T) {
	t.Parallel()
	t.Run("abandoned", func(t *testing.T) {
		t.Parallel()
		b := newHist()
		b.H.NoStore = true
		call := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: 0, Answered: 50, Closed: 500, Status: 200})
		b.Call(0, 0, 5, 0, 500, clients.Failed, clients.CauseAbandoned)
		b.Produce(0, 0, 0, 10, 200, 1, 5) // the producer runs on to the end
		b.Recv(call, []int32{1, 2}, []int64{210, 410})
		b.Drop(call, 500)

		j := judge(t, b.H)
		wantTotals(t, j.Totals, report.Totals{
			Calls: 1, CallsFailed: 1,
			EventsExpected: 5, EventsDelivered: 2, EventsLost: 3,
			LostByCause:  report.Causes{Abandoned: 3},
			EventsWasted: 3,
			Drops:        1, Requests: 1,
		})
	})
	t.Run("reissued", func(t *testing.T) {
		t.Parallel()
		b := newHist()
		b.H.NoStore = true
		a0 := b.Req(Request{Client: 0, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: 0, Answered: 50, Closed: 500, Status: 200})
		a1 := b.Req(Request{Client: 0, Seq: 0, Attempt: 1, Kind: clients.ReqCall, Reconnect: true, Reissue: true,
			Sent: 600, Answered: 650, Closed: 1610, Status: 200})
		b.Call(0, 0, 5, 0, 1610, clients.Completed, clients.CauseNone)
		b.Produce(0, 0, 0, 10, 200, 1, 5)  // 200 ... 1000 ms
		b.Produce(0, 0, 1, 610, 800, 1, 5) // 800 ... 1600 ms
		b.Recv(a0, []int32{1, 2}, []int64{210, 410})
		b.Drop(a0, 500)
		b.Recv(a1, seq(1, 5), at(810, 200, 5))

		j := judge(t, b.H)
		wantTotals(t, j.Totals, report.Totals{
			Calls: 1, CallsCompleted: 1, CallsReissued: 1,
			EventsExpected: 5, EventsDelivered: 5,
			EventsWasted: 3, // attempt 0's 3, 4, 5
			EventsRedone: 5, // attempt 0 had produced all 5 by 1.6 s
			Drops:        1, Reconnects: 1, Requests: 2,
		})
		wantSamples(t, "recovery", j.Recovery, []float64{710}) // drop 500 ms, index 3 at 1210 ms
	})
}

// A stream is active in step i when it is open at the end of the step.
func TestJudgeActiveStreams(t *testing.T) {
	t.Parallel()
	b := newHist()
	b.H.Horizon = 5_000 * ms
	for i, r := range [][2]int64{
		{500, 3500},  // open at 1, 2 and 3 s
		{1200, 1900}, // within step 1: never open at a step's end
		{1500, 2000}, // closed exactly at 2 s: not open then
		{2000, 2001}, // answered exactly at 2 s: open then
	} {
		b.Req(Request{Client: int32(i), Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: r[0], Answered: r[0], Closed: r[1], Status: 200})
	}
	// Neither a failed call nor a non-stream request is a stream.
	b.Req(Request{Client: 9, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: 100, Answered: 100, Closed: 4000, Status: 503})
	b.Req(Request{Client: 9, Seq: -1, Attempt: -1, Kind: clients.ReqStandalone, Sent: 100, Answered: 100, Closed: 4000, Status: 200})

	j := judge(t, b.H)
	wantSeries(t, "active_streams", j.Series.ActiveStreams, map[int]int64{0: 1, 1: 2, 2: 1})
	if j.Totals.HTTP503 != 1 || j.Totals.Requests != 6 {
		t.Errorf("http_503 %d, requests %d; want 1, 6", j.Totals.HTTP503, j.Totals.Requests)
	}
}

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	for _, x := range [][3]int32{{0, 0, 0}, {1, 2, 3}, {12, 345, 6}, {1 << 30, 7, 99}} {
		s := Token(x[0], x[1], x[2])
		c, k, a, ok := ParseToken(s)
		if !ok || c != x[0] || k != x[1] || a != x[2] {
			t.Errorf("ParseToken(%q) = %d, %d, %d, %v; want %v", s, c, k, a, ok, x)
		}
	}
	if s := Token(1, 2, 3); s != "c1.k2.a3" {
		t.Errorf("Token(1, 2, 3) = %q, want c1.k2.a3", s)
	}
	for _, s := range []string{"", "x", "c1.k2", "c1.k2.a3x", "c1.k2.a", "c01.k2.a3", "c1.k2.a3 ", " c1.k2.a3", "c1-k2-a3", "a1.k2.c3", "c1.k2.a3.a4"} {
		if c, k, a, ok := ParseToken(s); ok {
			t.Errorf("ParseToken(%q) = %d, %d, %d, true; want false", s, c, k, a)
		}
	}
}
