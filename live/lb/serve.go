package lb

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/live/internal/cpuprof"
	"github.com/stormsim/stormsim/topology"
)

// The LB process (`stormsim lb`) and the topology that starts it speak over
// two channels: the process's output, one line each (listeningLine when it
// serves, healthLine each time its health checks change a slot), and the
// control endpoint, loopback HTTP with a JSON body, through which the
// topology carries out what it used to call in process: the pool, the
// backends, the network faults, the health checks (Remote).
const (
	listeningLine = "lb listening on "
	healthLine    = "lb health "
)

// TokenEnv names the environment variable that carries the control
// endpoint's bearer token to the LB process (not its arguments, which any
// user of the machine can read).
const TokenEnv = "STORMSIM_LB_TOKEN"

// The control endpoint's paths.
const (
	pathBackend   = "/lb/backend"
	pathPool      = "/lb/pool"
	pathPartition = "/lb/partition"
	pathLatency   = "/lb/latency"
	pathCut       = "/lb/cut"
	pathHealth    = "/lb/health"
)

// ControlRequest is the body of a control request; each path reads the
// fields it needs. Durations are in nanoseconds, as up's control endpoint
// reads them.
type ControlRequest struct {
	Slot     int           `json:"slot"`
	URL      string        `json:"url,omitempty"`      // pathBackend: the slot's new replica
	Socket   string        `json:"socket,omitempty"`   // pathBackend: the Unix socket it serves on too; none when empty
	In       bool          `json:"in,omitempty"`       // pathPool: in the pool or out
	On       bool          `json:"on,omitempty"`       // pathPartition: partitioned or healed
	Latency  time.Duration `json:"latency,omitempty"`  // pathLatency: the delay before each request
	Fraction float64       `json:"fraction,omitempty"` // pathCut: the share of connections to break
	// pathHealth: the health checks' settings (Health without OnChange,
	// which reaches the topology as healthLine).
	Interval  time.Duration `json:"interval,omitempty"`
	Threshold int           `json:"threshold,omitempty"`
	Path      string        `json:"path,omitempty"`
}

// PoolAnswer is the answer to GET pathPool: whether the balancer routes new
// requests to each slot (InPool).
type PoolAnswer struct {
	InPool []bool `json:"in_pool"`
}

// ServeOptions configures Serve.
type ServeOptions struct {
	Policy  string       // the topology.Policy name (a design's lb)
	Listen  net.Listener // where clients reach the LB
	Control net.Listener // the control endpoint; loopback
	Path    string       // the MCP endpoint's path; /mcp when empty
	Token   string       // the bearer token control requests carry; none when empty
	Stdout  io.Writer    // where the listening and health lines go
}

// Serve runs a balancer as a process of its own until ctx ends: the MCP
// endpoint on o.Listen, the control endpoint on o.Control. It prints the
// listening line once both serve. The balancer starts with no backend;
// the topology adds them over the control endpoint.
func Serve(ctx context.Context, o *ServeOptions) error {
	policy, err := topology.NewPolicy(o.Policy, nil)
	if err != nil {
		return fmt.Errorf("lb: %w", err)
	}
	defer cpuprof.Start("lb")()
	b, _ := New(policy, nil)
	path := o.Path
	if path == "" {
		path = "/mcp"
	}
	out := &lineWriter{w: o.Stdout}
	c := &controller{b: b, token: o.Token, out: out, ctx: ctx, accept: new(atomic.Int64)}
	mux := http.NewServeMux()
	mux.Handle(path, b)
	data := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctl := &http.Server{Handler: c.mux(), ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 2)
	go func() { errs <- data.Serve(countingListener{o.Listen, c.accept}) }()
	go func() { errs <- ctl.Serve(o.Control) }()
	out.say(fmt.Sprintf("%shttp://%s%s control http://%s", listeningLine, o.Listen.Addr(), path, o.Control.Addr()))
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errs:
		err = fmt.Errorf("lb: %w", err)
	}
	data.Close()
	ctl.Close()
	return err
}

// lineWriter writes whole lines from any goroutine, at once.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) say(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, line)
	if f, ok := l.w.(*os.File); ok {
		f.Sync()
	}
}

