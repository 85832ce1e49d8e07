// Package topo runs a live topology for one design of a scenario: a replica
// process per slot (`stormsim serve`), a private redis-server when the
// design needs one, and the load balancer, a process of its own (`stormsim
// lb`) driven over its control endpoint (lb.Remote). It carries out the
// scenario's fault steps for real — SIGTERM and SIGKILL for restarts and
// crashes, processes started and stopped for scale, the LB for partitions
// and latency, SIGSTOP/SIGCONT and a restart for the store — and
// records the PID of everything it starts, so that Close leaves nothing
// running.
//
//	t, err := topo.Start(ctx, sc, design, &topo.Options{Bin: "bin/stormsim", File: "scenarios.toml"})
//	defer t.Close()
//	fmt.Println(t.Endpoint())
package topo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/live/internal/cpuprof"
	"github.com/stormsim/stormsim/live/internal/tmpdir"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// Options configures a topology. A nil *Options means the defaults.
type Options struct {
	Bin  string // the stormsim binary that runs `serve`; the running executable by default
	File string // the scenarios file the replicas load; scenarios.toml by default
	// RedisAddr uses an existing Redis instead of starting one. stormsim
	// never stops, kills or restarts a Redis it did not start.
	RedisAddr string
	LogDir    string   // where replicas write their production logs; none when empty
	Set       []string // --set overrides the replicas load the scenario with
	// Counts reads a reference replica's counters just before each hard
	// stop (see Counts), which stops its production a moment early; a live
	// run sets it, `stormsim up` does not.
	Counts bool
	// Health turns on the LB's health checks (lb.Balancer.CheckHealth),
	// as `stormsim up` does; the probes GET a server's ready path when
	// Path is empty. Nil in a scenario run: its LB learns of a death as
	// the scenario's lb-health-delay says, as the simulator models it.
	Health *lb.Health
	// Notify, if set, is told each change of a slot (a process started,
	// draining, stopped or exited; the LB taking a slot out of its pool
	// or putting it back), one line at a time, in order, from one
	// goroutine: "slot 1 pid 1234 exited: signal: killed".
	Notify func(string)
	// Listen is the address the LB listens on (host:port); 127.0.0.1:0,
	// loopback on a free port, when empty. The replicas and Redis stay on
	// loopback whatever it says: only the LB faces the clients.
	Listen string
	// AllowHosts are the host names, besides loopback, that the reference
	// and ts-sdk replicas answer to in a Host or Origin header (each passed
	// as serve --allow-host): the LB passes the client's Host through, so
	// they are the names clients reach the LB by. "*" allows any.
	AllowHosts []string
	// Detach starts each reference replica in a process group of its
	// own, so that a terminal's Ctrl-C, sent to the foreground group,
	// reaches the caller alone, which then stops the replicas in order
	// (reading their counters first). They still die with the caller
	// (package child).
	Detach bool
}

// Topology is a running live topology. Its methods are safe for concurrent
// use; mu guards the slots and the set of PIDs.
type Topology struct {
	sc    *scenario.Scenario
	d     *scenario.Design
	opts  Options
	redis *redisd.Server // nil when none was started
	raddr string
	bal   *lb.Remote // the LB process's control endpoint; nil until it listens
	addr  net.Addr   // where the LB listens for clients

	mu      sync.Mutex
	slots   []*exec.Cmd
	lbCmd   *exec.Cmd // the LB process
	pids    map[int]bool
	latency time.Duration
	health  time.Duration
	groups  []int          // process groups of own-server replicas, by leader PID
	urls    map[int]string // base URL of each running reference replica, by PID
	rdb     *redis.Client  // for StoreBytes; made on first use
	exits   []Exit         // own-server replicas and the LB, ended when nobody stopped them
	closing bool
	gotmp   string // the own server's GOTMPDIR (goTmp), removed by Close
	sockDir string // the folder of the replicas' Unix sockets (socketPath), removed by Close
	nsock   int    // sockets named so far
	// storeGen counts the scheduled store fault steps begun and ended;
	// storeHeld is true while one holds the store down (see StoreFault).
	storeGen  uint64
	storeHeld bool
	// The reference replicas' counters read before a hard stop, and every
	// replica process started, for Counts.
	counts  []*replica.Counts
	started []startedProc
	// slotStates is each slot's latest process, for Slots; notes are
	// what Options.Notify has yet to be told, noteWake wakes its
	// goroutine, stop ends it and the health checks.
	slotStates []SlotState
	notes      []string
	noteWake   chan struct{}
	stop       context.CancelFunc
}

