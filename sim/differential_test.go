package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/workload"
)

// The differential test of the server's rules: each row is a state and a
// request, put through the simulator's server model (a harness sets its
// state) and through a real replica over HTTP (real requests bring it to
// the same state), and both must give the same decision: status, purged or
// not, and the retry hint. The four places where the engines once
// disagreed are rows of their own, named "disagreement: …".

// designs are the designs of the table, as [design.x] blocks.
var diffDesigns = map[string]string{
	"memory":    `era = "2025-11-25"` + "\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n",
	"redis":     `era = "2025-11-25"` + "\nmode = \"stateful\"\nsessions = \"shared\"\nevents = \"redis\"\n",
	"nostore":   `era = "2025-06-18"` + "\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"none\"\n",
	"stateless": `era = "2026-07-28"` + "\nmode = \"stateless\"\nsessions = \"none\"\nevents = \"none\"\n",
	"rate": `era = "2025-11-25"` + "\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n" +
		"[design.x.replica]\nmax_conn_rate = 1.0\nhint_on_503 = true\nretry_hint = \"3s\"\nretry_hint_spread = [2.0, 2.0]\n",
	"bucket": `era = "2025-11-25"` + "\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n" +
		"[design.x.replica]\nadmit_bucket = 1\nadmit_interval = \"10s\"\n",
	"queue": `era = "2025-11-25"` + "\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\n" +
		"[design.x.replica]\naccept_rate = 1.0\naccept_queue = 1\nhint_on_503 = true\nretry_hint = \"3s\"\n",
}

// state is what the server knows before the request.
type state int

const (
	fresh          state = iota // nothing: the client has no session
	session                     // the client's session exists here
	noHeader                    // the server keeps sessions; the request carries no id
	unknownSession              // the request names a session the server does not know
	doneStream                  // a call's events after 1 are stored and no connection holds it
	purgedStream                // a call ended and its events after 1 are gone
	claimedStream               // a call runs and its own stream is open; resume after 1
	claimedPurged               // the same, with its events after 1 gone
	elsewhere                   // the resumed stream is not this process's
	draining                    // the replica drains
	storeDown                   // Redis does not answer
)

// diffNow is the time of every request: 1.5 s into the run (the replica's
// clock says 1.5 s after the Unix epoch, where its windows start).
const diffNow = int64(1500 * time.Millisecond)

type outcome struct {
	Status int
	Purged bool
	Hint   time.Duration // the retry hint: the simulator's as its client reads it, the replica's Retry-After
}

type diffCase struct {
	name   string
	design string
	state  state
	req    clients.Req
	twice  bool // send the request twice; the second answer counts
	want   outcome
}

