package check

import (
	"fmt"
	"sort"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/report"
)

// ServerCounts is what the server side counted, apart from the production
// logs Judge reads: the reference replicas' in-memory counters and, for a
// Redis event store, what XINFO STREAM says of each call's stream.
type ServerCounts struct {
	// Attempts holds every call attempt a replica counted, by Token.
	Attempts map[string]AttemptCount
	// ResultsByStream counts results a replica sent on a stream it
	// replayed from Redis for a call another replica ran.
	ResultsByStream map[string]int
	// Missing names the replica processes whose counters could not be
	// read; the attempts they ran are unreconciled, not mismatched.
	Missing []string
	// Redis holds XINFO STREAM of each attempt's stream, by Token; nil when
	// the design keeps no events in Redis or Redis did not answer.
	Redis map[string]StreamInfo
	// Priming is true when every stream begins with the priming event
	// (index 0), which XINFO counts and the counters do not.
	Priming bool
	// StoreFaults is true when the run faulted the store (an outage or a
	// restart): appends may have failed, so Redis may hold fewer entries
	// than were produced.
	StoreFaults bool
	// Listeners holds, by name, what the replicas counted of each
	// listener's subscriptions/listen streams: the most any had due (the
	// notifications sent to it) and the notifications they wrote.
	Listeners map[string]ListenerCount
	// Horizon is the run's end, ns since its start: a kill at or after
	// horizon − 3 intervals is the end of the run, not a death.
	Horizon int64
}

// ListenerCount is one listener as the replicas counted it together.
type ListenerCount struct{ Due, Written int64 }

// AttemptCount is one attempt as the replica that ran it counted it.
type AttemptCount struct {
	Session, Stream string
	Events          int   // E
	Produced        int   // events 1..E produced
	ResultsSent     int   // its result written to a client
	Killed          bool  // its producer stopped before the result
	KilledAt        int64 // ns since the start of the run
	Cancelled       bool  // killed because its response stream closed (protocol.Caps.CancelOnClose)
	// Memory is true for an in-memory event store; StoreFirst is then the
	// first index the store still held when the counters were read (-1: no
	// such stream), and StoreGone says the store went with its process
	// right after (a hard or planned stop).
	Memory     bool
	StoreFirst int64
	StoreGone  bool
}

// StreamInfo is XINFO STREAM of one stream.
type StreamInfo struct {
	Exists       bool
	EntriesAdded int64 // every XADD the stream took, trimmed ones included (Redis 7)
	Length       int64
	FirstIndex   int64 // index of the first entry it still holds; -1 when empty
}

// maxMismatches is how many mismatches a report lists; MismatchCount has
// them all.
const maxMismatches = 50

// Reconcile holds a judged history to the server side's own counts:
//
//   - no phantom events: every event a client received was produced, as the
//     counters of the replica that ran its attempt say;
//   - the production log and the counters agree on how many events each
//     attempt produced (two records kept apart in the replica);
//   - a result a client received was sent, as some replica counted it;
//   - events_unproduced agrees with E minus what the counters say was
//     produced: for each call Judge found a death in, a replica counted an
//     attempt of it killed, and E − (the most any attempt produced) ≤ its
//     unproduced ≤ E − (what the killed attempt produced);
//   - every resume answered 400 "purged" asked for an event that was
//     produced and is no longer stored: the in-memory store no longer held
//     it (or went with its process), or XINFO STREAM shows the stream gone
//     or starting past it;
//   - every event lost as purged was produced, unless its call's attempt
//     was still producing when the run ended. (A replay is all or nothing,
//     so a call that fails on a purge loses events that are still stored
//     too: being stored is not a mismatch for them.)
//   - for Redis, the stream took no more entries than were produced, and
//     exactly as many when no store fault could fail an append.
func Reconcile(h *history.History, j *history.Judgment, sc *ServerCounts) *report.Reconciliation {
	rc := &reconciler{h: h, j: j, sc: sc, rec: &report.Reconciliation{Sources: []string{"replica counters"}},
		incomplete: len(sc.Missing) > 0, unreconciled: map[[2]int32]bool{}}
	if sc.Redis != nil {
		rc.rec.Sources = append(rc.rec.Sources, "redis XINFO STREAM entries-added")
	}
	rc.rec.Missing = sc.Missing
	rc.production()
	rc.receipts()
	rc.byCalls()
	for i := range h.Calls {
		rc.call(&h.Calls[i])
	}
	rc.purgeAnswers()
	rc.redis()
	rc.rec.Unreconciled = int64(len(rc.unreconciled))
	rc.rec.OK = rc.rec.MismatchCount == 0
	return rc.rec
}

// reconciler is one Reconcile: the history, its judgment and the server's
// counts it holds them to, and what the checks found so far.
type reconciler struct {
	h   *history.History
	j   *history.Judgment
	sc  *ServerCounts
	rec *report.Reconciliation

	incomplete   bool                      // some replica's counters could not be read
	unreconciled map[[2]int32]bool         // calls an unread replica may have served
	logged       map[string]map[int32]bool // the production log, per attempt: distinct indices 1..E
	calls        map[[2]int32]*history.Call
	byCall       map[[2]int32][]string // the attempts the replicas counted, per call
}

