package sim

import "unsafe"

// The segment tree of a memory store over its phase buckets (see memStore):
// node 1 is the root, node n's children are 2n and 2n+1, bucket b is leaf
// nb+b. A node keeps the least purge counter f of the running
// streams below it, how many hold it, and the second least. A raise
// (f = max(f, v) on a range of buckets) that stays below a node's second
// least only sets the node's least; its children learn it when a later
// operation goes down through the node (push), so a child's least is the
// greater of its own and its parent's, and a stream's f the greatest of its
// own and every node's above its bucket.

// segNode is a node of the tree: its least f, the second least, and how
// many streams hold the least. One struct per node, and not one array per
// field: a walk from a leaf to the root at a million clients missed the
// caches at each of the lower levels once per array.
type segNode struct {
	mn, smn int64
	cnt     int32
}

func (s *memStore) treeInit() {
	s.tree = make([]segNode, 2*s.nb)
	for n := range s.tree {
		s.tree[n] = segNode{mn: noF, smn: noF}
	}
}

// push hands node n's least down to its children.
func (s *memStore) push(n int) {
	if v := s.tree[n].mn; v != noF {
		s.tree[2*n].mn = max(s.tree[2*n].mn, v)
		s.tree[2*n+1].mn = max(s.tree[2*n+1].mn, v)
	}
}

// pull sets node n from its children.
func (s *memStore) pull(n int) {
	l, r := &s.tree[2*n], &s.tree[2*n+1]
	switch a, b := l.mn, r.mn; {
	case a == b:
		s.tree[n] = segNode{mn: a, cnt: l.cnt + r.cnt, smn: min(l.smn, r.smn)}
	case a < b:
		s.tree[n] = segNode{mn: a, cnt: l.cnt, smn: min(l.smn, b)}
	default:
		s.tree[n] = segNode{mn: b, cnt: r.cnt, smn: min(a, r.smn)}
	}
}

// leafOpen brings every f of bucket b to its value, for a scan or a change.
func (s *memStore) leafOpen(b int) {
	n := s.nb + b
	for h := s.depth; h >= 1; h-- {
		s.push(n >> h) // so that leafClose's pulls lose no raise
	}
	v := s.tree[n].mn
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
		was := s.tree[n]
		s.pull(n)
		if s.tree[n] == was {
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
	s.tree[s.nb+b] = segNode{mn: mn, smn: smn, cnt: cnt}
}

// fOf is running stream ai's purge counter.
func (s *memStore) fOf(ai int32, start, iv int64) int64 {
	b := s.bucket(start%iv, iv)
	v := int64(-noF)
	for n := s.nb + b; n >= 1; n >>= 1 {
		v = max(v, s.tree[n].mn)
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
	if hi < nl || nr < lo || s.tree[n].mn > v {
		return 0
	}
	if lo <= nl && nr <= hi {
		return int64(s.tree[n].cnt) // its least is v
	}
	s.push(n)
	m := (nl + nr) / 2
	return s.countEq(2*n, nl, m, lo, hi, v) + s.countEq(2*n+1, m+1, nr, lo, hi, v)
}

// chmax raises every f of buckets lo..hi to at least v; node n covers
// buckets nl..nr. It returns the streams it had to look at one by one.
func (s *memStore) chmax(n, nl, nr, lo, hi int, v int64) int64 {
	if hi < nl || nr < lo || s.tree[n].mn >= v {
		return 0
	}
	if lo <= nl && nr <= hi && s.tree[n].smn > v {
		s.tree[n].mn = v // only the streams at the least move
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

// prefetchEnd starts loading what ending stream i (started at start) will
// touch that the caches are least likely to hold: its entry, its phase
// bucket's header and the lowest tree nodes on its leaf's path. It changes
// nothing.
func (s *memStore) prefetchEnd(i int32, start, iv int64) {
	if uint(i) >= uint(len(s.ms.s)) || s.nb == 0 || iv <= 0 {
		return
	}
	prefetchLines(unsafe.Pointer(&s.ms.s[i]), 1)
	b := s.bucket(start%iv, iv)
	if uint(b) >= uint(len(s.bk)) {
		return
	}
	prefetchLines(unsafe.Pointer(&s.bk[b]), 1)
	for n, h := s.nb+b, 0; h < prefetchTreeLevels && n >= 1 && n < len(s.tree); n, h = n>>1, h+1 {
		prefetchLines(unsafe.Pointer(&s.tree[n&^1]), 1)
	}
}

// prefetchTreeLevels is how many of a leaf's lowest tree levels prefetchEnd
// asks for: the levels above them are few enough nodes to stay cached.
const prefetchTreeLevels = 6
