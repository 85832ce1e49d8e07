package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// shapeServer is an MCP Streamable HTTP server written by hand for the
// tests, so that it can send progress in any shape and misbehave on
// purpose, and count what it really sent. Its event ids are
// "<stream>:<n>", a format of its own. Its tool, stream, runs a call to
// its end whether or not a client listens; a GET with Last-Event-ID
// replays the stream after that event and follows it.
//
// Shapes:
//   - "1..N": progress 1..E of total E, then the result (E+1 events);
//   - "fraction": progress i/E for i = 1..E-1 of total 1, then the result;
//   - "nototal": progress 0..E-2 with no total, then the result;
//   - "dupid": progress 1..E-1 of E, then the result, and the second
//     event of every call is written twice with the same id;
//   - "restart": like "dupid" without the repeat, but a resume restarts
//     the call's progress from its first event, with new ids;
//   - "gap": like "restart", but a resume skips the first progress event
//     after its cursor, as a store that lost it would: that event is lost.
type shapeServer struct {
	shape string

	mu       sync.Mutex
	sessions map[string]bool
	streams  map[string]*shapeStream
	n        int
	// What the server really sent, counted once written and flushed.
	dupSent    int64 // events written a second time with the same id
	redoneSent int64 // events re-sent on a resume at or before its cursor
	skipped    int64 // events a resume skipped
}

type shapeStream struct {
	id      string
	tok     string        // the call attempt's progress token
	data    []string      // the events' data, in order; the last is the result once done
	done    bool          // the result is in data
	changed chan struct{} // closed and replaced at each append
}

func newShapeServer(shape string) *httptest.Server {
	s := &shapeServer{shape: shape, sessions: map[string]bool{}, streams: map[string]*shapeStream{}}
	return httptest.NewServer(s)
}

// logical is the number of logical calls that completed (a re-issued
// attempt is the same call) and of their events, as the server produced
// them (each event once).
func (s *shapeServer) logical() (calls, events int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := map[string]int{}
	for _, st := range s.streams {
		if c, k, _, ok := history.ParseToken(st.tok); ok && st.done {
			done[history.Token(c, k, 0)] = len(st.data)
		}
	}
	for _, n := range done {
		calls++
		events += int64(n)
	}
	return calls, events
}

func (s *shapeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	known := s.sessions[sid]
	s.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if !known {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		sid, n, ok := strings.Cut(last, ":")
		pos, err := strconv.Atoi(strings.TrimPrefix(n, "r"))
		s.mu.Lock()
		st := s.streams[sid]
		s.mu.Unlock()
		if !ok || err != nil || st == nil {
			http.Error(w, "no such event", http.StatusBadRequest)
			return
		}
		switch s.shape {
		case "restart":
			s.write(w, r, st, 0, pos, "r")
		case "gap":
			s.mu.Lock()
			// The next event is produced and is not the result: skip it.
			skip := pos+1 < len(st.data) && !(st.done && pos+1 == len(st.data)-1)
			if skip {
				s.skipped++
			}
			s.mu.Unlock()
			if skip {
				s.write(w, r, st, pos+2, -1, "")
			} else {
				s.write(w, r, st, pos+1, -1, "")
			}
		default:
			s.write(w, r, st, pos+1, -1, "")
		}
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments struct {
				Events     int `json:"events"`
				IntervalMS int `json:"interval_ms"`
			} `json:"arguments"`
			Meta struct {
				ProgressToken string `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	switch msg.Method {
	case "initialize":
		s.mu.Lock()
		s.n++
		sid = fmt.Sprintf("s%d", s.n)
		s.sessions[sid] = true
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"shapes","version":"1"}}}`, msg.ID)
		return
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
		return
	case "tools/call":
	default:
		http.Error(w, "unknown method", http.StatusBadRequest)
		return
	}
	if !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	e := msg.Params.Arguments.Events
	if e == 0 {
		e = 7 // not told: calls of its own length
	}
	s.mu.Lock()
	s.n++
	st := &shapeStream{id: fmt.Sprintf("st%d", s.n), tok: msg.Params.Meta.ProgressToken, changed: make(chan struct{})}
	s.streams[st.id] = st
	s.mu.Unlock()
	go s.produce(st, e, time.Duration(msg.Params.Arguments.IntervalMS)*time.Millisecond, msg.Params.Meta.ProgressToken, msg.ID)
	s.write(w, r, st, 0, -1, "")
}

