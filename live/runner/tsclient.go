package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/live/tsdk"
	"github.com/stormsim/stormsim/workload"
)

// tsClient is a virtual client of flavour client.impl = "ts-sdk": an
// official MCP TypeScript SDK client (Client over
// StreamableHTTPClientTransport) in the design's Node process
// (node/clients.mjs), which makes every protocol decision itself. stormsim
// decides when it calls (the same draws as a native client of the same id)
// and applies the call timeout; everything the SDK sends goes through
// stormsim's recording proxy, which stamps each request and response,
// carries out the drops and writes the history with the go-sdk clients'
// recorder (sdkClient's RoundTrip). The Node process reports progress
// notifications and call outcomes as JSON lines; Go stamps their times when
// they arrive.
type tsClient struct {
	*sdkClient
	proc *tsProc
	done chan tsMsg // the outcome of the call in flight
}

// tsMsg is one line of node/clients.mjs.
type tsMsg struct {
	Client   int32   `json:"client"`
	Seq      int32   `json:"seq"`
	Progress float64 `json:"progress"`
	Done     bool    `json:"done"`
	Error    *string `json:"error"`
	Status   *int    `json:"status"`
	Code     *int    `json:"code"`
	IsError  bool    `json:"is_error"`
	Closed   bool    `json:"closed"`
	Ready    bool    `json:"ready"`
}

// tsProc is a design's Node process of ts-sdk clients and the recording
// proxy in front of them. mu guards clients and the writes to stdin.
type tsProc struct {
	d      *designRun
	cmd    *exec.Cmd
	in     io.WriteCloser
	ln     net.Listener
	hs     *http.Server
	exited chan struct{}
	ready  chan struct{} // closed when the Node process said it is ready

	mu      sync.Mutex
	clients map[int32]*tsClient
	closed  map[int32]chan struct{}
}

// tsHeapMiB is the ts-sdk clients' Node heap limit (--max-old-space-size):
// what the server sends reaches Node only through the proxy, within the
// scenario's limits, and the heap is bounded besides. A server past it
// makes Node fail with a heap error, which ends the run's ts-sdk clients,
// not the machine.
const tsHeapMiB = 512

// startTSProc starts node/clients.mjs and the proxy.
func startTSProc(d *designRun) (*tsProc, error) {
	node, script, err := tsdk.Program("clients.mjs")
	if err != nil {
		return nil, fmt.Errorf("client.impl = %q: %w", clients.ImplTSSDK, err)
	}
	p := &tsProc{d: d, clients: map[int32]*tsClient{}, closed: map[int32]chan struct{}{}, exited: make(chan struct{}), ready: make(chan struct{})}
	p.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.hs = &http.Server{Handler: http.HandlerFunc(p.proxy), ReadHeaderTimeout: 10 * time.Second}
	go p.hs.Serve(p.ln) //nolint:errcheck // ends with close
	p.cmd = exec.Command(node, "--max-old-space-size="+strconv.Itoa(tsHeapMiB), script)
	p.cmd.Stderr = os.Stderr
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		p.hs.Close()
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		p.hs.Close()
		return nil, err
	}
	if err := child.Start(p.cmd); err != nil {
		p.hs.Close()
		return nil, fmt.Errorf("starting the ts-sdk clients: %w", err)
	}
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m tsMsg
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if m.Ready {
				close(p.ready)
				continue
			}
			p.deliver(m)
		}
		p.cmd.Wait() //nolint:errcheck // its end is what exited says
	}()
	// The run's clock starts once Node has loaded the SDK: its start-up
	// (a second or more on a loaded machine) is not the clients' time.
	select {
	case <-p.ready:
	case <-p.exited:
		p.hs.Close()
		return nil, errors.New("the ts-sdk clients' Node process exited before it was ready")
	case <-time.After(time.Minute):
		p.close()
		return nil, errors.New("the ts-sdk clients' Node process was not ready after a minute")
	}
	return p, nil
}

// deliver hands a line to its client.
func (p *tsProc) deliver(m tsMsg) {
	p.mu.Lock()
	c := p.clients[m.Client]
	ch := p.closed[m.Client]
	if m.Closed {
		delete(p.closed, m.Client)
	}
	p.mu.Unlock()
	switch {
	case m.Closed:
		if ch != nil {
			close(ch)
		}
	case c == nil:
	case m.Done:
		select {
		case c.done <- m:
		default: // a call already given up on: its outcome was recorded
		}
	default:
		c.receipt(m.Seq, m.Progress)
	}
}

// send writes one command line.
func (p *tsProc) send(m map[string]any) error {
	b, _ := json.Marshal(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.in.Write(append(b, '\n'))
	return err
}

// close ends the Node process (its stdin closes, it exits) and the proxy.
func (p *tsProc) close() {
	p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck // it may be gone
		<-p.exited
	}
	p.hs.Close()
}

