package topo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/topology"
)

// countsClient reads a replica's counters; a freeze waits for its
// producers to stop, up to 5 s.
var countsClient = &http.Client{Timeout: 10 * time.Second}

// reconcilable reports whether the design's replicas keep counters: the
// reference replica does; the go-sdk replica and a server you bring do not.
func (t *Topology) reconcilable() bool {
	return t.d.Own == nil && t.d.Server != topology.ServerGoSDK
}

// freezeSlot reads the counters of slot's replica just before a hard stop:
// production stops first, so that nothing is produced after the reading.
func (t *Topology) freezeSlot(ctx context.Context, slot int) {
	if !t.opts.Counts || !t.reconcilable() {
		return
	}
	t.mu.Lock()
	pid, u := 0, ""
	if slot < len(t.slots) && t.slots[slot] != nil && t.slots[slot].Process != nil {
		pid = t.slots[slot].Process.Pid
		u = t.urls[pid]
	}
	t.mu.Unlock()
	if u == "" {
		return
	}
	t.freeze(ctx, pid, u, true)
}

// freeze reads one replica's counters, its production stopped; gone says
// the process ends right after.
func (t *Topology) freeze(ctx context.Context, pid int, base string, gone bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+replica.FreezePath, nil)
	if err != nil {
		return
	}
	resp, err := countsClient.Do(req)
	if err != nil {
		return // left out: its calls are reported not reconcilable
	}
	defer resp.Body.Close()
	var c replica.Counts
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&c) != nil {
		return
	}
	c.Gone = gone
	t.mu.Lock()
	t.counts = append(t.counts, &c)
	t.mu.Unlock()
}

// Counts returns the counters of every reference replica process the
// design ran: those read just before a hard stop, those a planned stop left
// beside the production logs, and those of the replicas still running,
// whose production it stops first (the run is over). Missing names the
// processes whose counters could not be read (an exit nobody asked for, a
// replica that did not answer). Call it before Close.
func (t *Topology) Counts(ctx context.Context) (counts []*replica.Counts, missing []string) {
	if !t.reconcilable() {
		return nil, nil
	}
	t.mu.Lock()
	live := map[int]string{}
	for pid, u := range t.urls {
		live[pid] = u
	}
	started := slices.Clone(t.started)
	t.mu.Unlock()
	pids := make([]int, 0, len(live))
	for pid := range live {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		t.freeze(ctx, pid, live[pid], false)
	}
	t.mu.Lock()
	counts = slices.Clone(t.counts)
	t.mu.Unlock()
	have := map[int]bool{}
	for _, c := range counts {
		have[c.PID] = true
	}
	if t.opts.LogDir != "" {
		files, _ := filepath.Glob(filepath.Join(t.opts.LogDir, "replica-*.counts-*.json"))
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			var c replica.Counts
			if err != nil || json.Unmarshal(b, &c) != nil || have[c.PID] {
				continue
			}
			have[c.PID] = true
			counts = append(counts, &c)
		}
	}
	for _, s := range started {
		if !have[s.pid] {
			missing = append(missing, fmt.Sprintf("replica %d (pid %d)", s.slot, s.pid))
		}
	}
	return counts, missing
}

// Redis is a client of the design's Redis, for reading it after a run;
// nil when the design uses none. Close closes it.
func (t *Topology) Redis() *redis.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.raddr == "" || t.closing {
		return nil
	}
	if t.rdb == nil {
		o, err := store.ParseRedisURL(t.raddr)
		if err != nil {
			return nil
		}
		o.ReadTimeout, o.WriteTimeout, o.DialTimeout, o.MaxRetries = time.Second, time.Second, time.Second, -1
		t.rdb = redis.NewClient(o)
	}
	return t.rdb
}
