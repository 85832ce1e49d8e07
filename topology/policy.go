package topology

import (
	"hash/fnv"
	"math/rand/v2"

	"github.com/stormsim/stormsim/internal/registry"
)

// View is what a policy may know about the replicas when it routes.
type View interface {
	// Replicas is the number of replica slots.
	Replicas() int
	// InPool reports whether slot i has a serving process the LB routes to.
	InPool(i int) bool
	// Conns is the number of open streams on slot i.
	Conns(i int) int
}

// Request is what the LB knows about a request it must route.
type Request struct {
	HasSession bool
	Session    uint64 // the session key: the id itself in the simulator, a hash of it live
	// Pin, when not nil, is where the caller keeps the session's pin, as
	// slot + 1 (0: none), one per session key: a policy that pins (sticky)
	// reads and writes it there instead of in a table of its own by
	// Session, which saves the simulator a map lookup per request. Bind
	// the session with BindSession and the same pin.
	Pin *int32
}

// Policy picks a replica for each request. Policies are not safe for
// concurrent use; the live proxy serialises its calls.
type Policy interface {
	Name() string
	// Pick returns the slot for req, or -1 when no replica is in the pool.
	Pick(req Request, v View) int
	// Bind tells the policy that session was minted by slot.
	Bind(session uint64, slot int)
}

// Pinner is a policy that pins sessions to slots and can keep a pin where
// its caller says (Request.Pin).
type Pinner interface {
	// BindPin is Bind for a session whose pin the caller keeps at pin.
	BindPin(pin *int32, slot int)
}

// BindSession tells p that session was minted by slot: in the caller's pin
// when it keeps one and p pins (Pinner), in p's own table otherwise.
func BindSession(p Policy, session uint64, pin *int32, slot int) {
	if pp, ok := p.(Pinner); ok && pin != nil {
		pp.BindPin(pin, slot)
		return
	}
	p.Bind(session, slot)
}

// Options configures a policy. A nil *Options means the defaults.
type Options struct {
	Rand *rand.Rand // randomness for the random policy; required by it
}

var policies = registry.New[func(*Options) Policy]("topology", "lb policy")

// Register makes a policy available under name. It panics on a duplicate,
// which is a programming error.
func Register(name string, f func(*Options) Policy) {
	policies.Register(name, f)
	h, ok := f(&Options{Rand: rand.New(rand.NewPCG(0, 0))}).(HomeRouter)
	homes[name] = ok && h.HomeIDs()
}

// homes says, per registered policy, whether it is a HomeRouter: found
// once, at registration, since the simulator asks at every session minted.
var homes = map[string]bool{}

// PolicyNames lists the registered policies in order.
func PolicyNames() []string { return policies.Names() }

// HomeRouter is a policy that routes a session by its id alone, so the
// replicas must mint ids that hash back to themselves
// (topology.MintSession): such a policy says so in its own file, and
// HomeIDs finds it.
type HomeRouter interface {
	HomeIDs() bool
}

// HomeIDs reports whether the policy registered as name routes by the
// session id alone (HomeRouter); false for a name not registered.
func HomeIDs(name string) bool { return homes[name] }

// NewPolicy returns a fresh policy by name.
func NewPolicy(name string, opts *Options) (Policy, error) {
	f, err := policies.Lookup(name)
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(0, 0))
	}
	return f(opts), nil
}

// HashSlot is the slot a session key hashes to among n slots.
func HashSlot(key uint64, n int) int {
	// splitmix64 finaliser: spreads keys that differ only in low bits.
	key ^= key >> 30
	key *= 0xbf58476d1ce4e5b9
	key ^= key >> 27
	key *= 0x94d049bb133111eb
	key ^= key >> 31
	return int(key % uint64(n))
}

