// Package lb is the live engine's load balancer: a reverse proxy on
// loopback that routes with the same topology.Policy code the simulator
// uses, flushes every SSE event through at once, knows which replicas are
// draining or down (after a health-check delay), answers 503 when none is
// up, and carries out the network faults: cut every connection to a
// replica, partition it, add latency.
//
// A live topology runs it as a process of its own (Serve, behind `stormsim
// lb`), so that the LB and the clients do not share one process's open
// files, and drives it over the process's control endpoint (Remote):
//
//	b := lb.New(policy, []string{"http://127.0.0.1:4001", ...}, nil)
//	http.ListenAndServe("127.0.0.1:4000", b) // in the process
//	r := lb.NewRemote(control, token)        // in the topology
//	r.Partition(ctx, 1, true)
package lb

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/topology"
)

// Balancer routes requests to replicas. It is safe for concurrent use: mu
// guards the policy (policies are not) and every field below it.
type Balancer struct {
	mu       sync.Mutex
	policy   topology.Policy
	backends []*backend
	latency  time.Duration
	health   *Health // nil: no health checks (a scenario run); see CheckHealth
	// noFiles counts the requests the LB answered 503 because its process
	// had no file left for the connection to the replica (EMFILE, ENFILE):
	// the harness's limit, not the design's (Files).
	noFiles atomic.Int64
}

type backend struct {
	url         *url.URL
	proxy       *httputil.ReverseProxy
	inPool      bool // the LB routes to it
	partitioned bool // unreachable: requests to it fail
	conns       map[*http.Request]context.CancelFunc
	// down: the health checks found it down (CheckHealth); fails counts
	// the active probes that failed in a row. SetBackend clears both.
	down  bool
	fails int
}

// New returns a balancer over the replica URLs, all in the pool.
func New(policy topology.Policy, urls []string) (*Balancer, error) {
	b := &Balancer{policy: policy}
	for _, u := range urls {
		if err := b.add(u); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *Balancer) add(raw string) error {
	p, u, err := b.newProxy(raw, "")
	if err != nil {
		return err
	}
	b.backends = append(b.backends, &backend{url: u, proxy: p, inPool: true, conns: map[*http.Request]context.CancelFunc{}})
	return nil
}

// newProxy returns a reverse proxy to one replica that flushes every SSE
// event at once and answers 503 when the replica cannot be reached. With a
// socket, it reaches the replica through that Unix socket instead of
// raw's host and port (the requests still name raw's host).
func (b *Balancer) newProxy(raw, socket string) (*httputil.ReverseProxy, *url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	dial := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if socket != "" {
		d := &net.Dialer{Timeout: 5 * time.Second}
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) }
	}
	// Its own pool per replica, large enough to keep a connection for
	// every concurrent stream: the default transport keeps two idle
	// connections per host and closes the rest.
	p.Transport = &http.Transport{
		Proxy:               nil,
		DialContext:         dial,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	p.FlushInterval = -1 // every SSE event goes through at once
	p.BufferPool = copyBuffers
	// A stream cut by a fault or a dying replica is the point of the
	// exercise, not an error worth a log line.
	p.ErrorLog = log.New(io.Discard, "", 0)
	p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() != nil {
			// Cut by the LB (a fault) or by the client: the connection
			// breaks, as a cut does, instead of answering an empty 200.
			panic(http.ErrAbortHandler)
		}
		if bw, ok := w.(*binder); ok && bw.passive(err) {
			return // bw.retry: ServeHTTP sends the request to another replica
		}
		if errors.Is(err, errDraining) {
			w.Header().Set(replica.DrainingHeader, "1")
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if OutOfFiles(err) {
			// The LB's own limit, not the replica's state: say so, and
			// count it for the run's saturation check.
			b.noFiles.Add(1)
			http.Error(w, "lb: out of open files: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "replica unreachable", http.StatusServiceUnavailable)
	}
	p.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(replica.DrainingHeader) != "" {
			if bw, ok := resp.Request.Context().Value(binderKey{}).(*binder); ok && bw.checking {
				return errDraining // refused before any work: the passive check sends it elsewhere
			}
		}
		return nil
	}
	return p, u, nil
}

// copyBuffers lends the proxies the buffers they copy response bodies
// through: without a pool, every response (an initialize's as much as a
// stream's) allocates and clears 32 KiB of its own.
var copyBuffers = &bufferPool{}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// view adapts the balancer to topology.View; the caller holds mu.
type view struct{ b *Balancer }

func (v view) Replicas() int     { return len(v.b.backends) }
func (v view) InPool(i int) bool { return v.b.backends[i].inPool && !v.b.backends[i].down }
func (v view) Conns(i int) int   { return len(v.b.backends[i].conns) }

// ReplicaHeader names the slot the LB sent a request to, on its response.
const ReplicaHeader = "X-Stormsim-Replica"

// MovedHeader lists, on a response, the slots the LB sent the request to
// before the one in ReplicaHeader, comma-separated: slots its passive
// health check found down or draining just then (CheckHealth). Absent when
// the first slot answered.
const MovedHeader = "X-Stormsim-Moved-From"

// maxBody bounds a request body the LB buffers.
const maxBody = 4 << 20

// ServeHTTP routes one request.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body is read whole before it is forwarded. Streaming it through
	// lets the proxy's transport still be reading the client's connection
	// when the server starts watching it for the next request, and about 1%
	// of the streams that follow on a kept-alive connection were cut right
	// after their first event (their context cancelled). MCP messages are
	// small.
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		r.Body.Close()
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = &replayBody{bytes.NewReader(body)}
		r.ContentLength = int64(len(body))
	}
	sid := r.Header.Get("Mcp-Session-Id")
	var moved []string
	for attempt := 0; ; attempt++ {
		if body, ok := r.Body.(*replayBody); ok {
			body.Reset() // a request the passive check moved is sent again whole
		}
		bw, done := b.forward(w, r, sid, attempt, moved)
		if done {
			return
		}
		moved = append(moved, strconv.Itoa(bw.slot))
	}
}