// controller serves the control endpoint over one balancer.
type controller struct {
	b     *Balancer
	token string
	out   *lineWriter
	ctx   context.Context // the process's: the health checks run until it ends
	// accept counts the client connections the data listener could not
	// take for want of a file (countingListener).
	accept *atomic.Int64
}

func (c *controller) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("POST "+pathBackend, c.handle(func(r ControlRequest) error { return c.b.SetBackend(r.Slot, r.URL, r.Socket) }))
	m.HandleFunc("POST "+pathPool, c.handle(func(r ControlRequest) error { c.b.SetInPool(r.Slot, r.In); return nil }))
	m.HandleFunc("POST "+pathPartition, c.handle(func(r ControlRequest) error { c.b.Partition(r.Slot, r.On); return nil }))
	m.HandleFunc("POST "+pathLatency, c.handle(func(r ControlRequest) error { c.b.SetLatency(r.Latency); return nil }))
	m.HandleFunc("POST "+pathCut, c.handle(func(r ControlRequest) error { c.b.CutFraction(r.Fraction); return nil }))
	m.HandleFunc("POST "+pathHealth, c.handle(func(r ControlRequest) error {
		c.b.CheckHealth(c.ctx, Health{Interval: r.Interval, Threshold: r.Threshold, Path: r.Path, OnChange: c.healthChanged})
		return nil
	}))
	// The LB's own profiles (go tool pprof), behind the token like the rest:
	// where the CPU of a process that moves every event goes.
	m.HandleFunc("GET /debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if c.authorized(w, r) {
			pprof.Index(w, r)
		}
	})
	m.HandleFunc("GET /debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		if c.authorized(w, r) {
			pprof.Profile(w, r)
		}
	})
	m.HandleFunc("GET "+pathPool, c.answer(func() any { return PoolAnswer{InPool: c.b.Pool()} }))
	m.HandleFunc("GET "+pathFiles, c.answer(func() any { return c.b.Files(c.accept) }))
	return m
}

// handle decodes a ControlRequest, strictly, and answers 204 once do has
// run, 400 with why when the body or do fails.
func (c *controller) handle(do func(ControlRequest) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.authorized(w, r) {
			return
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		var req ControlRequest
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "lb: control "+r.URL.Path+": "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := do(req); err != nil {
			http.Error(w, "lb: control "+r.URL.Path+": "+err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// answer serves a GET with what get returns, as JSON.
func (c *controller) answer(get func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.authorized(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(get()) //nolint:errcheck // the client reads what arrives
	}
}

func (c *controller) authorized(w http.ResponseWriter, r *http.Request) bool {
	if c.token != "" && r.Header.Get("Authorization") != "Bearer "+c.token {
		http.Error(w, "lb: want the control token", http.StatusUnauthorized)
		return false
	}
	return true
}

// healthChanged is the health checks' OnChange: one healthLine.
func (c *controller) healthChanged(slot int, up bool, why string) {
	state := "down"
	if up {
		state = "up"
	}
	c.out.say(fmt.Sprintf("%s%d %s %s", healthLine, slot, state, strings.ReplaceAll(why, "\n", " ")))
}

// Watch reads an LB process's output until it ends: listening is called
// once, with the MCP endpoint and the control endpoint, when the listening
// line comes; health for each healthLine after it. It reports whether the
// listening line came.
func Watch(out io.Reader, listening func(endpoint, control string), health func(slot int, up bool, why string)) bool {
	sc := bufio.NewScanner(out)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, listeningLine); ok && !found {
			endpoint, control, _ := strings.Cut(rest, " control ")
			found = true
			listening(endpoint, control)
			continue
		}
		if rest, ok := strings.CutPrefix(line, healthLine); ok && found {
			var slot int
			var state string
			if n, _ := fmt.Sscanf(rest, "%d %s", &slot, &state); n == 2 {
				_, why, _ := strings.Cut(rest, state+" ")
				health(slot, state == "up", why)
			}
		}
	}
	return found
}

// ErrControl wraps a control request the LB process refused or did not
// answer.
var ErrControl = errors.New("lb: control request failed")