var diffCases = []diffCase{
	// every era before 2026-07-28 answers an initialize; that one removed
	// it, and answers it 404 (method not found), and server/discover
	{"initialize 2025-11-25 memory", "memory", fresh, clients.ReqInitialize, false, outcome{Status: 200}},
	{"initialize 2025-06-18 no store", "nostore", fresh, clients.ReqInitialize, false, outcome{Status: 200}},
	{"initialize 2026-07-28 stateless 404", "stateless", fresh, clients.ReqInitialize, false, outcome{Status: 404}},
	{"initialize redis shared", "redis", fresh, clients.ReqInitialize, false, outcome{Status: 200}},
	{"discover 2026-07-28 stateless", "stateless", fresh, clients.ReqDiscover, false, outcome{Status: 200}},
	{"discover 2026-07-28 draining 503", "stateless", draining, clients.ReqDiscover, false, outcome{Status: 503}},
	{"call 2026-07-28 stateless", "stateless", fresh, clients.ReqCall, false, outcome{Status: 200}},
	// the initialized notification, gone with initialize in 2026-07-28
	{"initialized 202", "memory", session, clients.ReqInitialized, false, outcome{Status: 202}},
	{"initialized 2026-07-28 stateless 404", "stateless", fresh, clients.ReqInitialized, false, outcome{Status: 404}},
	// calls and the session check
	{"call 200", "memory", session, clients.ReqCall, false, outcome{Status: 200}},
	{"call without a session id 400", "memory", noHeader, clients.ReqCall, false, outcome{Status: 400}},
	{"call with an unknown session 404", "memory", unknownSession, clients.ReqCall, false, outcome{Status: 404}},
	{"call 2025-06-18 unknown session 404", "nostore", unknownSession, clients.ReqCall, false, outcome{Status: 404}},
	// the standalone GET and DELETE
	{"standalone GET 200", "memory", session, clients.ReqStandalone, false, outcome{Status: 200}},
	{"DELETE 200", "memory", session, clients.ReqDelete, false, outcome{Status: 200}},
	{"DELETE stateless 405", "stateless", fresh, clients.ReqDelete, false, outcome{Status: 405}},
	// resumes, by store
	{"resume 200 memory", "memory", doneStream, clients.ReqResume, false, outcome{Status: 200}},
	{"resume 200 redis", "redis", doneStream, clients.ReqResume, false, outcome{Status: 200}},
	{"resume without a store 400", "nostore", elsewhere, clients.ReqResume, false, outcome{Status: 400}},
	{"resume of a purged stream 400 purged", "memory", purgedStream, clients.ReqResume, false, outcome{Status: 400, Purged: true}},
	{"resume of another process's stream 400", "memory", elsewhere, clients.ReqResume, false, outcome{Status: 400}},
	{"resume of a claimed stream 409", "memory", claimedStream, clients.ReqResume, false, outcome{Status: 409}},
	{"resume of a claimed stream 409 redis", "redis", claimedStream, clients.ReqResume, false, outcome{Status: 409}},
	// drain and the store
	{"drain: initialize 503", "memory", draining, clients.ReqInitialize, false, outcome{Status: 503}},
	{"store down: session check 503", "redis", storeDown, clients.ReqInitialized, false, outcome{Status: 503}},
	// the four former disagreements
	{"disagreement: precedence, a second resume of a purged stream is 409", "memory", claimedPurged, clients.ReqResume, false, outcome{Status: 409}},
	{"disagreement: hint spread, [2, 2] doubles the hint in both", "rate", fresh, clients.ReqInitialize, true, outcome{Status: 503, Hint: 6 * time.Second}},
	{"disagreement: admission, the bucket sends the rest to the next window", "bucket", fresh, clients.ReqInitialize, true, outcome{Status: 503, Hint: 9 * time.Second}},
	{"disagreement: admission, a full accept queue", "queue", fresh, clients.ReqInitialize, true, outcome{Status: 503, Hint: 3 * time.Second}},
	{"disagreement: stateless is one field, standalone GET 405", "stateless", fresh, clients.ReqStandalone, false, outcome{Status: 405}},
	{"disagreement: stateless is one field, resume 405", "stateless", elsewhere, clients.ReqResume, false, outcome{Status: 405}},
}

// TestDifferentialRules puts every row through both engines.
func TestDifferentialRules(t *testing.T) {
	t.Parallel()
	rs := startDiffRedis(t)
	for _, dc := range diffCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			sim := simDecide(t, dc, nil)
			live := liveDecide(t, dc, rs)
			if sim != live {
				t.Errorf("the engines disagree: simulator %+v, live replica %+v", sim, live)
			}
			if live != dc.want {
				t.Errorf("both say %+v (sim %+v), want %+v", live, sim, dc.want)
			}
		})
	}
}

// TestDifferentialCatchesMutation changes one rule in the simulator alone
// (the precedence it had: a purged stream answers 400 before its claim is
// looked at) and requires the differential to see it.
func TestDifferentialCatchesMutation(t *testing.T) {
	t.Parallel()
	old := func(r clients.Req, a protocol.Answer) protocol.Answer {
		if r == clients.ReqResume && a.Status == 409 {
			return protocol.Answer{Status: 400, Purged: true}
		}
		return a
	}
	var dc diffCase
	for _, c := range diffCases {
		if strings.HasPrefix(c.name, "disagreement: precedence") {
			dc = c
		}
	}
	if sim, live := simDecide(t, dc, old), liveDecide(t, dc, nil); sim == live {
		t.Fatalf("with the old precedence in the simulator both engines say %+v: the differential cannot see the rule", sim)
	}
}