type startedProc struct{ slot, pid int }

// Start brings the topology up: Redis if needed, every replica, the LB.
func Start(ctx context.Context, sc *scenario.Scenario, d *scenario.Design, opts *Options) (*Topology, error) {
	t := &Topology{sc: sc, d: d, pids: map[int]bool{}, urls: map[int]string{}, noteWake: make(chan struct{}, 1)}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		t.opts.Bin = exe
	}
	if t.opts.File == "" {
		t.opts.File = "scenarios.toml"
	}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	if d.Own != nil && d.Own.URL != "" {
		return nil, fmt.Errorf("topo: design %s: server.url names a server stormsim does not run; there is no topology to start", d.Name)
	}
	// The LB's socket first, so that an address it cannot listen on
	// starts nothing; the LB process inherits it.
	listen := t.opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %v", ErrListen, listen, err)
	}
	t.addr = ln.Addr()
	defer ln.Close() // the LB process holds its own copy
	if d.Own == nil && (d.Events == topology.EventsRedis || d.Sessions == topology.SessionsShared) {
		if t.opts.RedisAddr != "" {
			t.raddr = t.opts.RedisAddr // a URL or host:port, passed on as given
		} else {
			persistent := d.Store.Persistent
			for _, f := range sc.Faults {
				if r, isRestart := f.(*faults.StoreRestart); isRestart && r.Persistent {
					persistent = true
				}
			}
			srv, err := redisd.Start(ctx, &redisd.Options{Persistent: persistent})
			if err != nil {
				return nil, err
			}
			t.redis, t.raddr = srv, srv.Addr()
			t.pids[srv.PID()] = true
		}
	}
	if _, err := topology.NewPolicy(d.LB, nil); err != nil {
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	t.stop = stop
	if t.opts.Notify != nil {
		go t.notifier(bg)
	}
	if err := t.startLB(ctx, ln, d.LB, t.healthChanged); err != nil {
		return nil, err
	}
	// The scenario's round trip, as the simulator models it: loopback alone
	// would answer in well under a millisecond, and the order in which
	// clients' requests interleave at the LB depends on it.
	t.latency = sc.RTT
	if err := t.bal.SetLatency(ctx, t.latency); err != nil {
		return nil, err
	}
	if t.opts.Health != nil {
		if err := t.startChecks(ctx); err != nil {
			return nil, err
		}
	}
	for slot := 0; slot < sc.Replicas; slot++ {
		if err := t.startSlot(ctx, slot); err != nil {
			return nil, err
		}
	}
	ok = true
	return t, nil
}

// Endpoint is the MCP URL of the load balancer, with the address it
// listens on.
func (t *Topology) Endpoint() string { return "http://" + t.addr.String() + t.path() }

// EndpointAt is Endpoint with host in place of the address the LB listens
// on (the port kept): the URL to give clients on other machines when the LB
// listens on all interfaces.
func (t *Topology) EndpointAt(host string) string {
	_, port, _ := net.SplitHostPort(t.addr.String())
	return "http://" + net.JoinHostPort(host, port) + t.path()
}

// path is the MCP endpoint's path: the own server's, or /mcp.
func (t *Topology) path() string {
	if t.d.Own != nil {
		return t.d.Own.Endpoint
	}
	return "/mcp"
}

// PIDs lists every process the topology started and has not seen exit.
func (t *Topology) PIDs() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int
	for p := range t.pids {
		out = append(out, p)
	}
	return out
}

