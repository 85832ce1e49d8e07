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
// given time, in O(log buckets) plus a scan of one bucket. A purge round
// visits every stream of the store; each stream keeps the instant its
// oldest held event was appended, so that a visit is a comparison and an
// addition.
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
	fw        []int32
	bk        [][]phaseEntry
}

// phaseEntry is a running stream in the phase index.
type phaseEntry struct {
	ph, start int64
	ai, e     int32
}

const phaseBuckets = 4096

// memOp names a change to a memory store, for Options.memCheck.
type memOp uint8

const (
	memOpSettle memOp = iota // brought to now
	memOpAdd                 // a stream started (and its priming event was appended)
	memOpEnd                 // a stream appends no more
	memOpDelete              // a stream was deleted
	memOpExit                // the process and its store are gone
)

// memStreams holds a process's in-memory streams as parallel arrays.
type memStreams struct {
	ai    []int32
	start []int64
	e     []int32
	endN  []int32 // -1 while the attempt runs
	// o is when the oldest event still held was (or will be) appended:
	// start + (first + events purged)*iv. The stream holds an event when
	// that instant has come: by lim once it has ended, by now while it runs.
	o   []int64
	lim []int64 // when its last event was appended, once ended; memRunning while it runs
}

const memRunning = math.MaxInt64

func (m *memStreams) add(ai int32, start int64, e int32, o int64) int32 {
	m.ai, m.start, m.e, m.endN = append(m.ai, ai), append(m.start, start), append(m.e, e), append(m.endN, -1)
	m.o, m.lim = append(m.o, o), append(m.lim, memRunning)
	return int32(len(m.ai) - 1)
}

// remove swaps stream i out, fixing the index of the one moved into its place.
func (m *memStreams) remove(i int32, attempts []attempt) {
	n := len(m.ai) - 1
	attempts[m.ai[i]].memIdx = -1
	if int(i) != n {
		m.ai[i], m.start[i], m.e[i], m.endN[i], m.o[i], m.lim[i] = m.ai[n], m.start[n], m.e[n], m.endN[n], m.o[n], m.lim[n]
		attempts[m.ai[i]].memIdx = i
	}
	m.ai, m.start, m.e, m.endN, m.o, m.lim = m.ai[:n], m.start[:n], m.e[:n], m.endN[:n], m.o[:n], m.lim[:n]
}

// lo is the index of stream i's oldest event still held.
func (m *memStreams) lo(i int32, iv int64) int64 { return (m.o[i] - m.start[i]) / iv }

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

func (s *memStore) bucket(ph, iv int64) int { return int(ph * phaseBuckets / iv) }

func (s *memStore) fwAdd(b int, d int32) {
	for i := b + 1; i <= phaseBuckets; i += i & -i {
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

func (s *memStore) index(ai int32, start int64, e int32, iv int64) {
	if s.fw == nil {
		s.fw = make([]int32, phaseBuckets+1)
		s.bk = make([][]phaseEntry, phaseBuckets)
	}
	ph := start % iv
	b := s.bucket(ph, iv)
	s.bk[b] = append(s.bk[b], phaseEntry{ph: ph, start: start, ai: ai, e: e})
	s.fwAdd(b, 1)
	s.run++
	if s.leOK && ph <= s.leFor%iv {
		s.le++
	}
}

func (s *memStore) unindex(ai int32, start, iv int64) {
	b := s.bucket(start%iv, iv)
	l := s.bk[b]
	for j := range l {
		if l[j].ai == ai {
			l[j] = l[len(l)-1]
			s.bk[b] = l[:len(l)-1]
			s.fwAdd(b, -1)
			s.run--
			if s.leOK && start%iv <= s.leFor%iv {
				s.le--
			}
			return
		}
	}
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
func (s *memStore) kth(k int64, scratch []int64) (int64, []int64) {
	b, below := 0, int64(0)
	for step := phaseBuckets; step > 0; step >>= 1 {
		if i := b + step; i <= phaseBuckets && below+int64(s.fw[i]) < k {
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
		ph, e.scratch = s.kth(le+j, e.scratch)
		tau = t1 - x + ph
	} else {
		ph, e.scratch = s.kth(j-(s.run-le), e.scratch)
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
		slices.SortFunc(at, func(a, b phaseEntry) int { return int(a.ai - b.ai) })
	}
	c := e.memCap()
	for _, pe := range at {
		s.held += e.memSize((tau-pe.start)/e.iv, int64(pe.e))
		if s.held > c {
			e.memPurge(p, tau, pe.ai)
			s = &e.procs[p].store
		}
	}
	return int64(len(at))
}

// memPurge runs purge rounds on process p's store at tau, after the append
// of attempt done (the running streams' appends at tau by later attempts
// have not happened yet), until the store fits its cap. A stream that has
// ended and holds nothing is forgotten.
func (e *engine) memPurge(p int32, tau int64, done int32) {
	s := &e.procs[p].store
	m := &s.ms
	iv, c := e.iv, e.memCap()
	priming, result, ev := e.memSize(0, 1), e.memSize(1, 1), e.evBytes
	for s.held > c {
		var removed int64
		for i := 0; i < len(m.ai); {
			o, l := m.o[i], m.lim[i]
			var holds bool
			if l == memRunning {
				// appended by tau; at tau only if before done's append
				holds = o < tau || o == tau && m.ai[i] <= done
			} else {
				holds = o <= l
			}
			if holds {
				switch o {
				case m.start[i]: // index 0 (with no priming event, o is never start)
					removed += priming
				case m.start[i] + int64(m.e[i])*iv:
					removed += result
				default:
					removed += ev
				}
				m.o[i] = o + iv
				i++
			} else if l != memRunning {
				m.remove(int32(i), e.attempts) // ended and empty: forgotten
			} else {
				i++
			}
		}
		e.stats.PurgeRounds++
		e.stats.PurgeVisits += int64(len(m.ai))
		if removed == 0 {
			break
		}
		s.held -= removed
	}
}

// memAdd puts attempt ai's stream into process p's store: its priming
// event, when there is one, is appended now.
func (e *engine) memAdd(p, ai int32) {
	e.memSettle(p)
	a := &e.attempts[ai]
	s := &e.procs[p].store
	a.memIdx = s.ms.add(ai, a.start, a.e, a.start+int64(e.first())*e.iv)
	s.index(ai, a.start, a.e, e.iv)
	if e.first() == 0 {
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
	s.ms.endN[a.memIdx] = a.endN
	s.ms.lim[a.memIdx] = a.start + int64(a.endN)*e.iv
	s.unindex(ai, a.start, e.iv)
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
	last := int64(m.endN[i])
	if last < 0 {
		last = (e.now - m.start[i]) / e.iv
		s.unindex(ai, a.start, e.iv)
	}
	s.held -= e.memBytes(m.lo(i, e.iv), last, int64(m.e[i]))
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
	return int32(e.procs[a.proc].store.ms.lo(a.memIdx, e.iv))
}
