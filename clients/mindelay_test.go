package clients

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMinDelayIsAFloor: Delay never gives less than MinDelay, for every
// strategy and jitter, at any attempt; and the floor is reached (within
// 1%) for the strategies that can reach it, so it is not merely low.
func TestMinDelayIsAFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range Strategies {
		for _, j := range Jitters {
			cfg := Config{Strategy: s, Jitter: j, Base: time.Second, Factor: 1.5, Cap: 30 * time.Second}
			floor := cfg.MinDelay()
			least := time.Duration(1 << 62)
			prev := time.Duration(0)
			for n := range 2000 {
				d := Delay(&cfg, n%8, prev, rng)
				if d < floor {
					t.Fatalf("%s/%s: attempt %d waited %v, under MinDelay %v", s, j, n%8, d, floor)
				}
				least, prev = min(least, d), d
			}
			if least > floor+floor/100+time.Millisecond*10 && floor > 0 {
				t.Errorf("%s/%s: the least delay drawn %v is well above MinDelay %v", s, j, least, floor)
			}
		}
	}
}

// TestFastestBackoff: every named profile waits at least 1 s before a
// reconnect, so that is the fastest any allows.
func TestFastestBackoff(t *testing.T) {
	if got := FastestBackoff(); got != time.Second {
		t.Errorf("FastestBackoff() = %v, want 1s (every profile's base)", got)
	}
}