// startSlot starts a replica process for slot and puts it in the pool once
// it listens.
func (t *Topology) startSlot(ctx context.Context, slot int) error {
	if t.d.Own != nil {
		return t.startOwn(ctx, slot)
	}
	args := []string{"serve", "--file", t.opts.File, "--scenario", t.sc.Name, "--design", t.d.Name,
		"--slot", strconv.Itoa(slot), "--slots", strconv.Itoa(t.sc.Replicas)}
	if t.raddr != "" {
		args = append(args, "--redis-url", t.raddr)
	}
	for _, kv := range t.opts.Set {
		args = append(args, "--set", kv)
	}
	for _, h := range t.opts.AllowHosts {
		args = append(args, "--allow-host", h)
	}
	if t.opts.LogDir != "" {
		args = append(args, "--log", fmt.Sprintf("%s/replica-%d.jsonl", t.opts.LogDir, slot))
	}
	socket, err := t.socketPath(slot)
	if err != nil {
		return err
	}
	if socket != "" {
		args = append(args, "--socket", socket)
	}
	cmd := exec.Command(t.opts.Bin, args...)
	if t.opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(cmd); err != nil {
		return fmt.Errorf("topo: starting replica %d: %w", slot, err)
	}
	t.mu.Lock()
	t.pids[cmd.Process.Pid] = true
	t.started = append(t.started, startedProc{slot, cmd.Process.Pid})
	for len(t.slots) <= slot {
		t.slots = append(t.slots, nil)
	}
	t.slots[slot] = cmd
	t.mu.Unlock()
	go func() {
		err := cmd.Wait()
		status := "exit status 0"
		if err != nil {
			status = err.Error()
		}
		t.mu.Lock()
		delete(t.pids, cmd.Process.Pid)
		delete(t.urls, cmd.Process.Pid)
		if !t.closing {
			t.setSlot(slot, cmd, "", SlotExited, status, "exited: "+status)
		}
		t.mu.Unlock()
	}()
	addr := make(chan string, 1)
	silent := make(chan struct{}) // closed when its output ends without the line
	go func() {
		if !replica.WatchHandshake(out, func(u string) { addr <- u }, func() { t.drained(slot, cmd) }) {
			close(silent)
		}
	}()
	limit := wait.For(wait.Ready)
	select {
	case u := <-addr:
		if err := t.bal.SetBackend(ctx, slot, u, socket); err != nil {
			return err
		}
		t.mu.Lock()
		if t.pids[cmd.Process.Pid] {
			t.urls[cmd.Process.Pid] = u
		}
		t.setSlot(slot, cmd, u, SlotServing, "", "serving "+u)
		t.mu.Unlock()
		return t.bal.SetInPool(ctx, slot, true)
	case <-silent:
		return fmt.Errorf("topo: replica %d (pid %d) exited before it printed \"listening on\"", slot, cmd.Process.Pid)
	case <-time.After(limit):
		return fmt.Errorf("topo: waited %v for replica %d (pid %d) to print \"listening on\"; it did not", limit, slot, cmd.Process.Pid)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal sends sig to a slot's process; false when there is none.
func (t *Topology) signal(slot int, sig syscall.Signal) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slot >= len(t.slots) || t.slots[slot] == nil {
		return false
	}
	if t.d.Own != nil {
		t.stopOwn(t.slots[slot], sig == syscall.SIGTERM)
	} else {
		t.slots[slot].Process.Signal(sig)
	}
	switch sig {
	case syscall.SIGTERM:
		t.setSlot(slot, t.slots[slot], "", SlotDraining, "", "sent SIGTERM: draining")
	case syscall.SIGKILL:
		t.setSlot(slot, t.slots[slot], "", SlotStopped, "", "sent SIGKILL")
	}
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		t.slots[slot] = nil
	}
	return true
}

// ErrListen is returned by Start when the LB cannot listen on
// Options.Listen.
var ErrListen = errors.New("topo: the LB cannot listen")

// ErrNotOurs is returned for a store fault on a Redis stormsim did not start.
var ErrNotOurs = errors.New("topo: refusing to stop or restart a Redis stormsim did not start")

