package sim

import (
	"math"
	"slices"

	"github.com/stormsim/stormsim/topology"
)

// The in-memory event store of one process, as go-sdk's MemoryEventStore
// and the live store (live/store/memory.go) keep it: one store for the whole
// process, capped in bytes; each append that takes it over the cap is
// followed by purge rounds, each dropping the oldest event of every
// non-empty stream, until it fits again (docs/domain.md §2).
//
// The engine does not queue appends, so the store is settled lazily: each
// time something reads or changes it (a stream starts, ends or is deleted, a
// resume reads it, a series step samples it) it is brought to the present
// by finding, from the appends' arithmetic, the exact appends that overflowed
// the cap since it was last settled, and applying the purge rounds there.
// The result is what evicting at every append gives; the series step plays
// no part in it. Appends at the same instant are taken in the order the
// attempts started.
//
// Every stream appends one event every iv, so over any interval iv long
// each running stream appends exactly once, at its phase (start mod iv). A
// Fenwick tree over phase buckets counts the running streams by phase, which
// gives the number of appends in any interval, and the k-th append after a
// given time, in O(log buckets) plus a scan of one bucket.
//
// A purge round visits no stream it need not. The store counts its rounds
// (rounds); a running stream i, started at a_i*iv + phase, is kept as one
// number f_i = rounds + 1 - a_i - lo_i, where lo_i is the first index it
// still holds. A round that drops an event from it leaves f_i as it is; one
// that finds it empty raises f_i by one. With F = rounds - floor(t/iv), the
// stream holds f_i - F - after_i events at t, where after_i is 1 while its
// append of the current interval is still to come: it is empty exactly when
// f_i = F + after_i, and f_i is never below that. So a round at t counts
// the empty running streams as those at their floor, and lifts them by one:
// f_i = max(f_i, F+1+after_i). Over the phase buckets, in phase order, that
// is a count and a raise on the buckets before t's phase (after_i = 0), on
// those after it (after_i = 1), and one scan of t's own bucket, where both
// kinds meet. A segment tree over the buckets keeps the least f, its count
// and the second least (a raise that passes the second least goes down a
// level), so a round costs O(log buckets) plus the buckets whose distinct
// values it merges. The bytes it frees are an event per non-empty stream,
// corrected for the streams whose oldest event is their priming event (those
// no round has touched since they started: fresh) or their result (running
// streams that appended it at this instant: resAt; ended streams at their
// last round). An ended stream appends no more, so it holds h events and
// empties at the h-th round after its end: it waits in the bucket of that
// round (eb), and in the next round's to be forgotten, as a round that found
// it ended and empty would.
type memStore struct {
	ms   memStreams
	at   int64 // every append at or before at is applied
	held int64 // bytes held at at
	run  int64 // streams still appending (in the phase index)
	// le is countLE(leFor mod iv): the running streams whose phase is at
	// most that of leFor, kept for leFor = at so that a settle counts one
	// bucket, not three.
	le, leFor int64
	leOK      bool
	// nb phase buckets (a power of two, 2^depth): phaseBucketsFor the
	// streams the engine expects, fixed when the first stream is indexed
	nb, depth int
	expect    int // the running streams the engine expects at once; 0: unknown
	fw        []int32
	bk        [][]phaseEntry

	rounds int64 // purge rounds so far
	// the segment tree over the phase buckets (leaves at nb+b):
	// the least f below a node (its children's may be stale below it), how
	// many streams hold it, and the second least; noF when none
	tree  []segNode
	fresh int64 // streams that still hold their priming event
	endNE int64 // ended streams that still hold an event
	// eb[k] lists the ended streams due at round rounds+1+k: at their last
	// non-empty round, or to be forgotten
	eb [][]int32
	// the running streams that appended their result at resTau
	resTau int64
	resAt  []int32
}

// phaseEntry is a running stream in the phase index; f is its purge
// counter (see memStore), raised lazily: its value is the greatest of f and
// the least of every tree node above its bucket. ph is start mod the
// interval, kept so that a bucket scan divides nothing.
type phaseEntry struct {
	start, f, ph int64
	ai, e        int32
}

const (
	minPhaseDepth = 12 // 4096 buckets at the least
	maxPhaseDepth = 18
	// perBucket is the running streams a bucket is sized to hold: countLE,
	// kth and each purge round scan one bucket whole, so a fixed count of
	// buckets made every one of them grow with the clients (at a million
	// clients, 80 streams a bucket)
	perBucket = 8
	noF       = math.MaxInt64
)

