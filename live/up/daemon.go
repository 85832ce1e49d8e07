package up

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/scenario"
)

// State is what `stormsim up` writes to its state file, kept current:
// `stormsim fault --up FILE` reads Control and Token from it.
type State struct {
	Scenario string `json:"scenario"`
	Design   string `json:"design"`
	PID      int    `json:"pid"` // stormsim up's own
	Endpoint string `json:"endpoint"`
	// Control is the control endpoint (loopback unless --control-listen
	// says otherwise); requests carry Token as a bearer token. Endpoint
	// and Control name the --advertise host when there is one.
	Control string `json:"control"`
	Token   string `json:"token"`
	Logs    string `json:"logs"`
	Redis   *struct {
		PID  int    `json:"pid"`
		Addr string `json:"addr"`
	} `json:"redis,omitempty"`
	// LB is the load balancer's process (`stormsim lb`).
	LB *struct {
		PID int `json:"pid"`
	} `json:"lb,omitempty"`
	Replicas []topo.SlotState `json:"replicas"`
	Stopped  bool             `json:"stopped"`
}

// upRun is one `stormsim up`: its log, state file and control endpoint.
// logMu guards the log; mu guards t, state, printed and stdout; applyMu
// makes fault steps, scheduled or on demand, go one at a time.
type upRun struct {
	stdout    io.Writer
	stderr    io.Writer
	statePath string
	t0        time.Time
	run       context.Context // ends when up stops: the schedule, the faults in progress
	stop      context.CancelFunc
	wg        sync.WaitGroup // faults in progress
	hs        *http.Server
	sc        *scenario.Scenario
	advertise string // the host the state file names, when not the listening one

	logMu sync.Mutex
	log   *os.File

	mu      sync.Mutex
	t       *topo.Topology
	state   State
	printed map[int]int // the pid printed on stdout for each slot

	applyMu sync.Mutex
}

func newUpRun(stdout, stderr io.Writer, logDir, statePath string) (*upRun, error) {
	f, err := os.OpenFile(filepath.Join(logDir, "up.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	tok := make([]byte, 16)
	rand.Read(tok) //nolint:errcheck // crypto/rand.Read never fails
	return &upRun{stdout: stdout, stderr: stderr, statePath: statePath, t0: time.Now(), log: f, printed: map[int]int{},
		state: State{PID: os.Getpid(), Logs: logDir, Token: hex.EncodeToString(tok)}}, nil
}

// logf writes one line to stderr and to up.log, with the time since up
// started.
func (u *upRun) logf(format string, args ...any) {
	line := fmt.Sprintf("up: %.1fs: %s\n", time.Since(u.t0).Seconds(), fmt.Sprintf(format, args...))
	u.logMu.Lock()
	defer u.logMu.Unlock()
	io.WriteString(u.stderr, line) //nolint:errcheck // nowhere better to say it
	u.log.WriteString(line)        //nolint:errcheck // as above
}

func (u *upRun) close() { u.log.Close() }

// changed is the topology's Notify: a slot changed.
func (u *upRun) changed(msg string) {
	u.logf("%s", msg)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.t != nil {
		u.printSlots()
		u.writeState()
	}
}

// setTopology records t's endpoint and Redis, prints every slot and
// writes the state file.
func (u *upRun) setTopology(t *topo.Topology) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.t = t
	u.state.Endpoint = t.Endpoint()
	if u.advertise != "" {
		u.state.Endpoint = t.EndpointAt(u.advertise)
	}
	if pid := t.RedisPID(); pid != 0 {
		u.state.Redis = &struct {
			PID  int    `json:"pid"`
			Addr string `json:"addr"`
		}{pid, t.RedisAddr()}
	}
	u.state.LB = &struct {
		PID int `json:"pid"`
	}{t.LBPID()}
	u.printSlots()
	u.writeState()
}

// printSlots prints "slot N pid P URL" for each slot whose serving process
// has not been printed yet; the caller holds mu.
func (u *upRun) printSlots() {
	for _, s := range u.t.Slots() {
		if s.State == topo.SlotServing && u.printed[s.Slot] != s.PID {
			u.printed[s.Slot] = s.PID
			fmt.Fprintf(u.stdout, "slot %d pid %d %s\n", s.Slot, s.PID, s.URL)
		}
	}
	if f, ok := u.stdout.(*os.File); ok {
		f.Sync()
	}
}

// writeState writes the state file whole, through a rename, so that a
// reader never sees half of it; the caller holds mu. A failure is logged.
func (u *upRun) writeState() {
	if u.t != nil {
		u.state.Replicas = u.t.Slots()
	}
	b, err := json.MarshalIndent(&u.state, "", "  ")
	if err == nil {
		tmp := u.statePath + ".tmp"
		if err = os.WriteFile(tmp, append(b, '\n'), 0o600); err == nil {
			err = os.Rename(tmp, u.statePath)
		}
	}
	if err != nil {
		go u.logf("writing the state file %s: %v", u.statePath, err)
	}
}

// listenControl opens the control endpoint's socket on addr (up's
// --control-listen) before anything starts, so that an address up cannot
// listen on starts nothing; serve serves it.
func listenControl(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("up: --control-listen %s: %w", addr, err)
	}
	return ln, nil
}

