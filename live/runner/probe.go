package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/sse"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/topology"
)

// The isolation probes (isolation.probes): during a live run a few extra
// sessions present other live sessions' event ids as Last-Event-ID, on
// their own session and with none, and forged ids (that id with its counter
// moved, a very long one, a non-ASCII one, a path-like one, an empty one).
// A probe makes no call of its own, so every event of a call it is sent
// belongs to a stream of another session: a leak (events_leaked). Which
// ids, and where they are sent, is in probestreams.go.
//
// The probes' requests go to the same endpoint as the clients' (or to the
// replica behind it) but are kept out of the history: no metric but the
// design's isolation block counts them.

const (
	// probeCount is how many probe sessions a design's run opens, at
	// duration·k/(probeCount+1) for k = 1..probeCount.
	probeCount = 3
	// probeRead is how long a probe reads a stream it is answered with: a
	// store that leaks has replayed by then, and a standalone stream (an
	// empty Last-Event-ID) would otherwise stay open.
	probeRead = time.Second
	// probeTimeout bounds one probe request up to its response headers.
	probeTimeout = 10 * time.Second
	// maxLeaks is how many leaked events the report names.
	maxLeaks = 5
	// ProbeClientName is the clientInfo name of a probe's initialize, so
	// that a server's own logs can tell the probes from the clients.
	ProbeClientName = "stormsim-isolation-probe"
)

// isolation is one design's probes. The clients record what they saw in
// seen; res is written under resMu (a probe's resumes run side by side)
// and read once the probes have returned. slots, when stormsim runs the
// topology, lists its replicas.
type isolation struct {
	dr    *designRun
	slots func() []topo.SlotState
	seen  sightings

	resMu sync.Mutex
	res   report.Isolation
}

func newIsolation(dr *designRun, t *topo.Topology) *isolation {
	p := &isolation{dr: dr, res: report.Isolation{StatusCodes: map[string]int64{}, Routes: map[string]int{}}}
	p.seen.cur, p.seen.sessions = map[int32]int{}, map[int32]string{}
	if t != nil {
		p.slots = t.Slots
	}
	return p
}

// try is one resume a probe sends.
type try struct {
	kind    string // how the report names it
	id      string // the Last-Event-ID
	session bool   // with the probe's Mcp-Session-Id
	foreign bool   // the id is another live session's (as sent or its counter moved)
}

// open initializes a probe's session at endpoint: its id ("" when the
// server gives none) and the replica the LB sent it to (-1 when unknown).
func (p *isolation) open(ctx context.Context, endpoint string) site {
	at := site{endpoint: endpoint, replica: -1}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": p.dr.d.Era, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": ProbeClientName, "version": "0.1.0"}}})
	resp, err := p.do(ctx, http.MethodPost, endpoint, "", nil, body)
	if err != nil {
		return at
	}
	drain(resp)
	if resp.StatusCode/100 != 2 {
		return at
	}
	p.add(func(r *report.Isolation) { r.Sessions++ })
	at.sid, at.replica = resp.Header.Get("Mcp-Session-Id"), replicaOf(resp)
	if at.sid != "" {
		if resp, err := p.do(ctx, http.MethodPost, endpoint, at.sid, nil, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err == nil {
			drain(resp)
		}
	}
	return at
}