// phaseBucketsFor is the phase buckets of a store that holds about streams
// running streams at once, and its log2. The count changes no result: every
// query counts or sorts whole buckets exactly, only how much it scans.
func phaseBucketsFor(streams int) (n, depth int) {
	depth = minPhaseDepth
	for depth < maxPhaseDepth && perBucket<<depth < streams {
		depth++
	}
	return 1 << depth, depth
}

// memOp names a change to a memory store, for Options.memCheck.
type memOp uint8

const (
	memOpSettle memOp = iota // brought to now
	memOpAdd                 // a stream started (and its priming event was appended)
	memOpEnd                 // a stream appends no more
	memOpDelete              // a stream was deleted
	memOpExit                // the process and its store are gone
)

// memStreams holds a process's in-memory streams, one entry each: a
// stream's end, a read and a removal each touch one entry, and not one per
// field array (at a million clients, a cache miss each).
type memStreams struct {
	s []memStream
}

type memStream struct {
	start int64
	r     int64 // once ended: the round it ended at
	ai    int32
	e     int32
	endN  int32 // -1 while the attempt runs
	lo    int32 // once ended: the first index it held then
}

func (m *memStreams) add(ai int32, start int64, e int32) int32 {
	m.s = append(m.s, memStream{start: start, ai: ai, e: e, endN: -1})
	return int32(len(m.s) - 1)
}

// remove swaps stream i out, fixing the index of the one moved into its place.
func (m *memStreams) remove(i int32, attempts []attempt) {
	n := len(m.s) - 1
	attempts[m.s[i].ai].memIdx = -1
	if int(i) != n {
		m.s[i] = m.s[n]
		attempts[m.s[i].ai].memIdx = i
	}
	m.s = m.s[:n]
}

// endedLo is the first index ended stream i holds after rounds rounds.
func (m *memStreams) endedLo(i int32, rounds int64) int64 {
	st := &m.s[i]
	h := max(int64(st.endN)-int64(st.lo)+1, 0)
	return int64(st.lo) + min(rounds-st.r, h)
}

// lo is the first index stream i still holds.
func (s *memStore) lo(i int32, iv int64) int64 {
	m := &s.ms
	if m.s[i].endN >= 0 {
		return m.endedLo(i, s.rounds)
	}
	return s.rounds + 1 - m.s[i].start/iv - s.fOf(m.s[i].ai, m.s[i].start, iv)
}

// memCap is the store's cap in bytes; no cap never purges.
func (e *engine) memCap() int64 {
	if c := e.d.Store.MemoryCapBytes; c > 0 {
		return c
	}
	return math.MaxInt64
}

// memSize is what event k of a stream whose last index is final holds:
// the priming event holds no data, the result is not a progress
// notification, the others are evBytes.
func (e *engine) memSize(k, final int64) int64 {
	ovh := int64(e.d.Store.MemoryOverheadBytes)
	switch k {
	case 0:
		return ovh
	case final:
		return topology.ResultBytes + ovh
	}
	return e.evBytes
}

// memBytes is what events lo to hi of a stream whose last index is final hold.
func (e *engine) memBytes(lo, hi, final int64) int64 {
	if hi < lo {
		return 0
	}
	b := (hi - lo + 1) * e.evBytes
	if lo == 0 {
		b += e.memSize(0, final) - e.evBytes
	}
	if hi == final {
		b += e.memSize(final, final) - e.evBytes
	}
	return b
}

func (s *memStore) bucket(ph, iv int64) int { return int(ph * int64(s.nb) / iv) }

func (s *memStore) fwAdd(b int, d int32) {
	for i := b + 1; i <= s.nb; i += i & -i {
		s.fw[i] += d
	}
}

// fwPrefix counts the running streams in buckets 0..b.
func (s *memStore) fwPrefix(b int) int64 {
	var n int64
	for i := b + 1; i > 0; i -= i & -i {
		n += int64(s.fw[i])
	}
	return n
}

func (s *memStore) index(ai int32, start int64, e int32, iv, f int64) {
	if s.fw == nil {
		s.nb, s.depth = phaseBucketsFor(s.expect)
		s.fw = make([]int32, s.nb+1)
		s.bk = make([][]phaseEntry, s.nb)
		s.treeInit()
	}
	ph := start % iv
	b := s.bucket(ph, iv)
	s.leafOpen(b)
	s.bk[b] = append(s.bk[b], phaseEntry{start: start, f: f, ph: ph, ai: ai, e: e})
	s.leafClose(b)
	s.fwAdd(b, 1)
	s.run++
	if s.leOK && ph <= s.leFor%iv {
		s.le++
	}
}