// serve serves the control endpoint on ln and returns the context the
// schedule and the faults run under.
func (u *upRun) serve(ctx context.Context, sc *scenario.Scenario, ln net.Listener) context.Context {
	u.sc = sc
	u.run, u.stop = context.WithCancel(ctx)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault", u.faultHandler)
	u.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go u.hs.Serve(ln) //nolint:errcheck // ends at finish
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if u.advertise != "" {
		host = u.advertise
	} else if unspecified(host) {
		u.logf("the control endpoint listens on every interface (%s) and the state file names it so: give --advertise HOST for other machines to reach it", ln.Addr())
	}
	if !isLoopback(ln.Addr()) {
		u.logf("the control endpoint %s is open to the network: the state file's token alone guards it", ln.Addr())
	}
	u.mu.Lock()
	u.state.Control = "http://" + net.JoinHostPort(host, port)
	u.writeState()
	u.mu.Unlock()
	return u.run
}

// unspecified reports whether a listening host means every interface:
// empty, 0.0.0.0 or ::.
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// isLoopback reports whether a listening address is on loopback alone.
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// checkListen refuses a listening address of flag that is not host:port
// with a port number (0 for a free one); the host may be empty (every
// interface), an IP or a name.
func checkListen(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return inputf("up: --%s %q: want host:port (127.0.0.1:0, 0.0.0.0:8080, :8080): %v", flag, addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return inputf("up: --%s %q: the port %q is not a number from 0 to 65535", flag, addr, port)
	}
	if strings.ContainsAny(host, "/ ") {
		return inputf("up: --%s %q: the host %q is not a host name or an IP address", flag, addr, host)
	}
	return nil
}

// checkAdvertise refuses an --advertise that is not a bare host (a URL,
// host:port); empty means none. The ports are those up listens on.
func checkAdvertise(host string) error {
	switch {
	case host == "":
		return nil
	case strings.Contains(host, "://") || strings.ContainsAny(host, "/ ?#@"):
		return inputf("up: --advertise %q: want a host name or an IP address, not a URL (the ports are those of --listen and --control-listen)", host)
	case strings.Contains(host, ":") && net.ParseIP(host) == nil:
		return inputf("up: --advertise %q: want a host alone, without a port (the ports are those of --listen and --control-listen)", host)
	}
	return nil
}

// apply carries out one fault step with the topology's own code, the one a
// scenario run uses (topo.Apply), and logs it under label.
func (u *upRun) apply(ctx context.Context, s faults.Step, label string) error {
	u.applyMu.Lock()
	defer u.applyMu.Unlock()
	err := u.t.Apply(ctx, s)
	if s.Kind.Target() == faults.TargetStore && u.t.RedisAddr() == "" {
		u.logf("%s: %s: nothing done, the design uses no Redis", label, s.Describe())
		return nil
	}
	if err != nil {
		u.logf("%s: %s: %v", label, s.Describe(), err)
	} else {
		u.logf("%s: %s", label, s.Describe())
	}
	u.mu.Lock()
	u.writeState()
	u.mu.Unlock()
	return err
}

// FaultAnswer is the control endpoint's answer to a fault.
type FaultAnswer struct {
	Applied []string `json:"applied,omitempty"` // the steps done before the answer
	Later   []string `json:"later,omitempty"`   // the steps still to come, with their delay
	Error   string   `json:"error,omitempty"`
}