// do sends one probe request and counts it with its status.
func (p *isolation) do(ctx context.Context, method, endpoint, sid string, lastID *string, body []byte) (*http.Response, error) {
	rctx, cancel := context.WithTimeout(ctx, probeTimeout)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, endpoint, rd)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodPost || sid != "" { // every request but the initialize
		req.Header.Set("MCP-Protocol-Version", p.dr.d.Era)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if lastID != nil {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	p.add(func(r *report.Isolation) { r.Requests++ })
	resp, err := p.dr.http.Do(req)
	if err != nil {
		cancel()
		p.add(func(r *report.Isolation) { r.StatusCodes["0"]++ })
		return nil, err
	}
	p.add(func(r *report.Isolation) { r.StatusCodes[strconv.Itoa(resp.StatusCode)]++ })
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody ends its request's context when closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// drain reads what is left of a response (up to 1 MiB, for at most
// probeRead) and closes it.
func drain(resp *http.Response) {
	t := time.AfterFunc(probeRead, func() { resp.Body.Close() })
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) //nolint:errcheck // what the body says is not the probe's question
	t.Stop()
	resp.Body.Close()
}

// resume sends one GET with t's Last-Event-ID and reads the stream it is
// answered with, if any, for probeRead, judging every event.
func (p *isolation) resume(ctx context.Context, at site, t try) {
	if t.foreign {
		p.add(func(r *report.Isolation) { r.Presented++ })
	}
	s := ""
	if t.session {
		s = at.sid
	}
	resp, err := p.do(ctx, http.MethodGet, at.endpoint, s, &t.id, nil)
	if err != nil {
		return
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		drain(resp)
		return
	}
	timer := time.AfterFunc(probeRead, func() { resp.Body.Close() })
	defer timer.Stop()
	defer resp.Body.Close()
	rd := sse.NewReader(io.LimitReader(resp.Body, 16<<20))
	for {
		ev, err := rd.Next()
		if err != nil {
			return
		}
		if !ev.HasData || ev.Data == "" {
			continue
		}
		l, leaked := p.judge(ev, t, s)
		p.add(func(r *report.Isolation) {
			r.Events++
			if leaked {
				r.Leaked++
				if len(r.Leaks) < maxLeaks {
					r.Leaks = append(r.Leaks, l)
				}
			}
		})
	}
}

// judge says whether an event a probe was sent is another session's: a
// progress notification or a result (the probe made no call, so any call's
// data is someone else's), or an event of the stream whose id it presented.
func (p *isolation) judge(ev sse.Event, t try, sid string) (report.Leak, bool) {
	d := parseData([]byte(ev.Data), 0)
	call := d.index >= 0 || d.result
	sameStream := ev.ID != "" && t.foreign && streamPart(ev.ID) == streamPart(t.id)
	if !call && !sameStream {
		return report.Leak{}, false
	}
	l := report.Leak{Probe: t.kind, LastEventID: cut(t.id, 120), EventID: cut(ev.ID, 120), ProbeSession: sid, Call: d.token}
	if c, _, _, ok := history.ParseToken(d.token); ok {
		l.OwnerSession = p.owner(c)
	}
	return l, true
}

// fill writes the probes' findings into row: events_leaked, the isolation
// block and a note per leak. Without probes (p nil) events_leaked is
// unknown.
func (p *isolation) fill(row *report.Design) {
	if p == nil {
		row.Unknown = append(append([]string(nil), row.Unknown...), "events_leaked")
		return
	}
	res := p.res
	row.Isolation = &res
	row.Totals.EventsLeaked = res.Leaked
	if res.Presented == 0 && row.Events != topology.EventsNone {
		row.Notes = append(row.Notes, "isolation: the probes found no other session's event id to present (no native client had been sent one), so events_leaked 0 says only that the forged ids leaked nothing")
	}
	if n := routesNote(&res); n != "" {
		row.Notes = append(row.Notes, n)
	}
	if res.Leaked > 0 {
		row.Notes = append(row.Notes, fmt.Sprintf("isolation: %d events of other sessions' streams were sent to the isolation probes; the server's event store replays one session's events to another", res.Leaked))
		for _, l := range res.Leaks {
			row.Notes = append(row.Notes, "isolation: leaked "+l.String())
		}
	}
}

// streamPart is an event id up to its last '_' (the stream of a
// "<stream>_<index>" id), or the whole id.
func streamPart(id string) string {
	if i := strings.LastIndexByte(id, '_'); i > 0 {
		return id[:i]
	}
	return id
}

// moveCounter is id with its last run of digits set to 0 (a replay from the
// start of the stream), or id + "_0" when it has none.
func moveCounter(id string) string {
	end := strings.LastIndexAny(id, "0123456789")
	if end < 0 {
		return id + "_0"
	}
	start := end
	for start > 0 && id[start-1] >= '0' && id[start-1] <= '9' {
		start--
	}
	moved := id[:start] + "0" + id[end+1:]
	if moved == id {
		moved = id[:start] + "1" + id[end+1:]
	}
	return moved
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