// SessionKey is the routing key of a session id, as the LB hashes it.
func SessionKey(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// MintSession returns a fresh session key minted by slot among n. Under hash
// routing the key hashes back to its minter, so that local sessions do not
// 404 with no fault at all (docs/domain.md §4).
func MintSession(rng *rand.Rand, slot, n int, hashed bool) uint64 {
	for {
		k := rng.Uint64()
		if !hashed || HashSlot(k, n) == slot {
			return k
		}
	}
}

type roundRobin struct{ next int }

var _ Policy = (*roundRobin)(nil)

func (p *roundRobin) Name() string               { return "round-robin" }
func (p *roundRobin) Bind(uint64, int)           {}
func (p *roundRobin) Pick(_ Request, v View) int { return p.pick(v) }

func (p *roundRobin) pick(v View) int {
	n := v.Replicas()
	for i := 0; i < n; i++ {
		s := (p.next + i) % n
		if v.InPool(s) {
			p.next = (s + 1) % n
			return s
		}
	}
	return -1
}

type random struct{ rng *rand.Rand }

var _ Policy = (*random)(nil)

func (p *random) Name() string     { return "random" }
func (p *random) Bind(uint64, int) {}
func (p *random) Pick(_ Request, v View) int {
	n, up := v.Replicas(), 0
	for i := 0; i < n; i++ {
		if v.InPool(i) {
			up++
		}
	}
	if up == 0 {
		return -1
	}
	k := p.rng.IntN(up)
	for i := 0; i < n; i++ {
		if v.InPool(i) {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}

type leastConns struct{ rr roundRobin }

var _ Policy = (*leastConns)(nil)

func (p *leastConns) Name() string     { return "least-connections" }
func (p *leastConns) Bind(uint64, int) {}
func (p *leastConns) Pick(_ Request, v View) int {
	n, best, bestC := v.Replicas(), -1, 0
	for i := 0; i < n; i++ {
		s := (p.rr.next + i) % n // rotate the start so ties spread
		if !v.InPool(s) {
			continue
		}
		if c := v.Conns(s); best < 0 || c < bestC {
			best, bestC = s, c
		}
	}
	if best >= 0 {
		p.rr.next = (best + 1) % n
	}
	return best
}

// sticky pins each session to the replica that minted it, by Mcp-Session-Id.
// When the pinned replica leaves the pool it re-pins to the next one.
type sticky struct {
	rr   roundRobin
	pins map[uint64]int
}

var (
	_ Policy = (*sticky)(nil)
	_ Pinner = (*sticky)(nil)
)

func (p *sticky) Name() string               { return "sticky" }
func (p *sticky) Bind(session uint64, s int) { p.pins[session] = s }
func (p *sticky) BindPin(pin *int32, s int)  { *pin = int32(s) + 1 }
func (p *sticky) Pick(req Request, v View) int {
	if !req.HasSession {
		return p.rr.pick(v)
	}
	if s, ok := p.pinned(req); ok && s < v.Replicas() && v.InPool(s) {
		return s
	}
	s := p.rr.pick(v)
	if s >= 0 {
		if req.Pin != nil {
			p.BindPin(req.Pin, s)
		} else {
			p.pins[req.Session] = s
		}
	}
	return s
}

// pinned is the slot req's session is pinned to, if it is.
func (p *sticky) pinned(req Request) (int, bool) {
	if req.Pin != nil {
		return int(*req.Pin) - 1, *req.Pin > 0
	}
	s, ok := p.pins[req.Session]
	return s, ok
}

// hash routes a session to HashSlot(key, n); if that slot is out of the pool
// it probes the next slots in order.
type hash struct{ rr roundRobin }

var _ Policy = (*hash)(nil)

func (p *hash) Name() string     { return "hash" }
func (p *hash) Bind(uint64, int) {}
func (p *hash) HomeIDs() bool    { return true }
func (p *hash) Pick(req Request, v View) int {
	if !req.HasSession {
		return p.rr.pick(v)
	}
	n := v.Replicas()
	h := HashSlot(req.Session, n)
	for i := 0; i < n; i++ {
		if s := (h + i) % n; v.InPool(s) {
			return s
		}
	}
	return -1
}

func init() {
	Register("round-robin", func(*Options) Policy { return &roundRobin{} })
	Register("random", func(o *Options) Policy { return &random{rng: o.Rand} })
	Register("least-connections", func(*Options) Policy { return &leastConns{} })
	Register("sticky", func(*Options) Policy { return &sticky{pins: map[uint64]int{}} })
	Register("hash", func(*Options) Policy { return &hash{} })
}