// miss records a mismatch (the first maxMismatches in full).
func (rc *reconciler) miss(call, check, format string, args ...any) {
	rc.rec.MismatchCount++
	if len(rc.rec.Mismatches) < maxMismatches {
		rc.rec.Mismatches = append(rc.rec.Mismatches, report.Mismatch{Call: call, Check: check, Detail: fmt.Sprintf(format, args...)})
	}
}

// known is the replicas' count of attempt tok of call (c, k); a call an
// unread replica may have served is unreconciled.
func (rc *reconciler) known(tok string, c, k int32) (AttemptCount, bool) {
	a, ok := rc.sc.Attempts[tok]
	if !ok && rc.incomplete {
		rc.unreconciled[[2]int32{c, k}] = true
	}
	return a, ok
}

// production holds the production log to the replicas' counts of events
// produced, attempt by attempt.
func (rc *reconciler) production() {
	// The production log, per attempt: distinct indices 1..E.
	rc.logged = map[string]map[int32]bool{}
	for _, p := range rc.h.Produced {
		tok := history.Token(p.Client, p.Seq, p.Attempt)
		if rc.logged[tok] == nil {
			rc.logged[tok] = map[int32]bool{}
		}
		if !p.Start && p.Index >= 1 {
			rc.logged[tok][p.Index] = true
		}
	}
	rc.calls = map[[2]int32]*history.Call{}
	for i := range rc.h.Calls {
		c := &rc.h.Calls[i]
		rc.calls[[2]int32{c.Client, c.Seq}] = c
	}
	toks := make([]string, 0, len(rc.logged))
	for tok := range rc.logged {
		toks = append(toks, tok)
	}
	sort.Strings(toks)
	for _, tok := range toks {
		c, k, _, _ := history.ParseToken(tok)
		if rc.calls[[2]int32{c, k}] == nil {
			continue // not one of this run's calls
		}
		a, ok := rc.known(tok, c, k)
		if !ok {
			if !rc.incomplete {
				rc.miss(tok, "production", "the production log has %d events of this attempt; no replica counted it", len(rc.logged[tok]))
			}
			continue
		}
		if n := len(rc.logged[tok]); n != a.Produced {
			rc.miss(tok, "production", "the production log has %d events, the replica counted %d produced", n, a.Produced)
		}
	}
}

// receipts checks that nothing was received that was not produced, and
// that a received result was counted sent.
func (rc *reconciler) receipts() {
	// Receipts: nothing received that was not produced; results sent.
	results := map[string]int{}
	for _, a := range rc.sc.Attempts {
		results[a.Stream] += a.ResultsSent
	}
	for s, n := range rc.sc.ResultsByStream {
		results[s] += n
	}
	seen := map[[4]int32]bool{}
	for _, r := range rc.h.Receipts {
		c := rc.calls[[2]int32{r.Client, r.Seq}]
		if c == nil || r.Index < 1 {
			continue
		}
		k := [4]int32{r.Client, r.Seq, r.Attempt, r.Index}
		if seen[k] {
			continue
		}
		seen[k] = true
		rc.rec.EventsReceived++
		tok := history.Token(r.Client, r.Seq, r.Attempt)
		a, ok := rc.known(tok, r.Client, r.Seq)
		if !ok {
			if !rc.incomplete {
				rc.miss(tok, "phantom", "the client received event %d of an attempt no replica counted", r.Index)
			}
			continue
		}
		if int(r.Index) > a.Produced {
			rc.miss(tok, "phantom", "the client received event %d; the replica counted %d produced", r.Index, a.Produced)
		}
		if r.Index == c.E && results[a.Stream] == 0 {
			rc.miss(tok, "result", "the client received the result; no replica counted it sent")
		}
	}
}

// byCalls groups the attempts the replicas counted by call.
func (rc *reconciler) byCalls() {
	rc.byCall = map[[2]int32][]string{}
	for tok := range rc.sc.Attempts {
		c, k, _, ok := history.ParseToken(tok)
		if ok {
			rc.byCall[[2]int32{c, k}] = append(rc.byCall[[2]int32{c, k}], tok)
		}
	}
}

