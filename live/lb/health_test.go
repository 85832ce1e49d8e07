package lb

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/topology"
)

// changes records what the health checks report, in order.
type changes struct {
	mu  sync.Mutex
	got []string
}

func (c *changes) on(slot int, up bool, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, strconv.Itoa(slot)+" "+strconv.FormatBool(up)+": "+why)
}

func (c *changes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// initializeSlot sends an initialize through the LB and returns the status,
// the slot that answered and the slots it was moved from.
func initializeSlot(t *testing.T, url string) (status int, slot, moved string) {
	t.Helper()
	resp := post(t, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(ReplicaHeader), resp.Header.Get(MovedHeader)
}

// The passive check: with one replica's listener closed (connection
// refused), every new session succeeds on the others, the first request
// that found it closed is moved (and says so), and the replica leaves the
// pool at once. Without health checks, the same LB answers 503 to the
// requests routed there: the check is what makes the difference.
func TestPassiveRefused(t *testing.T) {
	t.Parallel()
	for _, checking := range []bool{true, false} {
		p, _ := topology.NewPolicy("round-robin", nil)
		urls := replicas(t, 3)
		b, _ := New(p, urls)
		var ch changes
		if checking {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.CheckHealth(ctx, Health{OnChange: ch.on}) // passive only: no probes
		}
		ts := httptest.NewServer(b)
		defer ts.Close()
		// A dead replica: its address refuses connections.
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		if err := b.SetBackend(1, dead.URL, ""); err != nil {
			t.Fatal(err)
		}
		fails, movedFrom1 := 0, 0
		for i := 0; i < 12; i++ {
			status, slot, moved := initializeSlot(t, ts.URL)
			if status != 200 {
				fails++
				continue
			}
			if slot == "1" {
				t.Errorf("checking %v: a session answered by the dead slot", checking)
			}
			if moved == "1" {
				movedFrom1++
			}
		}
		if checking {
			if fails != 0 || movedFrom1 != 1 {
				t.Errorf("with the check: %d of 12 failed, %d moved from slot 1; want 0 and 1", fails, movedFrom1)
			}
			if got := ch.list(); len(got) != 1 || got[0] != "1 false: passive check: connection refused" {
				t.Errorf("changes %q", got)
			}
			if b.InPool(1) || !b.InPool(0) {
				t.Errorf("in pool: slot 1 %v, slot 0 %v", b.InPool(1), b.InPool(0))
			}
			// A new process in the slot starts afresh.
			b.SetBackend(1, urls[1], "")
			if !b.InPool(1) {
				t.Error("a new process in slot 1 is not in the pool")
			}
		} else if fails != 4 {
			t.Errorf("without the check: %d of 12 failed, want 4 (every third, round robin)", fails)
		}
	}
}

// A draining replica answers new work 503 with replica.DrainingHeader: the
// checking LB takes it out of the pool and moves the request; without the
// check, the client gets the 503.
func TestPassiveDraining(t *testing.T) {
	t.Parallel()
	for _, checking := range []bool{true, false} {
		p, _ := topology.NewPolicy("round-robin", nil)
		var srvs []*replica.Server
		var urls []string
		for i := 0; i < 2; i++ {
			s := replica.New(replica.Config{Sessions: topology.SessionsLocal, Events: topology.EventsMemory,
				Store: store.NewMemory(0, 0), Replica: topology.ReplicaConfig{DrainLimit: time.Second}})
			ts := httptest.NewServer(s)
			t.Cleanup(func() { s.Kill(); ts.Close() })
			srvs, urls = append(srvs, s), append(urls, ts.URL)
		}
		b, _ := New(p, urls)
		var ch changes
		if checking {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.CheckHealth(ctx, Health{OnChange: ch.on})
		}
		ts := httptest.NewServer(b)
		defer ts.Close()
		srvs[0].Drain() // nothing running: it returns at once, still refusing new work
		fails := 0
		for i := 0; i < 6; i++ {
			status, slot, _ := initializeSlot(t, ts.URL)
			if status != 200 {
				fails++
			} else if slot != "1" {
				t.Errorf("checking %v: answered by slot %s", checking, slot)
			}
		}
		if checking && (fails != 0 || b.InPool(0)) {
			t.Errorf("with the check: %d of 6 failed, slot 0 in pool %v; changes %q", fails, b.InPool(0), ch.list())
		}
		if !checking && fails != 3 {
			t.Errorf("without the check: %d of 6 failed, want 3", fails)
		}
	}
}

// An admission 503 is not a drain: it carries Retry-After and no
// replica.DrainingHeader, so the checking LB passes it to the client and
// keeps the replica in its pool.
func TestPassiveAdmission(t *testing.T) {
	t.Parallel()
	p, _ := topology.NewPolicy("round-robin", nil)
	var urls []string
	for i := 0; i < 2; i++ {
		s := replica.New(replica.Config{Sessions: topology.SessionsLocal, Events: topology.EventsMemory,
			Store: store.NewMemory(0, 0), Replica: topology.ReplicaConfig{AdmitBucket: 1, AdmitInterval: time.Hour},
			Clock: func() time.Time { return time.Unix(0, 0) }})
		ts := httptest.NewServer(s)
		t.Cleanup(func() { s.Kill(); ts.Close() })
		urls = append(urls, ts.URL)
	}
	b, _ := New(p, urls)
	var ch changes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.CheckHealth(ctx, Health{OnChange: ch.on})
	ts := httptest.NewServer(b)
	defer ts.Close()
	var got []string
	for i := 0; i < 4; i++ {
		resp := post(t, ts.URL, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
		resp.Body.Close()
		got = append(got, fmt.Sprintf("%d %s %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get(replica.DrainingHeader)))
	}
	// one admitted per replica per hour; the rest told to come back in an hour
	want := []string{`200  ""`, `200  ""`, `503 3600 ""`, `503 3600 ""`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if !b.InPool(0) || !b.InPool(1) {
		t.Errorf("an admission 503 took a replica out of the pool; changes %q", ch.list())
	}
}

// The active check: threshold failed probes in a row take a replica out of
// the pool with no request sent, and one probe that passes puts it back.
func TestActiveProbes(t *testing.T) {
	t.Parallel()
	var sick atomic.Bool
	var probes, failed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		probes.Add(1)
		if sick.Load() {
			// Counted here, where it fails: a probe counted before
			// sick was set may still read it and fail.
			failed.Add(1)
			http.Error(w, "sick", http.StatusServiceUnavailable)
		}
	})
	watched := httptest.NewServer(mux)
	defer watched.Close()
	p, _ := topology.NewPolicy("round-robin", nil)
	b, _ := New(p, append(replicas(t, 1), watched.URL))
	var ch changes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var failedAtOut atomic.Int64 // failed probes when the replica left the pool
	b.CheckHealth(ctx, Health{Interval: 100 * time.Millisecond, Threshold: 3, OnChange: func(slot int, up bool, why string) {
		if !up {
			failedAtOut.CompareAndSwap(0, failed.Load())
		}
		ch.on(slot, up, why)
	}})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s; changes %q", what, ch.list())
			}
		}
	}
	waitFor("two probes", func() bool { return probes.Load() >= 2 })
	if !b.InPool(1) || len(ch.list()) != 0 {
		t.Fatalf("a healthy replica: in pool %v, changes %q", b.InPool(1), ch.list())
	}
	sick.Store(true)
	// The checks take the slot out under the balancer's lock and call
	// OnChange after it: wait for the call too, or failedAtOut may not be
	// set yet.
	waitFor("slot 1 out of the pool", func() bool { return !b.InPool(1) && len(ch.list()) >= 1 })
	if n := failedAtOut.Load(); n < 3 {
		t.Errorf("out of the pool after %d failed probes, want 3", n)
	}
	sick.Store(false)
	waitFor("slot 1 back in the pool", func() bool { return b.InPool(1) && len(ch.list()) >= 2 }) // and its OnChange, as above
	want := []string{"1 false: active check: 3 probes failed in a row (last: 503 Service Unavailable)", "1 true: active check: probe passed"}
	if got := ch.list(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("changes %q, want %q", got, want)
	}
	// A partitioned replica fails its probes; SetInPool's decision is
	// never undone by a probe.
	b.Partition(1, true)
	waitFor("a partitioned slot 1 out of the pool", func() bool { return !b.InPool(1) })
	b.Partition(1, false)
	b.SetInPool(0, false)
	waitFor("slot 1 back after the partition", func() bool { return b.InPool(1) })
	time.Sleep(100 * time.Millisecond) // five probe rounds
	if b.InPool(0) {
		t.Error("a probe put back a replica SetInPool took out")
	}
}