// Apply carries out one fault step for real.
func (t *Topology) Apply(ctx context.Context, s faults.Step) error {
	switch s.Kind {
	case faults.StepStop:
		if s.Graceful {
			// A draining replica leaves the pool at once.
			if err := t.bal.SetInPool(ctx, s.Replica, false); err != nil {
				return err
			}
			t.signal(s.Replica, syscall.SIGTERM)
		} else {
			t.freezeSlot(ctx, s.Replica)
			t.signal(s.Replica, syscall.SIGKILL)
			t.noticeDown(s.Replica) // the LB finds out after its health-check delay
		}
	case faults.StepStart:
		return t.startSlot(ctx, s.Replica)
	case faults.StepClientDrop:
		return t.bal.CutFraction(ctx, s.Fraction)
	case faults.StepScale:
		t.mu.Lock()
		n := len(t.slots)
		t.mu.Unlock()
		for slot := n; slot < s.Replicas; slot++ {
			if err := t.startSlot(ctx, slot); err != nil {
				return err
			}
		}
		for slot := s.Replicas; slot < n; slot++ {
			if err := t.bal.SetInPool(ctx, slot, false); err != nil {
				return err
			}
			sig := syscall.SIGKILL
			if s.Graceful {
				sig = syscall.SIGTERM
			} else {
				t.freezeSlot(ctx, slot)
			}
			t.signal(slot, sig)
		}
	case faults.StepPartition:
		if err := t.bal.Partition(ctx, s.Replica, true); err != nil {
			return err
		}
		t.noticeDown(s.Replica)
	case faults.StepHeal:
		if err := t.bal.Partition(ctx, s.Replica, false); err != nil {
			return err
		}
		return t.bal.SetInPool(ctx, s.Replica, true)
	case faults.StepLatency:
		t.mu.Lock()
		t.latency += s.Extra
		d := t.latency
		t.mu.Unlock()
		return t.bal.SetLatency(ctx, d)
	case faults.StepStoreDown, faults.StepStoreUp, faults.StepStoreRestart:
		if t.redis == nil {
			if t.raddr != "" {
				return ErrNotOurs
			}
			return nil // the design has no store to fault
		}
		switch s.Kind {
		case faults.StepStoreDown:
			t.holdStore(true)
			if !redisd.Alive(t.redis.PID()) {
				return nil // it died unasked: down already, and the store watcher says so
			}
			return t.redis.Stop()
		case faults.StepStoreUp:
			defer t.holdStore(false)
			if !redisd.Alive(t.redis.PID()) {
				return nil
			}
			return t.redis.Cont()
		default:
			t.holdStore(true)
			defer t.holdStore(false)
			old := t.redis.PID()
			err := t.redis.Restart(ctx)
			t.mu.Lock()
			delete(t.pids, old)
			t.pids[t.redis.PID()] = true
			t.mu.Unlock()
			return err
		}
	case faults.StepHealthDelay:
		t.mu.Lock()
		t.health = s.Extra
		t.mu.Unlock()
	}
	return nil
}

// holdStore records a scheduled store fault step beginning (held) or ending.
func (t *Topology) holdStore(held bool) {
	t.mu.Lock()
	t.storeGen++
	t.storeHeld = held
	t.mu.Unlock()
}

// StoreFault tells a watcher of the store whether a scheduled fault
// (store-outage, store-restart) holds it down now, and how many store fault
// steps have begun or ended so far: a store that does not answer while
// held, or across a change of gen, is the schedule at work, not a fault.
func (t *Topology) StoreFault() (gen uint64, held bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.storeGen, t.storeHeld
}

// RedisAddr is the Redis the design's replicas use, as given (host:port or
// a redis:// URL); empty when the design uses none.
func (t *Topology) RedisAddr() string { return t.raddr }