// call checks one call's unproduced events against the attempts killed,
// and its events lost as purged against what was produced.
func (rc *reconciler) call(c *history.Call) {
	key := [2]int32{c.Client, c.Seq}
	rc.rec.CallsChecked++
	toks := rc.byCall[key]
	sort.Strings(toks)
	name := fmt.Sprintf("c%d.k%d", c.Client, c.Seq)
	maxAll, minKilled, killed := 0, -1, false
	for _, tok := range toks {
		a := rc.sc.Attempts[tok]
		maxAll = max(maxAll, a.Produced)
		if a.Killed && a.KilledAt < rc.sc.Horizon-3*rc.h.Interval {
			killed = true
			if minKilled < 0 || a.Produced < minKilled {
				minKilled = a.Produced
			}
		}
	}
	if u, died := rc.j.Unproduced[key]; died && !rc.unreconciled[key] {
		rc.rec.UnproducedCalls++
		switch {
		case !killed:
			rc.miss(name, "unproduced", "the checker counted %d unproduced; no replica counted an attempt of the call killed", u)
		case u < int64(int(c.E)-maxAll) || u > int64(int(c.E)-minKilled):
			rc.miss(name, "unproduced", "the checker counted %d unproduced; the counters allow %d to %d (E %d, the most produced %d, the killed attempt %d)",
				u, int(c.E)-maxAll, int(c.E)-minKilled, c.E, maxAll, minKilled)
		}
	}
	if c.End >= 0 && c.Outcome == clients.Failed && c.Cause == clients.CausePurged && !rc.unreconciled[key] {
		rc.purged(c, key, toks, name)
	}
}

// purged checks that each event of a call failed on a purge, counted lost
// as purged, was produced (or still being produced when the run ended).
func (rc *reconciler) purged(c *history.Call, key [2]int32, toks []string, name string) {
	recv := map[int32]bool{}
	for _, r := range rc.h.Receipts {
		if r.Client == c.Client && r.Seq == c.Seq {
			recv[r.Index] = true
		}
	}
	_, died := rc.j.Unproduced[key]
	running := false // an attempt was still producing when the run ended
	for _, tok := range toks {
		if a := rc.sc.Attempts[tok]; a.Killed && a.KilledAt >= rc.sc.Horizon-3*rc.h.Interval {
			running = true
		}
	}
	for idx := int32(1); idx <= c.E; idx++ {
		if recv[idx] {
			continue
		}
		producedLog := false
		for _, tok := range toks {
			if rc.logged[tok][idx] {
				producedLog = true
			}
		}
		if died && !producedLog {
			continue // counted unproduced, not purged
		}
		rc.rec.PurgedChecked++
		produced := false
		for _, tok := range toks {
			if rc.sc.Attempts[tok].Produced >= int(idx) {
				produced = true
			}
		}
		if !produced && !running {
			rc.miss(name, "purged", "event %d is counted lost as purged; no replica counted it produced, and no attempt was still producing at the end", idx)
		}
	}
}

// purgeAnswers checks that every 400 "purged" asked for an event that was
// produced and is gone from the store.
func (rc *reconciler) purgeAnswers() {
	for i := range rc.h.Requests {
		r := &rc.h.Requests[i]
		if r.Kind != clients.ReqResume || r.Status != 400 || !r.Purged || r.Attempt < 0 {
			continue
		}
		tok := history.Token(r.Client, r.Seq, r.Attempt)
		a, ok := rc.known(tok, r.Client, r.Seq)
		if !ok {
			if !rc.incomplete {
				rc.miss(tok, "purged", "a resume was answered purged for an attempt no replica counted")
			}
			continue
		}
		rc.rec.PurgeAnswers++
		idx := int64(r.Cursor) + 1
		gone := false
		if a.Memory && (a.StoreGone || a.StoreFirst < 0 || a.StoreFirst > idx) {
			gone = true
		}
		if si, ok := rc.sc.Redis[tok]; ok && (!si.Exists || si.FirstIndex < 0 || si.FirstIndex > idx) {
			gone = true
		}
		switch {
		case int64(a.Produced) < idx:
			rc.miss(tok, "purged", "a resume after event %d was answered purged; the replica counted only %d produced", r.Cursor, a.Produced)
		case !a.Memory && rc.sc.Redis == nil:
			// no store view to hold it to: produced is all that is checked
		case !gone:
			rc.miss(tok, "purged", "a resume after event %d was answered purged; the store still held event %d at the end", r.Cursor, idx)
		}
	}
}

// redis holds each Redis stream's entries added to the events produced.
func (rc *reconciler) redis() {
	if rc.sc.Redis != nil {
		rtoks := make([]string, 0, len(rc.sc.Redis))
		for tok := range rc.sc.Redis {
			rtoks = append(rtoks, tok)
		}
		sort.Strings(rtoks)
		for _, tok := range rtoks {
			si := rc.sc.Redis[tok]
			a, ok := rc.sc.Attempts[tok]
			if !ok || !si.Exists {
				continue
			}
			rc.rec.StreamsInRedis++
			want := int64(a.Produced)
			if rc.sc.Priming {
				want++
			}
			switch {
			case si.EntriesAdded > want:
				rc.miss(tok, "redis", "the stream took %d entries; the replica counted %d events produced (priming included)", si.EntriesAdded, want)
			case !rc.sc.StoreFaults && si.EntriesAdded != want:
				rc.miss(tok, "redis", "the stream took %d entries, %d were produced (priming included), and no store fault could fail an append", si.EntriesAdded, want)
			}
		}
	}
}