// unindex takes a running stream out of the phase index and returns its f.
func (s *memStore) unindex(ai int32, start, iv int64) int64 {
	b := s.bucket(start%iv, iv)
	s.leafOpen(b)
	defer s.leafClose(b)
	l := s.bk[b]
	for j := range l {
		if l[j].ai == ai {
			f := l[j].f
			l[j] = l[len(l)-1]
			s.bk[b] = l[:len(l)-1]
			s.fwAdd(b, -1)
			s.run--
			if s.leOK && start%iv <= s.leFor%iv {
				s.le--
			}
			return f
		}
	}
	panic("sim: a running stream missing from its phase bucket")
}

// countLE counts the running streams whose phase is at most x.
func (s *memStore) countLE(x, iv int64) int64 {
	b := s.bucket(x, iv)
	n := s.fwPrefix(b - 1)
	for _, p := range s.bk[b] {
		if p.ph <= x {
			n++
		}
	}
	return n
}

// kth is the k-th smallest phase (1-based) of the running streams.
func (s *memStore) kth(k, iv int64, scratch []int64) (int64, []int64) {
	b, below := 0, int64(0)
	for step := s.nb; step > 0; step >>= 1 {
		if i := b + step; i <= s.nb && below+int64(s.fw[i]) < k {
			b = i
			below += int64(s.fw[i])
		}
	}
	// b is now the bucket holding it (the Fenwick index b+1).
	scratch = scratch[:0]
	for _, p := range s.bk[b] {
		scratch = append(scratch, p.ph)
	}
	slices.Sort(scratch)
	return scratch[k-below-1], scratch
}

// leAt is countLE(at mod iv).
func (s *memStore) leAt(iv int64) int64 {
	if !s.leOK || s.leFor != s.at {
		s.le, s.leFor, s.leOK = s.countLE(s.at%iv, iv), s.at, true
	}
	return s.le
}

// advance moves at to hi and returns how many appends the running streams
// made in between.
func (s *memStore) advance(hi, iv int64) int64 {
	if hi <= s.at {
		return 0
	}
	lo := s.leAt(iv)
	le := s.countLE(hi%iv, iv)
	n := s.run*(hi/iv-s.at/iv) - (s.run - le) + (s.run - lo)
	s.at, s.le, s.leFor = hi, le, hi
	return n
}

// stepped moves at from at to at+1, whose instant has n running streams
// appending (their phase is that of at+1).
func (s *memStore) stepped(n, iv int64) {
	le := s.leAt(iv)
	s.at++
	if s.at%iv == 0 {
		le = 0
	}
	s.le, s.leFor = le+n, s.at
}

// memSettle brings process p's store to now.
func (e *engine) memSettle(p int32) {
	s := &e.procs[p].store
	t := e.now
	if t <= s.at {
		return
	}
	if s.run > 0 {
		// No stream ends before now without its end settling the store
		// first, so every append in (at, now) is a progress event; those at
		// now are taken one by one (a result among them).
		c := e.memCap()
		for c != math.MaxInt64 {
			tau, ok := e.memOverflow(s, c, t-1)
			if !ok {
				break
			}
			s.held += e.evBytes * s.advance(tau-1, e.iv)
			n := e.memInstant(p, tau)
			s = &e.procs[p].store
			s.stepped(n, e.iv)
		}
		s.held += e.evBytes * s.advance(t-1, e.iv)
		n := e.memInstant(p, t)
		s = &e.procs[p].store
		s.stepped(n, e.iv)
	}
	s.at = t
	if e.memCheck != nil {
		e.memCheck(e, memOpSettle, p, -1)
	}
}

// memOverflow finds the instant of the first append after s.at, up to hi,
// that takes the store over the cap c, when every append is a progress event.
func (e *engine) memOverflow(s *memStore, c, hi int64) (int64, bool) {
	if s.run == 0 || hi <= s.at {
		return 0, false
	}
	iv := e.iv
	k := (c-s.held)/e.evBytes + 1 // the k-th append overflows
	m := (k - 1) / s.run          // whole intervals before it
	if m > (hi-s.at)/iv {
		return 0, false
	}
	t1 := s.at + m*iv
	if t1 >= hi {
		return 0, false
	}
	// In (t1, t1+iv] every running stream appends once: those of phase above
	// x first, then the rest, each group in phase order.
	j := k - m*s.run
	x := t1 % iv
	le := s.leAt(iv) // t1 has the phase of at
	var ph, tau int64
	if j <= s.run-le {
		ph, e.scratch = s.kth(le+j, iv, e.scratch)
		tau = t1 - x + ph
	} else {
		ph, e.scratch = s.kth(j-(s.run-le), iv, e.scratch)
		tau = t1 - x + iv + ph
	}
	return tau, tau <= hi
}

