package topology

import (
	"math/rand/v2"
	"testing"
)

type view struct {
	up    []bool
	conns []int
}

func (v view) Replicas() int     { return len(v.up) }
func (v view) InPool(i int) bool { return v.up[i] }
func (v view) Conns(i int) int   { return v.conns[i] }

func TestPolicies(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	v := view{up: []bool{true, false, true}, conns: []int{5, 0, 2}}
	cases := []struct {
		name string
		req  Request
		want []int // acceptable picks over repeated calls, in order when deterministic
	}{
		{"round-robin", Request{}, []int{0, 2, 0, 2}},                                    // skips the slot out of the pool
		{"least-connections", Request{}, []int{2, 2}},                                    // fewest open streams
		{"hash", Request{HasSession: true, Session: 7}, []int{probe(7, v), probe(7, v)}}, // stable per session
	}
	for _, c := range cases {
		p, err := NewPolicy(c.name, &Options{Rand: rng})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range c.want {
			if got := p.Pick(c.req, v); got != w {
				t.Errorf("%s pick %d = %d, want %d", c.name, i, got, w)
			}
		}
	}
	r, _ := NewPolicy("random", &Options{Rand: rng})
	for i := 0; i < 100; i++ {
		if s := r.Pick(Request{}, v); s == 1 || s < 0 {
			t.Fatalf("random picked %d, out of the pool", s)
		}
	}
	none := view{up: []bool{false, false}, conns: []int{0, 0}}
	for _, n := range PolicyNames() {
		p, _ := NewPolicy(n, &Options{Rand: rng})
		if s := p.Pick(Request{HasSession: true, Session: 3}, none); s != -1 {
			t.Errorf("%s with no replica up picked %d, want -1", n, s)
		}
	}
}

func probe(key uint64, v view) int {
	h := HashSlot(key, v.Replicas())
	for i := 0; i < v.Replicas(); i++ {
		if s := (h + i) % v.Replicas(); v.up[s] {
			return s
		}
	}
	return -1
}

// Sticky keeps a session on the replica that minted it, and re-pins when
// that replica leaves the pool.
func TestSticky(t *testing.T) {
	t.Parallel()
	p, _ := NewPolicy("sticky", nil)
	v := view{up: []bool{true, true, true}, conns: []int{0, 0, 0}}
	p.Bind(42, 1)
	for i := 0; i < 5; i++ {
		if s := p.Pick(Request{HasSession: true, Session: 42}, v); s != 1 {
			t.Fatalf("pick = %d, want the pinned 1", s)
		}
	}
	v.up[1] = false
	s := p.Pick(Request{HasSession: true, Session: 42}, v)
	if s == 1 || s < 0 {
		t.Fatalf("re-pin picked %d", s)
	}
	v.up[1] = true
	if again := p.Pick(Request{HasSession: true, Session: 42}, v); again != s {
		t.Errorf("after re-pinning to %d the session went to %d", s, again)
	}
}

// Minted ids hash back to their minter under hash routing.
func TestMintHashesHome(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	for n := 1; n <= 5; n++ {
		for slot := 0; slot < n; slot++ {
			if k := MintSession(rng, slot, n, true); HashSlot(k, n) != slot {
				t.Fatalf("minted %d for slot %d of %d hashes to %d", k, slot, n, HashSlot(k, n))
			}
		}
	}
}

// TestSessionKey: a session id's routing key is its 64-bit FNV-1a hash, the
// key the live LB routes by and a hash-minting replica mints against.
func TestSessionKey(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c} {
		if got := SessionKey(id); got != want {
			t.Errorf("SessionKey(%q) = %#x, want %#x", id, got, want)
		}
	}
}

// TestStickyCallerPins holds sticky with pins its caller keeps
// (Request.Pin, BindSession) to sticky with its own table, over random
// binds, picks and pool changes: every pick must be the same.
func TestStickyCallerPins(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	own, _ := NewPolicy("sticky", nil)
	kept, _ := NewPolicy("sticky", nil)
	const sessions = 50
	keys := make([]uint64, sessions)
	pins := make([]int32, sessions)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	v := view{up: []bool{true, true, true, true}, conns: make([]int, 4)}
	for op := 0; op < 20_000; op++ {
		i := rng.IntN(sessions)
		switch r := rng.IntN(10); {
		case r == 0: // a replica leaves or rejoins the pool
			s := rng.IntN(len(v.up))
			v.up[s] = !v.up[s]
		case r == 1: // the session is minted again, by a replica in the pool or not
			keys[i] = rng.Uint64()
			s := rng.IntN(len(v.up))
			BindSession(own, keys[i], nil, s)
			BindSession(kept, keys[i], &pins[i], s)
		default:
			has := r != 2
			a := own.Pick(Request{HasSession: has, Session: keys[i]}, v)
			b := kept.Pick(Request{HasSession: has, Session: keys[i], Pin: &pins[i]}, v)
			if a != b {
				t.Fatalf("op %d: sticky with its own pins picked %d, with the caller's %d", op, a, b)
			}
		}
	}
}
