package replica

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/topology"
)

// requestServer is a RequestServer of rc behind a real HTTP server on
// loopback, its clock started now.
func requestServer(t *testing.T, rc topology.ReplicaConfig) (*RequestServer, string) {
	t.Helper()
	t0 := time.Now()
	s := NewRequestServer(&RequestOptions{Replica: rc, RNG: rand.New(rand.NewPCG(1, 2)), Now: func() int64 { return int64(time.Since(t0)) }})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// send sends n attempts, each abandoned after timeout, and returns their
// statuses (0: abandoned). Each attempt is sent once s has seen the one
// before it, so they reach the server in order however loaded the machine.
func send(t *testing.T, s *RequestServer, url string, n int, timeout time.Duration) []int {
	t.Helper()
	out := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
			req.Header.Set(AttemptHeader, strconv.Itoa(0))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			out[i] = resp.StatusCode
		}()
		waitCounts(t, s, func(c RequestCounts) bool { return arrived(c) > int64(i) })
	}
	wg.Wait()
	return out
}

// arrived is the number of attempts s has seen, admitted or refused.
func arrived(c RequestCounts) int64 {
	return c.Queued + c.RefusedQueue + c.RefusedAdmission + c.RefusedBudget
}

// waitCounts polls s until ok says its counts are done, or 5 s pass.
func waitCounts(t *testing.T, s *RequestServer, ok func(RequestCounts) bool) RequestCounts {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := s.Counts()
		if ok(c) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

// An attempt whose client left is still served when a worker reaches it,
// and holds the worker for its whole service: wasted work. A server that
// dropped abandoned attempts, or cut their service short, fails here.
func TestRequestServerServesAbandoned(t *testing.T) {
	t.Parallel()
	s, url := requestServer(t, topology.ReplicaConfig{Workers: 1, ServiceTime: 100 * time.Millisecond})
	got := send(t, s, url, 3, 50*time.Millisecond)
	for i, st := range got {
		if st != 0 {
			t.Errorf("attempt %d: status %d, want abandoned at 50 ms", i, st)
		}
	}
	c := waitCounts(t, s, func(c RequestCounts) bool { return c.Wasted == 3 })
	if c.Queued != 3 || c.Wasted != 3 || c.Served != 0 || c.WastedNS != int64(300*time.Millisecond) || c.ServiceNS != c.WastedNS {
		t.Errorf("counts %+v: want 3 queued, 3 served after their clients left, 300 ms of wasted service", c)
	}
}

// A design that sheds serves the first attempt and sheds the ones that
// waited past shed_after, answering their waiting clients 503 at once.
func TestRequestServerSheds(t *testing.T) {
	t.Parallel()
	s, url := requestServer(t, topology.ReplicaConfig{Workers: 1, ServiceTime: 100 * time.Millisecond, ShedAfter: 50 * time.Millisecond})
	got := send(t, s, url, 3, 2*time.Second)
	if got[0] != http.StatusOK || got[1] != http.StatusServiceUnavailable || got[2] != http.StatusServiceUnavailable {
		t.Errorf("statuses %v: want 200, then 503 for the two shed", got)
	}
	if c := s.Counts(); c.Served != 1 || c.Shed != 2 || c.Wasted != 0 {
		t.Errorf("counts %+v: want 1 served, 2 shed", c)
	}
}

// An outage stops every worker: attempts queue and wait until it ends; a
// bounded queue refuses the attempts over it.
func TestRequestServerOutage(t *testing.T) {
	t.Parallel()
	s, url := requestServer(t, topology.ReplicaConfig{Workers: 2, ServiceTime: 20 * time.Millisecond, RequestQueue: 2})
	s.Apply(faults.Step{Kind: faults.StepWorkersFactor, Fraction: 0})
	done := make(chan []int)
	go func() { done <- send(t, s, url, 3, 5*time.Second) }()
	waitCounts(t, s, func(c RequestCounts) bool { return c.Queued == 2 && c.RefusedQueue == 1 })
	time.Sleep(100 * time.Millisecond)
	if c := s.Counts(); c.Served != 0 {
		t.Errorf("served %d during the outage", c.Served)
	}
	s.Apply(faults.Step{Kind: faults.StepWorkersFactor, Fraction: 1})
	got := <-done
	if got[0] != http.StatusOK || got[1] != http.StatusOK || got[2] != http.StatusServiceUnavailable {
		t.Errorf("statuses %v: want the two queued served after the outage, the third refused (queue full)", got)
	}
}