// faultHandler applies one fault on demand: its JSON is a fault block of
// scenarios.toml ({"kind": "restart", "replica": 1, …}, durations in
// nanoseconds), decoded into the registered kind and validated as a
// scenario's is. The steps due now are applied before the answer, the rest
// at their times.
func (u *upRun) faultHandler(w http.ResponseWriter, r *http.Request) {
	answer := func(code int, a FaultAnswer) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(a) //nolint:errcheck // the client reads what arrives
	}
	if r.Header.Get("Authorization") != "Bearer "+u.state.Token {
		answer(http.StatusUnauthorized, FaultAnswer{Error: "want the token of the state file"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		answer(http.StatusBadRequest, FaultAnswer{Error: err.Error()})
		return
	}
	fc := faults.Context{Replicas: len(u.t.Slots()), Duration: math.MaxInt64}
	f, err := decodeFault(body, fc)
	if err != nil {
		answer(http.StatusBadRequest, FaultAnswer{Error: err.Error()})
		return
	}
	if k := f.Kind(); faults.TouchesStore(f, fc) && u.t.RedisAddr() == "" {
		answer(http.StatusBadRequest, FaultAnswer{Error: fmt.Sprintf("fault %s: design %s uses no Redis: there is no store to fault", k, u.state.Design)})
		return
	}
	steps := f.Steps(fc)
	start := time.Now()
	var a FaultAnswer
	i := 0
	for ; i < len(steps) && steps[i].At <= 0; i++ {
		if err := u.apply(u.run, steps[i], "on demand"); err != nil {
			a.Error = fmt.Sprintf("%s: %v", steps[i].Describe(), err)
			code := http.StatusInternalServerError
			if errors.Is(err, topo.ErrNotOurs) {
				code = http.StatusConflict
			}
			answer(code, a)
			return
		}
		a.Applied = append(a.Applied, steps[i].Describe())
	}
	later := steps[i:]
	for _, s := range later {
		a.Later = append(a.Later, fmt.Sprintf("in %v: %s", s.At, s.Describe()))
	}
	if len(later) > 0 {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.play(u.run, later, start, "on demand, +")
		}()
	}
	answer(http.StatusOK, a)
}

// decodeFault reads one fault block as JSON into its registered kind,
// refusing unknown keys, and validates it in fc.
func decodeFault(body []byte, fc faults.Context) (faults.Fault, error) {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(body, &k); err != nil {
		return nil, fmt.Errorf("fault: %w", err)
	}
	f, err := faults.New(k.Kind)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("fault %s: %w", k.Kind, err)
	}
	if errs := f.Validate(fc); len(errs) > 0 {
		return nil, fmt.Errorf("fault %s: %w", k.Kind, errors.Join(errs...))
	}
	return f, nil
}

// finish stops the schedule and the faults in progress and the control
// endpoint, reads every replica's counters, stops the topology, then writes
// the counters to counts.json in the logs folder and marks the state file
// stopped.
func (u *upRun) finish(t *topo.Topology) error {
	u.stop()
	u.wg.Wait()
	u.hs.Close()
	u.applyMu.Lock() // a step in progress ends first
	defer u.applyMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var c runner.UpCounts
	c.Counts, c.Missing = t.Counts(ctx)
	if c.Counts == nil && c.Missing == nil {
		c.NotReconcilable = "this design's replicas keep no counters stormsim can read (the go-sdk replica, a server you bring)"
	}
	t.Close()
	// Written once every replica is gone and its production log complete,
	// whole and renamed into place: a merge --wait that sees the file reads
	// all of it and every log.
	b, _ := json.MarshalIndent(&c, "", "  ")
	path := filepath.Join(u.state.Logs, runner.UpCountsFile)
	if err := os.WriteFile(path+".tmp", append(b, '\n'), 0o644); err != nil {
		u.logf("writing the counters: %v", err)
	} else if err := os.Rename(path+".tmp", path); err != nil {
		u.logf("writing the counters: %v", err)
	}
	u.mu.Lock()
	u.state.Stopped = true
	u.writeState()
	u.mu.Unlock()
	u.logf("stopped: every process stormsim started is gone; production logs and counters in %s", u.state.Logs)
	return nil
}
