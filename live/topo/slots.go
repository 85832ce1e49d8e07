package topo

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"
)

// Slot states, as Slots reports them.
const (
	SlotServing  = "serving"  // its process listens and was last seen serving
	SlotDraining = "draining" // its process drains: a graceful stop, or a SIGTERM from outside
	SlotStopped  = "stopped"  // stormsim killed its process (a hard stop, a scale-down)
	SlotExited   = "exited"   // its process ended; Exit says how
)

// SlotState is one replica slot: the process that serves it, or served it
// last.
type SlotState struct {
	Slot   int    `json:"slot"`
	PID    int    `json:"pid"`
	URL    string `json:"url"`            // the process's base URL
	State  string `json:"state"`          // SlotServing, SlotDraining, SlotStopped or SlotExited
	Exit   string `json:"exit,omitempty"` // how the process ended ("exit status 0", "signal: killed"), when it has
	InPool bool   `json:"in_pool"`        // the LB routes new requests to the slot
}

// Slots lists every slot the topology has started a process in, in slot
// order, with the state of its latest process.
func (t *Topology) Slots() []SlotState {
	t.mu.Lock()
	out := slices.Clone(t.slotStates)
	for i := range out {
		if s := &out[i]; s.PID != 0 && !t.pids[s.PID] && s.State != SlotExited {
			s.State = SlotExited // an own server's process, whose exit is not recorded here
		}
	}
	t.mu.Unlock()
	var pool []bool
	if t.bal != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pool, _ = t.bal.Pool(ctx) // an LB that does not answer routes nowhere
		cancel()
	}
	for i := range out {
		out[i].InPool = out[i].PID != 0 && out[i].Slot < len(pool) && pool[out[i].Slot]
	}
	return out
}

// RedisPID is the process id of the redis-server the topology started, 0
// when it started none.
func (t *Topology) RedisPID() int {
	if t.redis == nil {
		return 0
	}
	return t.redis.PID()
}

// setSlot records slot's latest process and its state, and tells
// Options.Notify why (when why is not empty); the caller holds mu. A url
// names a new process, cmd; without one, news of a process that no longer
// serves the slot is told but changes nothing.
func (t *Topology) setSlot(slot int, cmd *exec.Cmd, url, state, exit, why string) {
	for len(t.slotStates) <= slot {
		t.slotStates = append(t.slotStates, SlotState{Slot: len(t.slotStates)})
	}
	s := &t.slotStates[slot]
	pid := s.PID
	if cmd != nil && cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	switch {
	case url != "":
		s.PID, s.URL, s.State, s.Exit = pid, url, state, exit
	case pid == s.PID:
		s.State, s.Exit = state, exit
	}
	if t.opts.Notify != nil && why != "" {
		t.notes = append(t.notes, fmt.Sprintf("slot %d pid %d %s", slot, pid, why))
		t.kick()
	}
}

// kick wakes the goroutine that hands notes to Options.Notify; the caller
// holds mu.
func (t *Topology) kick() {
	select {
	case t.noteWake <- struct{}{}:
	default:
	}
}

// notifier hands the notes to Options.Notify in order, outside the lock,
// until ctx ends.
func (t *Topology) notifier(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.noteWake:
		}
		t.mu.Lock()
		notes := t.notes
		t.notes = nil
		t.mu.Unlock()
		for _, n := range notes {
			t.opts.Notify(n)
		}
	}
}

// startChecks turns on the LB's health checks (Options.Health) for as long
// as it runs; the LB's verdicts reach Options.Notify (healthChanged).
func (t *Topology) startChecks(ctx context.Context) error {
	h := *t.opts.Health
	if h.Path == "" && t.d.Own != nil {
		h.Path = t.d.Own.Ready
	}
	return t.bal.CheckHealth(ctx, h)
}

// healthChanged tells Options.Notify that the LB's health checks took a
// slot out of the pool or put it back.
func (t *Topology) healthChanged(slot int, up bool, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opts.Notify == nil {
		return
	}
	what := "out of the LB's pool"
	if up {
		what = "back in the LB's pool"
	}
	pid := 0
	if slot < len(t.slotStates) {
		pid = t.slotStates[slot].PID
	}
	t.notes = append(t.notes, fmt.Sprintf("slot %d pid %d %s: %s", slot, pid, what, why))
	t.kick()
}

// drained acts on a replica's "draining" line: a SIGTERM from outside, or
// stormsim's own graceful stop. With the health checks on, the slot leaves
// the LB's pool the moment its drain starts, if cmd still serves it.
func (t *Topology) drained(slot int, cmd *exec.Cmd) {
	t.mu.Lock()
	// Not current: stormsim stopped it itself, took it out of the pool
	// first, and said so.
	current := slot < len(t.slots) && t.slots[slot] == cmd
	if current {
		why := "draining (SIGTERM from outside)"
		if t.opts.Health != nil {
			why += ": left the LB's pool"
		}
		t.setSlot(slot, cmd, "", SlotDraining, "", why)
	}
	t.mu.Unlock()
	if current && t.opts.Health != nil {
		t.inPool(slot, false)
	}
}
