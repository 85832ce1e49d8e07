package replica

import (
	"testing"
	"time"
)

// The pacer's slots are on the grid, never before their schedule and less
// than one grid step after it; a call that keeps up gets every slot in
// turn; one that falls behind goes at once and skips what it missed; an
// interval shorter than the grid keeps its own schedule.
func TestPacerSlots(t *testing.T) {
	start := time.Unix(1000, 1_234_567)
	p := NewPacer(start, time.Second)
	defer p.Stop()
	for k := int64(1); k <= 5; k++ {
		due, sched := p.due(k), start.Add(time.Duration(k)*time.Second)
		if due.UnixNano()%int64(ProduceGrid) != 0 || due.Before(sched) || due.Sub(sched) >= ProduceGrid {
			t.Fatalf("slot %d due at %v, scheduled for %v: want the first grid instant at or after it", k, due, sched)
		}
	}
	p.After(p.due(1)) // on time: slot 2 next
	if p.next != 2 {
		t.Fatalf("after slot 1 on time the next slot is %d, want 2", p.next)
	}
	p.After(start.Add(4500 * time.Millisecond)) // slot 3 was due at 3 s: late
	if p.next != 4 {
		t.Fatalf("after falling behind to 4.5 s the slot is %d, want 4 (3 missed, 4 goes at once)", p.next)
	}
	p.After(start.Add(4500 * time.Millisecond))
	if p.next != 5 {
		t.Fatalf("the call back on time has slot %d next, want 5", p.next)
	}
	fast := NewPacer(start, time.Millisecond)
	defer fast.Stop()
	if fast.grid != 0 || !fast.due(3).Equal(start.Add(3*time.Millisecond)) {
		t.Fatalf("a 1 ms interval is put on the %v grid: slot 3 due at %v", fast.grid, fast.due(3))
	}
}

// A real timer through the pacer never runs ahead of the call's schedule:
// no event before its time, so 5 events of 200 ms take at least 1 s (a
// loaded machine may make them later, never sooner).
func TestPacerKeepsRate(t *testing.T) {
	start := time.Now()
	p := NewPacer(start, 200*time.Millisecond)
	defer p.Stop()
	for k := 1; k <= 5; k++ {
		now := <-p.C()
		sched := start.Add(time.Duration(k) * 200 * time.Millisecond)
		if now.Before(sched) {
			t.Fatalf("event %d at %v, before its schedule %v", k, now, sched)
		}
		p.After(now)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("5 events of 200 ms took %v, under their 1 s", took)
	}
}
