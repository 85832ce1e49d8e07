package sim

// The segment tree of a memory store over its phase buckets (see memStore):
// node 1 is the root, node n's children are 2n and 2n+1, bucket b is leaf
// nb+b. A node keeps the least purge counter f of the running
// streams below it, how many hold it, and the second least. A raise
// (f = max(f, v) on a range of buckets) that stays below a node's second
// least only sets the node's least; its children learn it when a later
// operation goes down through the node (push), so a child's least is the
// greater of its own and its parent's, and a stream's f the greatest of its
// own and every node's above its bucket.

func (s *memStore) treeInit() {
	s.tmn = make([]int64, 2*s.nb)
	s.tsmn = make([]int64, 2*s.nb)
	s.tcnt = make([]int32, 2*s.nb)
	for n := range s.tmn {
		s.tmn[n], s.tsmn[n] = noF, noF
	}
}

// push hands node n's least down to its children.
func (s *memStore) push(n int) {
	if v := s.tmn[n]; v != noF {
		s.tmn[2*n] = max(s.tmn[2*n], v)
		s.tmn[2*n+1] = max(s.tmn[2*n+1], v)
	}
}

// pull sets node n from its children.
func (s *memStore) pull(n int) {
	l, r := 2*n, 2*n+1
	a, b := s.tmn[l], s.tmn[r]
	switch {
	case a == b:
		s.tmn[n], s.tcnt[n], s.tsmn[n] = a, s.tcnt[l]+s.tcnt[r], min(s.tsmn[l], s.tsmn[r])
	case a < b:
		s.tmn[n], s.tcnt[n], s.tsmn[n] = a, s.tcnt[l], min(s.tsmn[l], b)
	default:
		s.tmn[n], s.tcnt[n], s.tsmn[n] = b, s.tcnt[r], min(a, s.tsmn[r])
	}
}

// leafOpen brings every f of bucket b to its value, for a scan or a change.
func (s *memStore) leafOpen(b int) {
	n := s.nb + b
	for h := s.depth; h >= 1; h-- {
		s.push(n >> h) // so that leafClose's pulls lose no raise
	}
	v := s.tmn[n]
	l := s.bk[b]
	for j := range l {
		l[j].f = max(l[j].f, v)
	}
}

// leafClose sets bucket b's leaf from its streams and the nodes above it.
func (s *memStore) leafClose(b int) {
	n := s.nb + b
	s.leafSet(b)
	for n >>= 1; n >= 1; n >>= 1 {
		mn, smn, cnt := s.tmn[n], s.tsmn[n], s.tcnt[n]
		s.pull(n)
		if s.tmn[n] == mn && s.tsmn[n] == smn && s.tcnt[n] == cnt {
			return // the nodes above are made of this one as it was
		}
	}
}

func (s *memStore) leafSet(b int) {
	mn, smn, cnt := int64(noF), int64(noF), int32(0)
	for _, p := range s.bk[b] {
		switch {
		case p.f == mn:
			cnt++
		case p.f < mn:
			mn, smn, cnt = p.f, mn, 1
		case p.f < smn:
			smn = p.f
		}
	}
	n := s.nb + b
	s.tmn[n], s.tsmn[n], s.tcnt[n] = mn, smn, cnt
}

// fOf is running stream ai's purge counter.
func (s *memStore) fOf(ai int32, start, iv int64) int64 {
	b := s.bucket(start%iv, iv)
	v := int64(-noF)
	for n := s.nb + b; n >= 1; n >>= 1 {
		v = max(v, s.tmn[n])
	}
	for _, p := range s.bk[b] {
		if p.ai == ai {
			return max(p.f, v)
		}
	}
	panic("sim: a running stream missing from its phase bucket")
}

// countEq counts the streams of buckets lo..hi whose f is v, when none of
// them is below v; node n covers buckets nl..nr.
func (s *memStore) countEq(n, nl, nr, lo, hi int, v int64) int64 {
	if hi < nl || nr < lo || s.tmn[n] > v {
		return 0
	}
	if lo <= nl && nr <= hi {
		return int64(s.tcnt[n]) // its least is v
	}
	s.push(n)
	m := (nl + nr) / 2
	return s.countEq(2*n, nl, m, lo, hi, v) + s.countEq(2*n+1, m+1, nr, lo, hi, v)
}

// chmax raises every f of buckets lo..hi to at least v; node n covers
// buckets nl..nr. It returns the streams it had to look at one by one.
func (s *memStore) chmax(n, nl, nr, lo, hi int, v int64) int64 {
	if hi < nl || nr < lo || s.tmn[n] >= v {
		return 0
	}
	if lo <= nl && nr <= hi && s.tsmn[n] > v {
		s.tmn[n] = v // only the streams at the least move
		return 0
	}
	if n >= s.nb {
		l := s.bk[n-s.nb]
		for j := range l {
			l[j].f = max(l[j].f, v)
		}
		s.leafSet(n - s.nb)
		return int64(len(l))
	}
	s.push(n)
	m := (nl + nr) / 2
	k := s.chmax(2*n, nl, m, lo, hi, v) + s.chmax(2*n+1, m+1, nr, lo, hi, v)
	s.pull(n)
	return k
}