// proxy forwards the SDK's request for client /c/<id>/ to the design's
// endpoint through the client's recorder, and streams the answer back. A
// drop cancels the upstream request; the proxy then aborts the connection
// to Node, so the SDK sees the network fail, as it would.
func (p *tsProc) proxy(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/c/")
	id, err := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
	p.mu.Lock()
	c := p.clients[int32(id)]
	p.mu.Unlock()
	if !ok || err != nil || c == nil {
		http.Error(w, "no such client", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20)) // the SDK's own request
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	// The proxy follows the redirects within the origin itself, each hop
	// a request of the history, and refuses the others: Node never sees
	// a Location to follow.
	resp, refused, err := p.d.guard.follow(p.d.target, func(u *url.URL) (*http.Response, error) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		out.Header = r.Header.Clone()
		out.Header.Del("Accept-Encoding") // a body Node would decompress without a limit
		return c.RoundTrip(out)
	}, nil)
	if err != nil {
		panic(http.ErrAbortHandler) // the SDK sees a network error
	}
	if refused == nil && resp.Header.Get("Content-Encoding") != "" && resp.Header.Get("Content-Encoding") != "identity" {
		refused = errors.New(p.d.guard.hit(limBody) + ": a compressed body, which Node would decompress without a limit")
	}
	if refused != nil {
		drain(resp)
		http.Error(w, refused.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	var stream io.Reader = resp.Body
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		checked := p.d.guard.checkSSE(resp.Body, c.streamLimits())
		defer checked.Close()
		stream = checked
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if rerr, werr := p.d.guard.copyClampingRetry(w, stream); rerr != nil && werr == nil {
		panic(http.ErrAbortHandler) // a limit, or the server's stream broke: the SDK sees the network fail
	}
}

func newTSClient(d *designRun, id int32, tr http.RoundTripper, p *tsProc) *tsClient {
	s := &sdkClient{id: id, d: d, tr: tr, seq: -1, cur: -1, why: map[int]history.DropCause{}, lastStream: map[int32]int{}}
	workload.Seed(&s.work, &s.drops, d.sc.Seed, int(id))
	if d.own != nil {
		s.progs = map[int32]*progressIndex{}
	}
	c := &tsClient{sdkClient: s, proc: p, done: make(chan tsMsg, 1)}
	p.mu.Lock()
	p.clients[id] = c
	p.mu.Unlock()
	return c
}

// run is the client's life: arrive, call until the scenario ends, close.
func (c *tsClient) run(ctx context.Context, arrival int64) {
	if !sleepUntil(ctx, c.d, arrival) {
		return
	}
	if mean := int64(c.d.sc.Workload.DropEvery); mean > 0 {
		c.nextDrop = arrival + workload.Exp(&c.drops, mean)
	}
	w := &c.d.sc.Workload
	open := false
	defer func() {
		if !open {
			return
		}
		// The SDK's DELETE, as a go-sdk client's Close sends it; the run
		// waits at most a second for it.
		ch := make(chan struct{})
		c.proc.mu.Lock()
		c.proc.closed[c.id] = ch
		c.proc.mu.Unlock()
		if c.proc.send(map[string]any{"op": "close", "client": c.id}) == nil {
			select {
			case <-ch:
			case <-time.After(time.Second):
			}
		}
	}()
	for seq := int32(0); ctx.Err() == nil; seq++ {
		if c.now() >= int64(c.d.sc.Duration) || (w.CallsPerClient > 0 && int(seq) >= w.CallsPerClient) {
			return
		}
		n, think := workload.Draw(w, &c.work)
		open = true
		ok := c.call(ctx, seq, n)
		if ctx.Err() != nil || !ok && !w.ContinueAfterFailure {
			return
		}
		if !sleepUntil(ctx, c.d, c.now()+think) {
			return
		}
	}
}

// call makes call seq of n events through the SDK; false when it failed.
func (c *tsClient) call(ctx context.Context, seq, n int32) bool {
	c.begin(seq, n)
	callCtx, deadline := ctx, int64(-1)
	if to := c.d.d.Client.CallTimeout; to > 0 {
		c.mu.Lock()
		deadline = c.hist.Calls[len(c.hist.Calls)-1].Start + int64(to)
		c.mu.Unlock()
		var cancel context.CancelFunc
		callCtx, cancel = context.WithDeadline(ctx, c.d.t0.Add(time.Duration(deadline)))
		defer cancel()
	}
	callCtx, stop := context.WithCancel(callCtx) // a limit of the proxy's ends the call (failOn)
	defer stop()
	c.mu.Lock()
	c.stopCall = stop
	c.mu.Unlock()
	name, args := "stream", any(map[string]any{"events": n - c.d.resultOnly, "interval_ms": c.d.intervalMS, "bytes": c.d.sc.Workload.EventBytes})
	if o := c.d.own; o != nil {
		name, args = c.d.tool, o.ToolArguments(int(n), c.d.intervalMS, c.d.sc.Workload.EventBytes)
	}
	endpoint := "http://" + c.proc.ln.Addr().String() + "/c/" + strconv.Itoa(int(c.id)) + "/mcp"
	// The application replaces its session (client.app_reconnect): the
	// Node program closes the old client, with a DELETE unless the server
	// said the session is gone, and connects a new one, whose initialize
	// the recorder counts as a reconnect.
	renew := c.renewAt >= 0 && c.now() >= c.renewAt
	if renew {
		c.renewAt = -1
	}
	c.mu.Lock()
	c.renewing = renew
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.renewing = false
		c.mu.Unlock()
	}()
	var m tsMsg
	err := c.proc.send(map[string]any{"op": "call", "client": c.id, "seq": seq, "endpoint": endpoint,
		"name": name, "arguments": args, "token": history.Token(c.id, seq, 0), "renew": renew})
	timedOut, limit := false, ""
	// A late outcome of an earlier call given up on is not this call's.
	mine := func(got tsMsg) bool { m = got; return got.Seq == seq }
	if err == nil {
	wait:
		select {
		case got := <-c.done:
			if !mine(got) {
				goto wait
			}
		case <-callCtx.Done():
			if ctx.Err() != nil {
				c.finish(-1, 0, clients.CauseNone) // pending
				return true
			}
			// The call timeout, or a limit the proxy's check hit: the
			// SDK's request is aborted, and its outcome is the timeout's
			// or the limit's whatever the SDK says.
			c.mu.Lock()
			limit = c.overLimit
			c.mu.Unlock()
			timedOut = limit == ""
			c.proc.send(map[string]any{"op": "cancel", "client": c.id, "seq": seq}) //nolint:errcheck // a dead process ends every call
		after:
			select {
			case got := <-c.done:
				if !mine(got) {
					goto after
				}
			case <-ctx.Done():
			case <-c.proc.exited:
			}
		case <-c.proc.exited:
			err = errors.New("the ts-sdk clients' Node process exited")
		}
	}
	c.mu.Lock()
	c.stopCall = nil
	c.mu.Unlock()
	if ctx.Err() != nil && !timedOut && limit == "" {
		c.finish(-1, 0, clients.CauseNone)
		return true
	}
	outcome, cause, msg := c.outcomeOf(timedOut, err, m, deadline)
	if limit != "" {
		outcome, cause, msg = clients.Failed, clients.CauseAbandoned, limit
	}
	end := c.now()
	if timedOut {
		end = deadline
	}
	c.settle(end, outcome, cause, msg)
	return outcome == clients.Completed
}

