package clients

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff strategies, as named in scenarios.toml.
const (
	StrategyNone         = "none"         // reconnect at once
	StrategyConstant     = "constant"     // v = base
	StrategyExponential  = "exponential"  // v = min(cap, base·factor^n)
	StrategyDecorrelated = "decorrelated" // v = min(cap, U(base, 3·previous))
)

// Jitter modes, applied to the strategy's delay v.
const (
	JitterNone     = "none"     // v
	JitterFull     = "full"     // U(0, v)
	JitterEqual    = "equal"    // v/2 + U(0, v/2)
	JitterAdditive = "additive" // v + U(0, v), what go-sdk does
)

// Strategies and Jitters list the valid names, for validation messages.
var (
	Strategies = []string{StrategyNone, StrategyConstant, StrategyExponential, StrategyDecorrelated}
	Jitters    = []string{JitterNone, JitterFull, JitterEqual, JitterAdditive}
)

// Delay returns the wait before reconnect attempt n (0-based) under cfg.
// prev is the previous delay, used by the decorrelated strategy; pass 0 for
// the first attempt. Delay is a pure function of its arguments and rng.
func Delay(cfg *Config, n int, prev time.Duration, rng *rand.Rand) time.Duration {
	base, capd := float64(cfg.Base), float64(cfg.Cap)
	if capd <= 0 {
		capd = math.MaxInt64 / 4
	}
	var v float64
	switch cfg.Strategy {
	case StrategyNone:
		return 0
	case StrategyConstant:
		v = base
	case StrategyDecorrelated:
		lo, hi := base, 3*float64(prev)
		if prev <= 0 || hi < lo {
			hi = 3 * base
		}
		v = lo + rng.Float64()*(hi-lo)
		return time.Duration(math.Min(capd, v))
	default: // exponential
		v = math.Min(capd, base*math.Pow(cfg.Factor, float64(n)))
	}
	switch cfg.Jitter {
	case JitterFull:
		v = rng.Float64() * v
	case JitterEqual:
		v = v/2 + rng.Float64()*v/2
	case JitterAdditive:
		v = v + rng.Float64()*v
	}
	return time.Duration(v)
}

// MinDelay is the least wait Delay can give under c before any reconnect,
// whatever the draw: the floor of its strategy and jitter (0 for no
// backoff, full jitter, or an exponential backoff that shrinks). A
// server's retry hint replaces it when the client honours hints.
func (c *Config) MinDelay() time.Duration {
	v := c.Base
	switch {
	case c.Strategy == StrategyNone, c.Strategy == StrategyExponential && c.Factor < 1:
		return 0
	case c.Strategy == StrategyDecorrelated:
		return min(v, c.capOr(v)) // U(base, …), capped; no jitter
	}
	v = min(v, c.capOr(v))
	switch c.Jitter {
	case JitterFull:
		return 0
	case JitterEqual:
		return v / 2
	}
	return v // none, additive: v or more
}

// capOr is c's cap, or v when it has none.
func (c *Config) capOr(v time.Duration) time.Duration {
	if c.Cap > 0 {
		return c.Cap
	}
	return v
}

// FastestBackoff is the least wait between two reconnects of one client
// that any named profile's backoff allows, the floor of every profile's
// MinDelay: 1 s, every profile's first delay, which their jitter never
// shortens. A client that reconnects faster is following a server's retry
// hint, or not backing off at all.
func FastestBackoff() time.Duration {
	fastest := time.Duration(-1)
	for _, name := range ProfileNames() {
		c, _ := Profile(name)
		if d := c.MinDelay(); fastest < 0 || d < fastest {
			fastest = d
		}
	}
	return fastest
}