// Close kills the LB, every replica and the Redis it started, and waits
// until none of them is alive.
func (t *Topology) Close() error {
	if t.bal != nil {
		t.bal.Close()
	}
	if t.stop != nil {
		t.stop()
	}
	cpuprof.Collect(t.profiled()) // before the kills, which leave no profile
	t.mu.Lock()
	t.closing = true
	groups := slices.Clone(t.groups)
	var all []int
	for p := range t.pids {
		all = append(all, p)
	}
	if t.lbCmd != nil {
		t.lbCmd.Process.Kill() // first: no request reaches a replica being killed
	}
	for _, c := range t.slots {
		if c != nil && c.Process != nil {
			c.Process.Kill()
		}
	}
	t.mu.Unlock()
	for _, p := range all {
		if proc, err := os.FindProcess(p); err == nil {
			proc.Signal(syscall.SIGCONT)
			proc.Kill()
		}
	}
	for _, g := range groups {
		killGroup(g, syscall.SIGCONT)
		killGroup(g, syscall.SIGKILL)
	}
	t.mu.Lock()
	if t.rdb != nil {
		t.rdb.Close()
	}
	t.mu.Unlock()
	if t.redis != nil {
		t.redis.Close()
	}
	for _, g := range groups {
		for i := 0; i < 300 && groupAlive(g); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, p := range all {
		for i := 0; i < 300 && redisd.Alive(p); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.mu.Lock()
	gotmp, sockDir := t.gotmp, t.sockDir
	t.mu.Unlock()
	if gotmp != "" {
		os.RemoveAll(gotmp) // every process that could write there is gone
	}
	if sockDir != "" {
		os.RemoveAll(sockDir)
	}
	return nil
}

// socketPath is the Unix socket a new process in slot serves the LB on
// (replica.ServeOptions.Socket), in a folder of the topology's own: a new
// name for every process. "" for the TypeScript SDK's replica, which the
// LB reaches over TCP.
func (t *Topology) socketPath(slot int) (string, error) {
	if t.d.Server == topology.ServerTSSDK {
		return "", nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sockDir == "" {
		dir, err := tmpdir.Make("stormsim-sock-") // named for this process: the next topology removes the one a SIGKILLed run left
		if err != nil {
			return "", fmt.Errorf("topo: a folder for the replicas' sockets: %w", err)
		}
		t.sockDir = dir
	}
	t.nsock++
	return filepath.Join(t.sockDir, fmt.Sprintf("%d.%d.sock", slot, t.nsock)), nil
}

// profiled lists the processes that write a CPU profile when
// cpuprof.DirEnv is set: the LB and the reference replicas (not an own
// server nor an SDK's, whose processes do not answer SIGUSR1).
func (t *Topology) profiled() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var pids []int
	if t.lbCmd != nil {
		pids = append(pids, t.lbCmd.Process.Pid)
	}
	if t.d.Own != nil || t.d.Server == topology.ServerGoSDK || t.d.Server == topology.ServerTSSDK {
		return pids
	}
	for _, c := range t.slots {
		if c != nil && c.Process != nil && t.pids[c.Process.Pid] {
			pids = append(pids, c.Process.Pid)
		}
	}
	return pids
}

// noticeDown takes a slot out of the LB's pool once the health check would
// notice, after the current health-check delay; until then requests routed
// there fail.
func (t *Topology) noticeDown(slot int) {
	t.mu.Lock()
	d := t.health
	t.mu.Unlock()
	if d <= 0 {
		t.inPool(slot, false)
		return
	}
	time.AfterFunc(d, func() { t.inPool(slot, false) })
}

// ErrStoreUnmeasured is returned by StoreBytes for a design whose store
// stormsim cannot measure: a server stormsim does not build, or the go-sdk
// replica's in-memory store, which does not report its size.
var ErrStoreUnmeasured = errors.New("topo: this design's event store cannot be measured")

// storeClient reads the replicas' /stormsim/store; a replica that does not
// answer within a second is left out of that sample.
var storeClient = &http.Client{Timeout: time.Second}

// StoreBytes is what the design's event store holds now, the live
// counterpart of the simulator's store_bytes: for the in-memory store, the
// sum of what every running replica process reports (a replica that refuses
// the connection, being on its way out, counts 0); for Redis, MEMORY USAGE
// over every event stream (store.StreamBytes), 0 for no store. A replica
// that does not answer in time or answers badly, and a Redis that does not
// answer (stopped by a store-outage fault), are errors: the caller keeps
// its last sample.
func (t *Topology) StoreBytes(ctx context.Context) (int64, error) {
	if t.d.Own != nil {
		return 0, ErrStoreUnmeasured
	}
	switch t.d.Events {
	case topology.EventsMemory:
		t.mu.Lock()
		urls := make([]string, 0, len(t.urls))
		for _, u := range t.urls {
			urls = append(urls, u)
		}
		t.mu.Unlock()
		var total int64
		for _, u := range urls {
			n, err := replicaStoreBytes(ctx, u)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	case topology.EventsRedis:
		t.mu.Lock()
		if t.rdb == nil && !t.closing {
			o, err := store.ParseRedisURL(t.raddr)
			if err != nil {
				t.mu.Unlock()
				return 0, err
			}
			o.ReadTimeout, o.WriteTimeout, o.DialTimeout, o.MaxRetries = time.Second, time.Second, time.Second, -1
			t.rdb = redis.NewClient(o)
		}
		rdb := t.rdb
		t.mu.Unlock()
		if rdb == nil {
			return 0, errors.New("topo: closed")
		}
		return store.StreamBytes(ctx, rdb)
	}
	return 0, nil
}

// replicaStoreBytes asks one replica: 0 when it refuses the connection (it
// is gone, and its store with it), an error when it does not answer in
// time or answers badly.
func replicaStoreBytes(ctx context.Context, base string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+replica.StorePath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := storeClient.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return 0, nil
		}
		return 0, fmt.Errorf("topo: %s: %w", base+replica.StorePath, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0, ErrStoreUnmeasured
	}
	var v struct {
		Bytes int64 `json:"bytes"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("topo: %s: %s", base+replica.StorePath, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return 0, fmt.Errorf("topo: %s: %w", base+replica.StorePath, err)
	}
	return v.Bytes, nil
}
