package topology

import "math/rand/v2"

// twoChoices is the power of two choices: it draws two replicas of the
// pool at random and sends the request to the one with fewer open
// streams (the first drawn on a tie). It spreads load almost as well as
// least-connections while reading only two replicas' counts, which is why
// large load balancers use it (Envoy's LEAST_REQUEST, NGINX's
// "random two least_conn").
type twoChoices struct{ rng *rand.Rand }

var _ Policy = (*twoChoices)(nil)

func (p *twoChoices) Name() string     { return "two-choices" }
func (p *twoChoices) Bind(uint64, int) {}
func (p *twoChoices) Pick(_ Request, v View) int {
	var pool []int
	for i := 0; i < v.Replicas(); i++ {
		if v.InPool(i) {
			pool = append(pool, i)
		}
	}
	switch len(pool) {
	case 0:
		return -1
	case 1:
		return pool[0]
	}
	a := p.rng.IntN(len(pool))
	b := p.rng.IntN(len(pool) - 1)
	if b >= a {
		b++ // two distinct replicas
	}
	if v.Conns(pool[b]) < v.Conns(pool[a]) {
		return pool[b]
	}
	return pool[a]
}

func init() {
	Register("two-choices", func(o *Options) Policy { return &twoChoices{rng: o.Rand} })
}
