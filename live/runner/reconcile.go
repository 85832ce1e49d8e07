package runner

import (
	"context"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// serverCounts reads what the server side counted apart from the
// production logs: every reference replica's counters (topo.Counts; call
// it before Close) and, for a Redis event store, XINFO STREAM of every
// call's stream. It returns nil with the reason when the design's server
// keeps no counters stormsim can read.
func serverCounts(ctx context.Context, t *topo.Topology, sc *scenario.Scenario, d *scenario.Design, t0 time.Time) (*check.ServerCounts, string) {
	switch {
	case d.Own != nil:
		return nil, "a server you bring keeps no counters stormsim can read"
	case d.Server == topology.ServerGoSDK:
		return nil, "the go-sdk replica keeps no counters stormsim can read: the SDK exposes no count of the events it produced or sent"
	case t == nil:
		return nil, "no topology"
	}
	counts, missing := t.Counts(ctx)
	out := countsOf(counts, missing, sc, d, t0)
	if protocol.CapsOf(d.Era, d.Sessions, d.Events).Events == topology.EventsRedis {
		if rdb := t.Redis(); rdb != nil {
			info := map[string]check.StreamInfo{}
			for tok, a := range out.Attempts {
				st, err := store.StreamInfo(ctx, rdb, a.Session, a.Stream)
				if err != nil {
					info = nil // Redis did not answer: no XINFO source for this run
					break
				}
				info[tok] = check.StreamInfo{Exists: st.Exists, EntriesAdded: st.EntriesAdded, Length: st.Length, FirstIndex: st.FirstIndex}
			}
			out.Redis = info
		}
	}
	return out, ""
}

// reconcile holds a judged history to the server-side counts.
func reconcile(h *history.History, j *history.Judgment, sc *check.ServerCounts, why string) (*int64, *report.Reconciliation) {
	if sc == nil {
		return nil, &report.Reconciliation{NotReconcilable: why}
	}
	var produced int64
	for _, a := range sc.Attempts {
		produced += int64(a.Produced)
	}
	return &produced, check.Reconcile(h, j, sc)
}

// countsOf turns the reference replicas' counters (and the processes whose
// counters could not be read) into what check.Reconcile holds a history to.
func countsOf(counts []*replica.Counts, missing []string, sc *scenario.Scenario, d *scenario.Design, t0 time.Time) *check.ServerCounts {
	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
	out := &check.ServerCounts{
		Attempts: map[string]check.AttemptCount{}, ResultsByStream: map[string]int{}, Missing: missing,
		Priming: caps.Priming,
		Horizon: int64(sc.Duration + sc.Drain),
	}
	for _, f := range sc.Faults {
		if faults.TouchesStore(f, sc.FaultContext()) {
			out.StoreFaults = true
		}
	}
	base := t0.UnixNano()
	for _, c := range counts {
		for tok, cc := range c.Calls {
			a := check.AttemptCount{Session: cc.Session, Stream: cc.Stream, Events: cc.Events, Produced: cc.Produced,
				ResultsSent: cc.ResultsSent, Killed: cc.Killed, Cancelled: cc.Cancelled, Memory: caps.Events == topology.EventsMemory, StoreFirst: cc.StoreFirst,
				StoreGone: c.Gone}
			if cc.Killed {
				a.KilledAt = cc.KilledNS - base
			}
			out.Attempts[tok] = a
		}
		for s, n := range c.ResultsByStream {
			out.ResultsByStream[s] += n
		}
		for id, lc := range c.Listeners {
			if out.Listeners == nil {
				out.Listeners = map[string]check.ListenerCount{}
			}
			l := out.Listeners[id]
			l.Due, l.Written = max(l.Due, lc.Due), l.Written+lc.Written
			out.Listeners[id] = l
		}
	}
	return out
}

// cancelledOf is what the replicas' counters say closed response streams
// cancelled, in an era where that cancels the call; nil in the others, or
// without counters.
func cancelledOf(sc *check.ServerCounts, d *scenario.Design) *report.Cancelled {
	if sc == nil || !protocol.CapsOf(d.Era, d.Sessions, d.Events).CancelOnClose {
		return nil
	}
	out := &report.Cancelled{}
	for _, a := range sc.Attempts {
		if a.Cancelled {
			out.Calls++
			out.EventsSaved += int64(a.Events - a.Produced)
		}
	}
	return out
}
