package topology

import (
	"testing"
	"time"
)

// The Redis model's append ceiling is concurrency over the cost of one
// append, and 0 where the model gives Redis no cost.
func TestAppendCeiling(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		conc       int
		base, per  time.Duration
		wantPerSec float64
	}{
		{1, 12 * time.Microsecond, 500 * time.Nanosecond, 80000}, // DefaultStore
		{4, 12 * time.Microsecond, 500 * time.Nanosecond, 320000},
		{2, 0, time.Microsecond, 2e6},
		{0, 12 * time.Microsecond, 0, 0},
		{3, 0, 0, 0},
	} {
		s := StoreConfig{Concurrency: c.conc, ServiceBase: c.base, ServicePerEvent: c.per}
		if got := s.AppendCeiling(); got != c.wantPerSec {
			t.Errorf("concurrency %d, %v + %v per event: ceiling %g, want %g", c.conc, c.base, c.per, got, c.wantPerSec)
		}
	}
	if got := DefaultStore.AppendCeiling(); got != 80000 {
		t.Errorf("DefaultStore ceiling %g, want 80000", got)
	}
}
