package lb

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// served is an LB process's Serve run in the test, with its output read by
// Watch as the topology reads it.
type served struct {
	endpoint string
	remote   *Remote
	health   *changes
}

func serveLB(t *testing.T, policy, token string) *served {
	t.Helper()
	data, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := Serve(ctx, &ServeOptions{Policy: policy, Listen: data, Control: ctl, Token: token, Stdout: pw}); err != nil {
			t.Error(err)
		}
		pw.Close()
	}()
	s := &served{health: &changes{}}
	ready := make(chan [2]string, 1)
	go func() {
		defer wg.Done()
		Watch(pr, func(e, c string) { ready <- [2]string{e, c} }, s.health.on)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case got := <-ready:
		s.endpoint, s.remote = got[0], NewRemote(got[1], token)
	case <-time.After(10 * time.Second):
		t.Fatal("the LB never printed its listening line")
	}
	t.Cleanup(s.remote.Close)
	return s
}

// The LB as a process of its own, driven over its control endpoint: the
// backends, the pool, a partition and the active health checks all act on
// the requests it routes (a new backend joins the pool when told to), and the checks' verdicts come out as lines. A
// request without the token, or with a key the endpoint does not know, is
// refused and changes nothing.
func TestControl(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := serveLB(t, "round-robin", "secret")
	if st, _, _ := initializeSlot(t, s.endpoint); st != 503 {
		t.Errorf("no backend yet: %d, want 503", st)
	}
	urls := replicas(t, 2)
	for i, u := range urls {
		if err := s.remote.SetBackend(ctx, i, u, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.remote.SetInPool(ctx, i, true); err != nil {
			t.Fatal(err)
		}
	}
	if st, slot, _ := initializeSlot(t, s.endpoint); st != 200 || slot == "" {
		t.Fatalf("initialize through the LB process: %d from slot %q", st, slot)
	}
	if err := s.remote.SetInPool(ctx, 1, false); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if st, slot, _ := initializeSlot(t, s.endpoint); st != 200 || slot != "0" {
			t.Errorf("slot 1 out of the pool: %d from slot %q, want 200 from 0", st, slot)
		}
	}
	pool, err := s.remote.Pool(ctx)
	if err != nil || len(pool) != 2 || !pool[0] || pool[1] {
		t.Errorf("Pool = %v, %v; want [true false]", pool, err)
	}
	if err := s.remote.Partition(ctx, 0, true); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := initializeSlot(t, s.endpoint); st != 503 {
		t.Errorf("the one slot in the pool partitioned: %d, want 503", st)
	}
	if err := s.remote.CheckHealth(ctx, Health{Interval: 50 * time.Millisecond, Threshold: 2}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.health.list()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := s.health.list(); len(got) == 0 || !strings.HasPrefix(got[0], "0 false: active check: 2 probes failed in a row (last: partitioned from the LB)") {
		t.Errorf("health lines %q: want slot 0 found down by the active check", got)
	}
	bad := NewRemote(s.remote.base, "wrong")
	defer bad.Close()
	if err := bad.Partition(ctx, 0, false); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong token: %v, want 401", err)
	}
	req, _ := http.NewRequest("POST", s.remote.base+pathPartition, bytes.NewReader([]byte(`{"slot":0,"heal":true}`)))
	req.Header.Set("Authorization", "Bearer secret")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("an unknown key: %v %v, want 400", resp, err)
	} else {
		resp.Body.Close()
	}
	if st, _, _ := initializeSlot(t, s.endpoint); st != 503 {
		t.Errorf("after refused requests the partition holds: %d, want 503", st)
	}
}