// forward sends r to the slot the policy picks; done is false when the
// passive health check found that slot down or draining before the
// request reached it, and the request should go to another.
func (b *Balancer) forward(w http.ResponseWriter, r *http.Request, sid string, attempt int, moved []string) (bw *binder, done bool) {
	b.mu.Lock()
	slot := b.policy.Pick(topology.Request{HasSession: sid != "", Session: topology.SessionKey(sid)}, view{b})
	if slot < 0 {
		b.mu.Unlock()
		http.Error(w, "no replica up", http.StatusServiceUnavailable)
		return nil, true
	}
	be := b.backends[slot]
	if be.partitioned {
		b.mu.Unlock()
		http.Error(w, "replica unreachable", http.StatusServiceUnavailable)
		return nil, true
	}
	bw = &binder{ResponseWriter: w, b: b, slot: slot, proxy: be.proxy, checking: b.health != nil, canMove: attempt < len(b.backends)}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), binderKey{}, bw))
	r = r.WithContext(ctx)
	be.conns[r] = cancel
	delay := b.latency
	if attempt > 0 {
		delay = 0 // the client's round trip was paid once
	}
	proxy := be.proxy // SetBackend may replace it once the lock is released
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(be.conns, r)
		b.mu.Unlock()
		cancel()
	}()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			panic(http.ErrAbortHandler) // cut while waiting: the connection breaks
		}
	}
	w.Header().Set(ReplicaHeader, strconv.Itoa(slot)) // which replica answered, for the history
	if len(moved) > 0 {
		w.Header().Set(MovedHeader, strings.Join(moved, ","))
	}
	proxy.ServeHTTP(bw, r)
	return bw, !bw.retry
}

// replayBody is a request body the LB read whole, so that it can be sent
// again.
type replayBody struct{ *bytes.Reader }

func (replayBody) Close() error { return nil }

func (b replayBody) Reset() { b.Seek(0, io.SeekStart) } //nolint:errcheck // a bytes.Reader seeks to 0

// binder tells the policy which replica minted a session.
type binder struct {
	http.ResponseWriter
	b     *Balancer
	slot  int
	done  bool
	proxy *httputil.ReverseProxy // the slot's process when the request left
	// checking: the health checks are on; canMove: the request may still
	// go to another slot; retry: the passive check asks for that.
	checking, canMove, retry bool
}

// binderKey carries the binder in the forwarded request's context, for the
// proxy's ModifyResponse.
type binderKey struct{}

func (w *binder) WriteHeader(code int) {
	if id := w.Header().Get("Mcp-Session-Id"); id != "" && !w.done {
		w.done = true
		w.b.mu.Lock()
		w.b.policy.Bind(topology.SessionKey(id), w.slot)
		w.b.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *binder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// SetInPool puts a replica in the pool or takes it out (draining, or found
// down by the health check).
func (b *Balancer) SetInPool(slot int, in bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slot < len(b.backends) {
		b.backends[slot].inPool = in
	}
}

// Cut breaks every open connection to a replica, as a network blip does.
func (b *Balancer) Cut(slot int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slot < len(b.backends) {
		for _, cancel := range b.backends[slot].conns {
			cancel()
		}
	}
}

// Partition makes a replica unreachable (and cuts its connections), or
// reachable again.
func (b *Balancer) Partition(slot int, on bool) {
	b.mu.Lock()
	if slot < len(b.backends) {
		b.backends[slot].partitioned = on
	}
	b.mu.Unlock()
	if on {
		b.Cut(slot)
	}
}

// SetLatency adds d before every request is forwarded.
func (b *Balancer) SetLatency(d time.Duration) {
	b.mu.Lock()
	b.latency = d
	b.mu.Unlock()
}

// SetBackend points a slot at a new replica URL (a restarted process).
// With a socket, the slot's requests go through that Unix socket, on which
// the replica serves the same handler: a loopback TCP hop costs the event
// path about twice the CPU of a Unix socket's.
func (b *Balancer) SetBackend(slot int, raw, socket string) error {
	p, u, err := b.newProxy(raw, socket)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for slot >= len(b.backends) {
		b.backends = append(b.backends, &backend{conns: map[*http.Request]context.CancelFunc{}})
	}
	be := b.backends[slot]
	be.url, be.proxy = u, p
	be.down, be.fails = false, 0 // a new process: the health checks start afresh
	return nil
}

// CutFraction breaks about that fraction of all open connections, as a
// client-drop fault does.
func (b *Balancer) CutFraction(f float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var all []context.CancelFunc
	for _, be := range b.backends {
		for _, c := range be.conns {
			all = append(all, c)
		}
	}
	n := int(f*float64(len(all)) + 0.5)
	for _, c := range all[:min(n, len(all))] {
		c()
	}
}