// memInstant applies the appends of process p's running streams at tau, one
// at a time in the order the attempts started, each followed by the purge
// rounds it calls for. It returns how many there were.
func (e *engine) memInstant(p int32, tau int64) int64 {
	s := &e.procs[p].store
	if s.run == 0 {
		return 0
	}
	x := tau % e.iv
	at := e.phScratch[:0]
	for _, pe := range s.bk[s.bucket(x, e.iv)] {
		if pe.ph == x && pe.start < tau {
			at = append(at, pe)
		}
	}
	e.phScratch = at
	if len(at) > 1 {
		// By attempt: sort keys ai<<32 | j as plain integers, with no
		// comparison function to call, and put the entries in their order.
		keys := e.phKeys[:0]
		for j := range at {
			keys = append(keys, uint64(at[j].ai)<<32|uint64(j))
		}
		slices.Sort(keys)
		byAI := e.phSorted[:0]
		for _, k := range keys {
			byAI = append(byAI, at[k&math.MaxUint32])
		}
		e.phKeys, e.phSorted, at = keys, byAI, byAI
	}
	c := e.memCap()
	for _, pe := range at {
		k := (tau - pe.start) / e.iv
		s.held += e.memSize(k, int64(pe.e))
		if k == int64(pe.e) {
			if s.resTau != tau {
				s.resTau, s.resAt = tau, s.resAt[:0]
			}
			s.resAt = append(s.resAt, pe.ai)
		}
		if s.held > c {
			e.memPurge(p, tau, pe.ai)
			s = &e.procs[p].store
		}
	}
	return int64(len(at))
}

// memPurge runs purge rounds on process p's store at tau, after the append
// of attempt done (the running streams' appends at tau by later attempts
// have not happened yet), until the store fits its cap.
func (e *engine) memPurge(p int32, tau int64, done int32) {
	s := &e.procs[p].store
	for c := e.memCap(); s.held > c; {
		removed := e.memRound(s, tau, done)
		if removed == 0 {
			break
		}
		s.held -= removed
	}
}

// memRound is one purge round on store s at tau, after the append of
// attempt done; it returns the bytes it frees. An ended stream that holds
// nothing is forgotten.
func (e *engine) memRound(s *memStore, tau int64, done int32) int64 {
	iv := e.iv
	ev := e.evBytes
	priming, result := e.memSize(0, 1)-ev, e.memSize(1, 1)-ev
	first := int64(e.first())
	r := s.rounds + 1 // this round
	var visits, resN, empty int64
	// Running streams that appended their result at tau, whose oldest event
	// it is, before this round lifts anything.
	if s.resTau == tau {
		for _, ai := range s.resAt {
			if i := e.attempts[ai].memIdx; i >= 0 && s.ms.s[i].endN < 0 {
				if lo := s.lo(i, iv); lo == int64(s.ms.s[i].e) && (lo != 0 || first != 0) {
					resN++
				}
			}
		}
		visits += int64(len(s.resAt))
	}
	if s.run > 0 {
		fl := s.rounds - tau/iv // F
		x := tau % iv
		bx := s.bucket(x, iv)
		empty = s.countEq(1, 0, s.nb-1, 0, bx-1, fl) + s.countEq(1, 0, s.nb-1, bx+1, s.nb-1, fl+1)
		// t's own bucket: after_i by phase, and by start order at tau
		s.leafOpen(bx)
		l := s.bk[bx]
		for j := range l {
			c := fl
			if ph := l[j].ph; ph > x || ph == x && l[j].ai > done {
				c++
			}
			if l[j].f == c {
				empty++
			}
			l[j].f = max(l[j].f, c+1)
		}
		s.leafClose(bx)
		visits += int64(len(l))
		visits += s.chmax(1, 0, s.nb-1, 0, bx-1, fl+1) + s.chmax(1, 0, s.nb-1, bx+1, s.nb-1, fl+2)
	}
	// Ended streams due at this round: their last event goes (a result
	// among them), or, empty since the last round, they are forgotten.
	var last int64
	if len(s.eb) > 0 {
		due := s.eb[0]
		for _, ai := range due {
			i := e.attempts[ai].memIdx
			if i < 0 {
				continue // deleted
			}
			st := &s.ms.s[i]
			h := max(int64(st.endN)-int64(st.lo)+1, 0)
			if h > 0 && st.r+h == r {
				last++
				if st.endN == st.e && (st.endN != 0 || first != 0) {
					resN++
				}
				s.due(r+1, ai)
			} else {
				s.ms.remove(i, e.attempts)
			}
		}
		visits += int64(len(due))
		s.eb[0] = due[:0]
		s.eb = append(s.eb[1:], s.eb[0])
	}
	removed := ev*(s.run-empty+s.endNE) + priming*s.fresh + result*resN
	s.endNE -= last
	s.fresh = 0
	s.rounds = r
	e.stats.PurgeRounds++
	e.stats.PurgeVisits += visits
	return removed
}