// outcomeOf is how a ts-sdk client's call ended: by the call timeout (its
// stream's drop is the timeout's), by the Node process's failure, or as
// the SDK answered (a result, a tool error, a JSON-RPC or HTTP error, a
// resume answered purged).
func (c *tsClient) outcomeOf(timedOut bool, err error, m tsMsg, deadline int64) (outcome clients.Outcome, cause clients.Cause, msg string) {
	outcome, cause = clients.Completed, clients.CauseNone
	switch {
	case timedOut:
		outcome, cause = clients.Failed, clients.CauseAbandoned
		c.mu.Lock()
		if k := len(c.streams); k > 0 {
			if r := &c.hist.Requests[c.streams[k-1]]; r.Closed == 0 || r.Closed >= deadline {
				c.why[c.streams[k-1]] = history.DropTimeout
			}
		}
		c.mu.Unlock()
		msg = "call timeout"
	case err != nil:
		outcome, cause, msg = clients.Failed, clients.CauseAbandoned, err.Error()
	case m.Error == nil && !m.IsError:
	case m.Error == nil:
		outcome, cause = clients.Failed, clients.CauseError
	default:
		outcome, cause, msg = clients.Failed, clients.CauseAbandoned, *m.Error
		if m.Status != nil {
			msg = fmt.Sprintf("HTTP %d: %s", *m.Status, msg)
		}
		// A JSON-RPC error from the server carries a code the SDK keeps
		// (McpError); its own timeouts and lost connections carry its
		// RequestTimeout (-32001) and ConnectionClosed (-32000).
		if m.Code != nil && *m.Code != -32001 && *m.Code != -32000 {
			cause = clients.CauseError
		}
		if c.lastResumePurged() {
			cause = clients.CausePurged
		}
	}
	return outcome, cause, msg
}

// receipt records a progress notification of call seq as the receipt of
// its index, on the call's latest stream (sdkClient.receive).
func (c *tsClient) receipt(seq int32, progress float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.receive(seq, 0, progress)
}

// streamLimits are the proxy's checks of a stream of the client's current
// call: a limit the stream hits, or limits.events_per_call, fails the call
// with the limit's cause (failOn), as a native client's call fails.
func (c *tsClient) streamLimits() sseChecks {
	c.mu.Lock()
	seq := c.seq
	c.mu.Unlock()
	return sseChecks{
		limit: func(k int) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if seq == c.seq {
				c.failOn(k)
			}
		},
		event: func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.limitEvents(seq)
		},
	}
}