// progress lists the progress notifications (value, total; total < 0:
// none) of a call of e events in the server's shape.
func (s *shapeServer) progress(e int) [][2]float64 {
	var out [][2]float64
	switch s.shape {
	case "1..N":
		for i := 1; i <= e; i++ {
			out = append(out, [2]float64{float64(i), float64(e)})
		}
	case "fraction":
		for i := 1; i < e; i++ {
			out = append(out, [2]float64{float64(i) / float64(e), 1})
		}
	case "nototal":
		for i := 0; i < e-1; i++ {
			out = append(out, [2]float64{float64(i), -1})
		}
	default:
		for i := 1; i < e; i++ {
			out = append(out, [2]float64{float64(i), float64(e)})
		}
	}
	return out
}

// produce runs a call: its events one interval apart, then its result,
// whoever listens.
func (s *shapeServer) produce(st *shapeStream, e int, interval time.Duration, tok string, id json.RawMessage) {
	add := func(data string, done bool) {
		s.mu.Lock()
		st.data = append(st.data, data)
		st.done = done
		close(st.changed)
		st.changed = make(chan struct{})
		s.mu.Unlock()
	}
	for _, p := range s.progress(e) {
		time.Sleep(interval)
		params := map[string]any{"progressToken": tok, "progress": p[0]}
		if p[1] >= 0 {
			params["total"] = p[1]
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
		add(string(b), false)
	}
	time.Sleep(interval)
	add(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}`, id), true)
}

// write streams st's events from position from until its result, as SSE
// with ids "<stream>:<prefix><n>". Events at positions up to redoUpTo are
// counted as re-sent (a resume that restarted the call).
func (s *shapeServer) write(w http.ResponseWriter, r *http.Request, st *shapeStream, from, redoUpTo int, prefix string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	for pos := from; ; {
		s.mu.Lock()
		if pos >= len(st.data) {
			if st.done {
				s.mu.Unlock()
				return
			}
			ch := st.changed
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-r.Context().Done():
				return
			}
		}
		data := st.data[pos]
		s.mu.Unlock()
		times := 1
		if s.shape == "dupid" && pos == 1 && from == 0 {
			times = 2
		}
		for k := 0; k < times; k++ {
			fmt.Fprintf(w, "id: %s:%s%d\ndata: %s\n\n", st.id, prefix, pos, data)
			if rc.Flush() != nil {
				return
			}
			s.mu.Lock()
			if k > 0 {
				s.dupSent++
			}
			if pos <= redoUpTo {
				s.redoneSent++
			}
			s.mu.Unlock()
		}
		pos++
	}
}

// shapesScenario is a short run against a server at a URL; %s is the
// faults.
const shapesScenario = `
[scenario.shapes]
duration = "4s"
drain = "3s"
designs = ["memory-sticky"]
[scenario.shapes.server.tool]
name = "stream"
[scenario.shapes.workload]
clients = 20
arrival_rate = 20
think = "200ms"
events_min = 5
events_max = 10
event_rate = 20
%s
`

const shapesDrop = `
[[scenario.shapes.faults]]
kind = "client-drop"
at = "2s"
fraction = 1.0
away = "200ms"
`

// TestOwnServerProgressShapes runs clients against servers that send
// progress in shapes other than stormsim's own 1..E-1: 1..N of N,
// fractional, and 0-based with no total. Each gives no duplicates, and the
// events delivered are exactly the events the server produced for its
// completed calls (the client-drop's cut streams resume; none is lost). A
// server that really writes an event id twice gets exactly the duplicates
// it wrote; one whose resumes restart their progress gets exactly the
// events it re-sent as redone, and no duplicates; one whose resumes skip an
// event loses exactly the events it skipped. The server counts what it
// sent, so each is an independent check of the client-side judgement.
//
// It stays serial: beside another live run in make test, under the CPU-bound
// stage's load, its short calls ran past the run's end (dupid: 11 of 20
// pending) and the client drop found too few streams open (restart: 1 resume).
func TestOwnServerProgressShapes(t *testing.T) {
	t.Parallel() // make test: see the Makefile's note on the live stage
	for _, tc := range []struct {
		shape  string
		faults string
	}{
		{"1..N", shapesDrop},     // progress 1..N of N, then the result
		{"fraction", shapesDrop}, // 0.1 … 0.9 of 1
		{"nototal", shapesDrop},  // 0, 1, … with no total
		{"dupid", ""},            // every call's second event written twice
		{"restart", shapesDrop},  // a resume replays the call from its start
		{"gap", shapesDrop},      // a resume skips one event: lost
	} {
		t.Run(tc.shape, func(t *testing.T) {
			srv := newShapeServer(tc.shape)
			defer srv.Close()
			ss := srv.Config.Handler.(*shapeServer)
			file := filepath.Join(t.TempDir(), "s.toml")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(shapesScenario, tc.faults)), 0o644); err != nil {
				t.Fatal(err)
			}
			target := targetSet(srv.URL + "/mcp")
			sc, err := loadFile(t, file, "shapes", target)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Run(context.Background(), sc, &Options{Bin: bin, File: file, Set: target})
			if err != nil {
				t.Fatal(err)
			}
			d := out.Report.Designs[0]
			h := out.Histories[d.Name]
			tt := d.Totals
			calls, produced := ss.logical()
			ss.mu.Lock()
			dupSent, redoneSent, skipped := ss.dupSent, ss.redoneSent, ss.skipped
			ss.mu.Unlock()
			produced -= skipped // produced, but never sent to anyone
			resumes := 0
			kinds := map[string]int{}
			for _, q := range h.Requests {
				if q.Kind == clients.ReqResume && q.Status == 200 {
					resumes++
				}
				kinds[fmt.Sprintf("%v/%d", q.Kind, q.Status)]++
			}
			causes := map[history.DropCause]int{}
			for _, x := range h.Drops {
				causes[x.Cause]++
			}
			open := 0
			for _, a := range h.Faults {
				for _, q := range h.Requests {
					if q.Stream() && q.Answered <= a.At && q.Closed > a.At {
						open++
					}
				}
			}
			t.Logf("requests %v, drops by cause %v, reissued %d, streams open at the faults %d", kinds, causes, tt.CallsReissued, open)
			t.Logf("calls %d completed %d pending %d (server completed %d); delivered %d of %d (server sent %d); lost %d (skipped %d), duplicated %d (sent %d), redone %d (re-sent %d), resumes %d",
				tt.Calls, tt.CallsCompleted, tt.CallsPending, calls, tt.EventsDelivered, tt.EventsExpected, produced, tt.EventsLost, skipped, tt.EventsDuplicated, dupSent, tt.EventsRedone, redoneSent, resumes)
			if tt.CallsCompleted == 0 || tt.CallsCompleted != calls || tt.CallsFailed != 0 || tt.CallsPending != 0 {
				t.Errorf("%d calls completed, %d failed, %d pending; the server completed %d: want every call completed", tt.CallsCompleted, tt.CallsFailed, tt.CallsPending, calls)
			}
			if tt.EventsDelivered != produced || tt.EventsLost != skipped || tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending ||
				(tc.shape == "gap") != (skipped > 0) {
				t.Errorf("delivered %d, lost %d, pending %d of %d expected; the server sent %d and skipped %d", tt.EventsDelivered, tt.EventsLost, tt.EventsPending, tt.EventsExpected, produced, skipped)
			}
			if tt.EventsDuplicated != dupSent || (tc.shape == "dupid") != (dupSent > 0) {
				t.Errorf("%d duplicates, the server wrote %d", tt.EventsDuplicated, dupSent)
			}
			if tt.EventsRedone != redoneSent || (tc.shape == "restart") != (redoneSent > 0) {
				t.Errorf("%d redone, the server re-sent %d", tt.EventsRedone, redoneSent)
			}
			if tc.faults != "" && resumes < 3 {
				t.Errorf("only %d resumes: the client drop tests too little", resumes)
			}
			if v, _ := d.Metric("events_redone"); v == nil || d.IsUnknown("events_duplicated") {
				t.Error("events_redone or events_duplicated reads unknown")
			}
		})
	}
}

// targetSet is what `run --target URL` sets.
func targetSet(url string) []string {
	return []string{"server.url=" + strconv.Quote(url), `server.command=""`}
}

// sdkOwnScenario runs go-sdk clients against examples/byo-server; %s is
// the server table.
const sdkOwnScenario = `
[scenario.sdk]
duration = "6s"
drain = "4s"
replicas = 2
designs = ["memory-sticky"]
%s
[scenario.sdk.client]
impl = "go-sdk"
[scenario.sdk.workload]
clients = 16
arrival_rate = 16
think = "200ms"
events_min = 5
events_max = 10
event_rate = 20
[[scenario.sdk.faults]]
kind = "client-drop"
at = "3s"
fraction = 1.0
away = "200ms"
`

// TestOwnServerGoSDKClients runs the official go-sdk client, and the
// TypeScript SDK's, against examples/byo-server, started by stormsim ([server] command) and at a URL
// (--target): the clients call its tool with the scenario's arguments,
// complete their calls through a client drop, and the report holds known
// (non-null) delivered and lost counts that add up.
func TestOwnServerGoSDKClients(t *testing.T) {
	exe := ownServerBin(t)
	tsSet := []string{"client.impl=ts-sdk", "client.profile=ts-sdk"}
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, exe, "-port", strconv.Itoa(port))
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait() //nolint:errcheck // killed by cancel
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	for deadline := time.Now().Add(wait.For(wait.Ready)); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("byo-server did not listen on %s", url)
		}
	}
	for _, tc := range []struct {
		name   string
		server string
		sets   []string
	}{
		// stormsim runs two replicas behind its LB
		{"command", "[scenario.sdk.server]\ncommand = " + strconv.Quote(exe+" -port {port}"), nil},
		// --target: the clients talk to the URL
		{"target", "[scenario.sdk.server]\ncommand = \"unused {port}\"", targetSet(url)},
		// the same with the TypeScript SDK's clients, whose progress values
		// are read by the same progressIndex
		{"ts-sdk-command", "[scenario.sdk.server]\ncommand = " + strconv.Quote(exe+" -port {port}"), tsSet},
		{"ts-sdk-target", "[scenario.sdk.server]\ncommand = \"unused {port}\"", append(targetSet(url), tsSet...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.toml")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(sdkOwnScenario, tc.server)), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := loadFile(t, file, "sdk", tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Run(ctx, sc, &Options{Bin: bin, File: file, Set: tc.sets})
			if err != nil {
				t.Fatal(err)
			}
			d := out.Report.Designs[0]
			h := out.Histories[d.Name]
			tt := d.Totals
			resumes, sdkCalls := 0, 0
			for _, q := range h.Requests {
				if q.Kind == clients.ReqResume && q.Status == 200 {
					resumes++
				}
				if q.Kind == clients.ReqCall {
					sdkCalls++
				}
			}
			js, err := out.Report.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Designs []struct {
					Totals map[string]any `json:"totals"`
				} `json:"designs"`
			}
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			got := back.Designs[0].Totals
			t.Logf("calls %d completed %d failed %d; delivered %v lost %v of %d expected; duplicated %d, resumes %d; row %q/%q; notes %q",
				tt.Calls, tt.CallsCompleted, tt.CallsFailed, got["events_delivered"], got["events_lost"], tt.EventsExpected, tt.EventsDuplicated, resumes, d.Label(), d.LB, d.Notes)
			if tt.CallsCompleted == 0 || tt.CallsCompleted < tt.Calls*9/10 || sdkCalls == 0 {
				t.Errorf("%d of %d calls completed (%d call requests): want the go-sdk clients to complete their calls", tt.CallsCompleted, tt.Calls, sdkCalls)
			}
			if got["events_delivered"] == nil || got["events_lost"] == nil || tt.EventsDelivered == 0 ||
				tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending || tt.EventsDuplicated != 0 {
				t.Errorf("report.json totals %v: want known delivered and lost that add up, no duplicates", got)
			}
			if resumes == 0 {
				t.Error("no resumes: the go-sdk clients did not resume the dropped streams")
			}
			if strings.HasSuffix(tc.name, "target") && (d.Target != url || !strings.Contains(d.Label(), "own server") || d.LB != "none") {
				t.Errorf("the --target row is labelled %q, lb %q: want the URL and own server", d.Label(), d.LB)
			}
		})
	}
}

// freeLoopbackPort asks the kernel for a loopback port nobody listens on.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// TestOwnServerUnknownsAreNull holds the one rule for unknowns on a real
// run: a server whose tool is not told the call's length (no {events} in
// its arguments) leaves the expected length unknown too. Every metric the
// notes call unknown is listed in the design's unknown, null in
// report.json, n/a in the table and n/a (failed) to a threshold; every
// null in report.json's totals is one the notes name; and what is known
// (events_delivered) is still reported, equal to what the server produced.
func TestOwnServerUnknownsAreNull(t *testing.T) {
	srv := newShapeServer("1..N")
	defer srv.Close()
	ss := srv.Config.Handler.(*shapeServer)
	file := filepath.Join(t.TempDir(), "s.toml")
	sc := fmt.Sprintf(shapesScenario, "") + "[scenario.shapes.server.tool]\narguments = '{\"interval_ms\": {interval_ms}}'\n"
	sc = strings.Replace(sc, "[scenario.shapes.server.tool]\nname = \"stream\"\n", "", 1)
	sc = strings.Replace(sc, "[scenario.shapes.server.tool]\n", "[scenario.shapes.server.tool]\nname = \"stream\"\n", 1)
	if err := os.WriteFile(file, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	target := targetSet(srv.URL + "/mcp")
	s, err := loadFile(t, file, "shapes", target)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), s, &Options{Bin: bin, File: file, Set: target})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Report
	d := r.Designs[0]
	_, produced := ss.logical()
	t.Logf("unknown %v; delivered %d (server produced %d); notes %q", d.Unknown, d.Totals.EventsDelivered, produced, d.Notes)

	// Every metric a note calls unknown or not known.
	named := map[string]bool{}
	for _, n := range d.Notes {
		var list string
		if l, ok := strings.CutPrefix(n, report.UnknownNotePrefix); ok {
			list, _, _ = strings.Cut(l, " (")
		} else if _, l, ok := strings.Cut(n, " so "); ok && strings.Contains(l, " are not known") {
			list, _, _ = strings.Cut(l, " are not known")
		} else {
			continue
		}
		for _, m := range strings.Split(list, ", ") {
			named[strings.TrimSpace(m)] = true
		}
	}
	for _, want := range []string{"events_expected", "events_lost", "events_pending", "lost_fraction", "events_replayed", "events_unproduced"} {
		if !named[want] {
			t.Errorf("no note calls %s unknown", want)
		}
	}

	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Designs []struct {
			Totals map[string]any `json:"totals"`
		} `json:"designs"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	totals := back.Designs[0].Totals
	lookup := func(key string) (any, bool) {
		var v any = totals
		for _, k := range strings.Split(key, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		}
		return v, true
	}
	head, rows := r.TableRows()
	column := map[string]string{"events_expected": "events", "events_lost": "lost", "lost_fraction": "lost%",
		"events_replayed": "replayed", "events_unproduced": "unproduced", "store_peak_bytes": "store peak"}
	var checks []scenario.Check
	for m := range named {
		if !d.IsUnknown(m) {
			t.Errorf("a note calls %s unknown; the design's unknown list does not", m)
		}
		if v, ok := lookup(m); ok && v != nil {
			t.Errorf("report.json totals.%s = %v, want null", m, v)
		} else if !ok && m != "lost_fraction" {
			t.Errorf("report.json has no totals.%s", m)
		}
		metric := m
		if c, ok := strings.CutPrefix(m, "lost_by_cause."); ok {
			metric = "lost_" + c
		}
		if v, ok := d.Metric(metric); !ok || v != nil {
			t.Errorf("Metric(%s) = %v, %v: want n/a", metric, v, ok)
		}
		checks = append(checks, scenario.Check{Metric: metric, Op: "max", Bound: 1e18})
		if col, ok := column[m]; ok {
			i := slices.Index(head, col)
			if rows[0][i] != "n/a" {
				t.Errorf("table column %q reads %q for unknown %s, want n/a", col, rows[0][i], m)
			}
		}
	}
	for _, res := range expect.Evaluate(r, checks) {
		if res.Pass || !strings.Contains(res.String(), "got n/a") {
			t.Errorf("threshold %s: pass %v, %q: want failed n/a", res.Name(), res.Pass, res)
		}
	}
	// Every null is named, and the rest is known.
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch x := v.(type) {
			case nil:
				if !named[prefix+k] {
					t.Errorf("report.json totals.%s%s is null, but no note calls it unknown", prefix, k)
				}
			case map[string]any:
				walk(prefix+k+".", x)
			}
		}
	}
	walk("", totals)
	if v, _ := lookup("events_delivered"); v == nil || d.Totals.EventsDelivered != produced || produced == 0 {
		t.Errorf("events_delivered %v (%d), the server produced %d: want it known and equal", v, d.Totals.EventsDelivered, produced)
	}
	// A report read back keeps the rule: unknown, not 0.
	back2, err := report.Parse("report.json", js)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := back2.Designs[0].Metric("events_lost"); v != nil {
		t.Errorf("events_lost read back as %v, want n/a", *v)
	}
}