// due puts ended stream ai in the bucket of round r.
func (s *memStore) due(r int64, ai int32) {
	k := int(r - s.rounds - 1)
	for len(s.eb) <= k {
		s.eb = append(s.eb, nil)
	}
	s.eb[k] = append(s.eb[k], ai)
}

// memAdd puts attempt ai's stream into process p's store: its priming
// event, when there is one, is appended now.
func (e *engine) memAdd(p, ai int32) {
	e.memSettle(p)
	a := &e.attempts[ai]
	s := &e.procs[p].store
	a.memIdx = s.ms.add(ai, a.start, a.e)
	first := int64(e.first())
	s.index(ai, a.start, a.e, e.iv, s.rounds+1-a.start/e.iv-first)
	if first == 0 {
		s.fresh++
		s.held += e.memSize(0, int64(a.e))
		if s.held > e.memCap() {
			e.memPurge(p, e.now, ai)
		}
	}
	if e.memCheck != nil {
		e.memCheck(e, memOpAdd, p, ai)
	}
}

// memEnd records that attempt ai's stream appends no more.
func (e *engine) memEnd(ai int32) {
	a := &e.attempts[ai]
	if a.memIdx < 0 {
		return
	}
	e.memSettle(a.proc)
	if a.memIdx < 0 {
		return
	}
	s := &e.procs[a.proc].store
	m := &s.ms
	i := a.memIdx
	f := s.unindex(ai, a.start, e.iv)
	lo := s.rounds + 1 - a.start/e.iv - f
	m.s[i].endN, m.s[i].r, m.s[i].lo = a.endN, s.rounds, int32(lo)
	if h := int64(a.endN) - lo + 1; h > 0 {
		s.endNE++
		s.due(s.rounds+h, ai)
	} else {
		s.due(s.rounds+1, ai)
	}
	if e.memCheck != nil {
		e.memCheck(e, memOpEnd, a.proc, ai)
	}
}

// memDelete deletes attempt ai's stream from its process's store.
func (e *engine) memDelete(ai int32) {
	a := &e.attempts[ai]
	if a.memIdx < 0 {
		return
	}
	e.memSettle(a.proc)
	if a.memIdx < 0 {
		return
	}
	s := &e.procs[a.proc].store
	m := &s.ms
	i := a.memIdx
	var lo, last int64
	if m.s[i].endN < 0 {
		lo = s.rounds + 1 - a.start/e.iv - s.unindex(ai, a.start, e.iv)
		last = (e.now - m.s[i].start) / e.iv
	} else {
		lo, last = m.endedLo(i, s.rounds), int64(m.s[i].endN)
		if lo <= last {
			s.endNE--
		}
	}
	if lo == 0 && lo <= last && e.first() == 0 {
		s.fresh--
	}
	s.held -= e.memBytes(lo, last, int64(m.s[i].e))
	m.remove(i, e.attempts)
	if e.memCheck != nil {
		e.memCheck(e, memOpDelete, a.proc, ai)
	}
}

// memLo is the first index of attempt a's stream still in the store, whose
// last index now is hi.
func (e *engine) memLo(a *attempt, hi int32) int32 {
	if a.memIdx >= 0 {
		e.memSettle(a.proc)
	}
	if a.memIdx < 0 {
		return hi + 1 // purged to nothing and forgotten
	}
	s := &e.procs[a.proc].store
	return int32(s.lo(a.memIdx, e.iv))
}