// TestZeroHintSpreadRefused is the fourth disagreement's other half: the
// loader refuses [0, 0], which the simulator read as a hint of 0 and the
// replica as the full hint.
func TestZeroHintSpreadRefused(t *testing.T) {
	t.Parallel()
	src := "[design.x]\n" + diffDesigns["memory"] + "[design.x.replica]\nretry_hint_spread = [0.0, 0.0]\n" + diffScenario
	_, err := scenario.Parse("differential.toml", []byte(src), &scenario.Options{Target: "d"})
	if err == nil || !strings.Contains(err.Error(), "differential.toml: design.x.replica.retry_hint_spread") {
		t.Fatalf("err = %v, want one naming differential.toml and design.x.replica.retry_hint_spread", err)
	}
}

const diffScenario = "[scenario.d]\ndesigns = [\"x\"]\nreplicas = 1\nduration = \"2s\"\ndrain = \"0s\"\nstep = \"1s\"\n" +
	"[scenario.d.workload]\nclients = 2\nevent_rate = 50.0\nevent_bytes = 10\n[scenario.d.store]\nmemory_cap_bytes = 8000\n"

// diffDesign loads the row's design as the scenario loader gives it.
func diffDesign(t *testing.T, name string) (*scenario.Scenario, *scenario.Design) {
	t.Helper()
	src := "[design.x]\n" + diffDesigns[name] + diffScenario
	f, err := scenario.Parse("differential.toml", []byte(src), &scenario.Options{Target: "d"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario("d")
	if err != nil {
		t.Fatal(err)
	}
	return sc, &sc.Designs[0]
}

// simDecide runs a row through the simulator's server model: the harness
// puts a finished engine in the row's state, then the request goes through
// the front (routing, admission, accept queue) and the handler.
func simDecide(t *testing.T, dc diffCase, mutate func(clients.Req, protocol.Answer) protocol.Answer) outcome {
	t.Helper()
	sc, d := diffDesign(t, dc.design)
	e, err := newEngine(t.Context(), sc, d, workload.Arrivals(sc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.run()
	e.mutate = mutate
	p := e.simState(dc.state)
	c := &e.clients[0]
	var in clients.Input
	for range 1 + btoi(dc.twice) {
		c.req = dc.req
		q, _, refused := e.front(c)
		if q < 0 {
			in = response(refused)
			continue
		}
		if q != p {
			t.Fatalf("the request went to process %d, not %d", q, p)
		}
		in, _ = e.serveOn(0, c, p)
	}
	return outcome{Status: in.Status, Purged: in.Purged, Hint: in.RetryHint}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// simState puts the engine in state st at diffNow, with client 0 asking
// and client 1 the other connection, and returns the serving process.
func (e *engine) simState(st state) int32 {
	e.now, e.storeDown, e.producing, e.gaps = diffNow, false, 0, nil
	old := e.slots[0]
	p := e.newProc(0)
	e.slots[0], e.lbOut[0], e.partitioned[0] = p, false, false
	c := &e.clients[0]
	c.brain.Init(&e.d.Client, e.rng)
	c.conn, c.call.attempt, c.sessProc, c.sessOK, c.reqCursor = conn{}, -1, -1, false, 1
	if st == fresh || st == noHeader || st == draining {
		if st == draining {
			e.procs[p].state = procDraining
		}
		return p
	}
	c.brain.Step(clients.Input{Kind: clients.InStartCall})
	c.brain.Step(clients.Input{Kind: clients.InResponse, Status: 200, Session: true})
	if st == unknownSession {
		return p
	}
	c.sessProc, c.sessOK, c.sessEpoch = p, true, e.storeEpoch
	on := p
	switch st {
	case session:
		return p
	case storeDown:
		e.storeDown = true
		return p
	case elsewhere:
		on = old // the stream's process is the one the run ended with
	}
	// A call that runs: five events produced 100 ms in, all of them in the
	// store. (The engine's queue is not run, so the harness starts no call
	// that would have ended by now.)
	e.now = diffNow - int64(100*time.Millisecond)
	c.call.e = 1000
	e.startAttempt(0, c, on)
	e.now = diffNow
	a := &e.attempts[c.call.attempt]
	a.gone = st == purgedStream || st == claimedPurged
	if st == claimedStream || st == claimedPurged {
		a.follower = 1 // another connection follows it
	}
	return p
}

// diffRedis is the redis-server of the Redis rows, one for the test.
type diffRedis struct {
	srv *redisd.Server
}

func startDiffRedis(t *testing.T) *diffRedis {
	t.Helper()
	srv, err := redisd.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &diffRedis{srv: srv}
}

// liveReplica is a real replica of the row's design behind httptest.
type liveReplica struct {
	t    *testing.T
	srv  *replica.Server
	url  string
	sess string
	last string // the Last-Event-ID a resume sends
	// redis is the replica's redis-server, for the Redis rows.
	redis *diffRedis
	// rev: the design's era is 2026-07-28's (protocol.Caps.Discover), so
	// a POST carries the revision's headers and _meta.
	rev bool
	era string
}

// liveDecide brings a real replica to the row's state with real requests
// and sends the row's request over HTTP.
func liveDecide(t *testing.T, dc diffCase, rs *diffRedis) outcome {
	t.Helper()
	_, d := diffDesign(t, dc.design)
	l := startLive(t, d, rs, dc.state == storeDown)
	l.liveState(dc.state)
	var o outcome
	for range 1 + btoi(dc.twice) {
		o = l.send(dc.req)
	}
	return o
}

func startLive(t *testing.T, d *scenario.Design, rs *diffRedis, private bool) *liveReplica {
	t.Helper()
	cfg := replica.Config{Sessions: d.Sessions, Events: d.Events, Era: d.Era, Replica: d.Replica,
		Clock: func() time.Time { return time.Unix(0, diffNow) }}
	switch {
	case d.Events == "memory":
		cfg.Store = store.NewMemory(d.Store.MemoryCapBytes, int64(d.Store.MemoryOverheadBytes))
	case d.Events == "redis":
		if private { // a row that stops its Redis gets one of its own
			rs = startDiffRedis(t)
		}
		rdb := redis.NewClient(&redis.Options{Addr: rs.srv.Addr(), ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		r := store.NewRedis(rdb, &store.RedisOptions{SessionTTL: time.Minute})
		cfg.Store, cfg.Shared = r, r
	}
	s := replica.New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Kill(); ts.Close() })
	return &liveReplica{t: t, srv: s, url: ts.URL + "/mcp", redis: rs, rev: protocol.CapsOf(d.Era, d.Sessions, d.Events).Discover, era: d.Era}
}

// liveState brings the replica to st with real requests.
func (l *liveReplica) liveState(st state) {
	switch st {
	case fresh, noHeader:
		return
	case draining:
		l.srv.Drain() // nothing runs: it returns at once
		return
	case unknownSession:
		l.sess = "0123456789abcdef0123456789abcdef"
		return
	}
	if !l.rev { // the revision has no initialize and no session
		l.sess = l.initialize()
	}
	switch st {
	case storeDown:
		if err := l.redis.srv.Stop(); err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() { l.redis.srv.Cont() })
	case elsewhere:
		l.last = "feedfacefeedface_1"
	case doneStream, purgedStream:
		n, size := 3, 10
		if st == purgedStream {
			n, size = 10, 2000 // ten events of 2 kB overflow the 8 kB store
		}
		body, stream := l.call(n, size, 2)
		io.Copy(io.Discard, body) // to the result: the stream is released
		body.Close()
		l.last = stream + "_1"
	case claimedStream, claimedPurged:
		size := 10
		if st == claimedPurged {
			size = 2000
		}
		body, stream := l.call(1000, size, 2)
		l.t.Cleanup(func() { body.Close() })
		readIDs(l.t, bufio.NewReader(body), 8) // the stream stays open: it holds the claim
		l.last = stream + "_1"
	}
}

// request sends one HTTP request with the session, if any.
func (l *liveReplica) request(method, body string, hdr map[string]string) *http.Response {
	l.t.Helper()
	req, err := http.NewRequest(method, l.url, strings.NewReader(body))
	if err != nil {
		l.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if l.sess != "" {
		req.Header.Set("Mcp-Session-Id", l.sess)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func (l *liveReplica) initialize() string {
	resp := l.request("POST", initBody, nil)
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		l.t.Fatalf("initialize: %d", resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// call starts a stream call and returns its open body and stream id.
func (l *liveReplica) call(events, bytes, intervalMS int) (io.ReadCloser, string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stream","arguments":{"events":%d,"interval_ms":%d,"bytes":%d},"_meta":{"progressToken":"t"}}}`, events, intervalMS, bytes)
	resp := l.request("POST", body, nil)
	if resp.StatusCode != 200 {
		resp.Body.Close()
		l.t.Fatalf("call: %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	ids := readIDs(l.t, br, 1)
	stream, _, _ := strings.Cut(ids[0], "_")
	return struct {
		io.Reader
		io.Closer
	}{br, resp.Body}, stream
}

// readIDs reads SSE lines until n event ids went by.
func readIDs(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	var ids []string
	for len(ids) < n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream after %d ids: %v", len(ids), err)
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// post POSTs a JSON-RPC message of method with params (a JSON object,
// "" for none), with an id unless it is a notification; under the
// revision with its headers and a request's _meta.
func (l *liveReplica) post(id, method, params string) *http.Response {
	if !l.rev {
		return l.request("POST", rpcBody(id, method, params), nil)
	}
	hdr := map[string]string{protocol.HeaderVersion: l.era, protocol.HeaderMethod: method}
	if method == "tools/call" {
		hdr[protocol.HeaderName] = "stream"
	}
	if id != "" {
		meta := fmt.Sprintf(`"_meta":{%q:%q,%q:{}}`, protocol.MetaVersion, l.era, protocol.MetaCapabilities)
		if params == "" {
			params = "{" + meta + "}"
		} else {
			params = strings.TrimSuffix(params, "}") + "," + meta + "}"
		}
	}
	return l.request("POST", rpcBody(id, method, params), hdr)
}

func rpcBody(id, method, params string) string {
	b := `{"jsonrpc":"2.0","method":"` + method + `"`
	if id != "" {
		b += `,"id":` + id
	}
	if params != "" {
		b += `,"params":` + params
	}
	return b + "}"
}

// send sends the row's request and reads the decision off the response.
func (l *liveReplica) send(r clients.Req) outcome {
	var resp *http.Response
	switch r {
	case clients.ReqInitialize:
		if l.rev {
			resp = l.post("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
			break
		}
		sess := l.sess
		l.sess = ""
		resp = l.request("POST", initBody, nil)
		l.sess = sess
	case clients.ReqInitialized:
		resp = l.post("", "notifications/initialized", "")
	case clients.ReqDiscover:
		resp = l.post("4", "server/discover", "")
	case clients.ReqCall:
		resp = l.post("3", "tools/call", `{"name":"stream","arguments":{"events":1,"interval_ms":1}}`)
	case clients.ReqStandalone:
		resp = l.request("GET", "", nil)
	case clients.ReqResume:
		last := l.last
		if last == "" {
			last = "feedfacefeedface_1"
		}
		resp = l.request("GET", "", map[string]string{"Last-Event-ID": last})
	case clients.ReqDelete:
		resp = l.request("DELETE", "", nil)
	}
	defer resp.Body.Close()
	var o outcome
	o.Status = resp.StatusCode
	if o.Status == 400 {
		b, _ := io.ReadAll(resp.Body)
		o.Purged = strings.Contains(string(b), "purged")
	}
	secs, _ := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
	o.Hint = time.Duration(secs) * time.Second
	return o
}
