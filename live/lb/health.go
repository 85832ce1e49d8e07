package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"syscall"
	"time"
)

// Health configures the balancer's health checks (CheckHealth).
type Health struct {
	// Interval is the time between two active probes of a replica; 0
	// means no active probes (the passive checks stay on).
	Interval time.Duration
	// Threshold is how many probes in a row must fail before a replica
	// leaves the pool; one that succeeds puts it back. Below 1 means 1.
	Threshold int
	// Path is what a probe GETs on a replica's base URL, /healthz when
	// empty. A connection error, a timeout or a status of 500 or more
	// fails the probe; any other answer passes.
	Path string
	// OnChange, if set, is called (outside the balancer's lock) each time
	// the checks take a replica out of the pool or put it back, with why.
	OnChange func(slot int, up bool, why string)
}

// errDraining is what the proxy makes of a replica's 503 that says it is
// draining (replica.DrainingHeader): it refused the request before doing
// any work, so the request can go elsewhere.
var errDraining = errors.New("lb: the replica is draining")

// CheckHealth turns on the health checks of `stormsim up`'s LB, until ctx
// ends:
//   - passive: a request whose connection to its replica is refused, or a
//     replica that answers it as draining, takes that replica out of the
//     pool and goes to another (nothing reached a replica's work); a
//     connection reset or closed before the answer takes it out too, and
//     the request gets 503, since it may have been acted on;
//   - active, when h.Interval > 0: every replica is probed every
//     h.Interval, and h.Threshold failures in a row take it out of the
//     pool; a probe that passes puts it back. A partitioned replica fails
//     its probes without one being sent.
//
// A replica the checks took out comes back through a probe, or when its
// slot gets a new process (SetBackend). The checks never put back a
// replica that SetInPool took out (a drain, a scale-down).
//
// Without CheckHealth the balancer learns of a death only through
// SetInPool, as the scenario's lb-health-delay says: the simulator's model,
// which scenario runs keep.
func (b *Balancer) CheckHealth(ctx context.Context, h Health) {
	h.Threshold = max(h.Threshold, 1)
	if h.Path == "" {
		h.Path = "/healthz"
	}
	b.mu.Lock()
	b.health = &h
	b.mu.Unlock()
	if h.Interval > 0 {
		go b.probeLoop(ctx, h)
	}
}

// InPool reports whether the balancer routes new requests to slot: in the
// pool and not found down by the health checks.
func (b *Balancer) InPool(slot int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slot < len(b.backends) && view{b}.InPool(slot)
}

// passive acts on err, the error of a request bw forwarded, for the
// passive health check. It reports whether it asks ServeHTTP to send the
// request to another slot (bw.retry); otherwise the caller answers.
func (bw *binder) passive(err error) bool {
	if !bw.checking {
		return false
	}
	var why string
	move := false
	switch {
	case errors.Is(err, errDraining):
		why, move = "answered as draining", true
	case errors.Is(err, syscall.ECONNREFUSED):
		why, move = "connection refused", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		why = "connection reset"
	default:
		return false
	}
	bw.b.markDown(bw.slot, bw.proxy, "passive check: "+why)
	if move && bw.canMove {
		bw.retry = true
		return true
	}
	return false
}

// markDown takes slot out of the pool if it still runs the process behind
// proxy.
func (b *Balancer) markDown(slot int, proxy *httputil.ReverseProxy, why string) {
	b.mu.Lock()
	h := b.health
	if h == nil || slot >= len(b.backends) || b.backends[slot].proxy != proxy || b.backends[slot].down {
		b.mu.Unlock()
		return
	}
	be := b.backends[slot]
	be.down, be.fails = true, h.Threshold
	b.mu.Unlock()
	if h.OnChange != nil {
		h.OnChange(slot, false, why)
	}
}

// probeLoop probes every replica every h.Interval until ctx ends.
func (b *Balancer) probeLoop(ctx context.Context, h Health) {
	// Its own connections, one per probe: a probe must find out whether a
	// new connection is accepted, and must not keep one to a dead replica.
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		Timeout:   min(h.Interval, 2*time.Second),
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(h.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		type target struct {
			slot        int
			base        string
			proxy       *httputil.ReverseProxy
			partitioned bool
		}
		var targets []target
		b.mu.Lock()
		for i, be := range b.backends {
			if be.url != nil {
				targets = append(targets, target{i, be.url.String(), be.proxy, be.partitioned})
			}
		}
		b.mu.Unlock()
		done := make(chan struct{}, len(targets))
		for _, tg := range targets {
			go func() {
				defer func() { done <- struct{}{} }()
				why := "partitioned from the LB"
				if !tg.partitioned {
					why = probe(ctx, client, tg.base+h.Path)
				}
				if ctx.Err() == nil {
					b.probed(h, tg.slot, tg.proxy, why)
				}
			}()
		}
		for range targets {
			<-done
		}
	}
}

// probe GETs url once: "" when it passes, else why it failed.
func probe(ctx context.Context, client *http.Client, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return "connection refused"
		}
		return err.Error()
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) //nolint:errcheck // the status is the answer
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return resp.Status
	}
	return ""
}

// probed records one probe of slot's process behind proxy: why is "" for a
// pass.
func (b *Balancer) probed(h Health, slot int, proxy *httputil.ReverseProxy, why string) {
	b.mu.Lock()
	if slot >= len(b.backends) || b.backends[slot].proxy != proxy {
		b.mu.Unlock()
		return // a new process since: its own probes decide
	}
	be := b.backends[slot]
	changed, up := false, why == ""
	if up {
		be.fails = 0
		changed, be.down = be.down, false
	} else {
		be.fails++
		if !be.down && be.fails >= h.Threshold {
			changed, be.down = true, true
		}
	}
	b.mu.Unlock()
	if changed && h.OnChange != nil {
		msg := "active check: probe passed"
		if !up {
			msg = fmt.Sprintf("active check: %d probes failed in a row (last: %s)", h.Threshold, why)
		}
		h.OnChange(slot, up, msg)
	}
}

// Pool reports, for every slot, whether the balancer routes new requests
// to it (InPool).
func (b *Balancer) Pool() []bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]bool, len(b.backends))
	for i := range out {
		out[i] = view{b}.InPool(i)
	}
	return out
}
