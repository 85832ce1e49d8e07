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
	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/sse"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/topology"
)

// The isolation probes (isolation.probes): during a live run a few extra
// sessions present another live session's event id as Last-Event-ID, on
// their own session and with none, and forged ids (that id with its counter
// moved, a very long one, a non-ASCII one, a path-like one, an empty one).
// A probe makes no call of its own, so every event of a call it is sent
// belongs to a stream of another session: a leak (events_leaked).
//
// The probes' requests go to the same endpoint as the clients' but are kept
// out of the history: no metric but the design's isolation block counts
// them.

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
	// sightingRing is how many recent event ids the clients' sightings keep.
	sightingRing = 256
	// ProbeClientName is the clientInfo name of a probe's initialize, so
	// that a server's own logs can tell the probes from the clients.
	ProbeClientName = "stormsim-isolation-probe"
)

// sighting is one event id a client was sent, in its session, through a
// replica (-1 when unknown).
type sighting struct {
	client  int32
	session string
	id      string
	replica int
}

// isolation is one design's probes. The clients call saw from their own
// goroutines; mu guards the sightings. res is written by the probe
// goroutine only and read once it has returned.
type isolation struct {
	dr *designRun

	mu       sync.Mutex
	ring     [sightingRing]sighting
	n        int              // sightings recorded
	sessions map[int32]string // each client's latest session that was sent an event id

	res report.Isolation
}

func newIsolation(dr *designRun) *isolation {
	return &isolation{dr: dr, sessions: map[int32]string{}, res: report.Isolation{StatusCodes: map[string]int64{}}}
}

// saw records that client, in session, was sent the event id through
// replica. Safe for concurrent use.
func (p *isolation) saw(client int32, session, id string, replica int) {
	if session == "" || id == "" {
		return
	}
	p.mu.Lock()
	p.ring[p.n%sightingRing] = sighting{client: client, session: session, id: id, replica: replica}
	p.n++
	p.sessions[client] = session
	p.mu.Unlock()
}

// victim is the latest sighting of a session other than own: one served by
// replica when replica is known (its store is the one the probe's own
// session reaches), else any.
func (p *isolation) victim(own string, replica int) (sighting, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var any sighting
	found := false
	for i := 0; i < min(p.n, sightingRing); i++ {
		s := p.ring[(p.n-1-i)%sightingRing]
		if s.session == own {
			continue
		}
		if replica < 0 || s.replica == replica {
			return s, true
		}
		if !found {
			any, found = s, true
		}
	}
	return any, found
}

func (p *isolation) owner(client int32) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[client]
}

// run sends the probes at their times until ctx ends.
func (p *isolation) run(ctx context.Context) {
	for k := 1; k <= probeCount; k++ {
		at := p.dr.t0.Add(p.dr.sc.Duration * time.Duration(k) / (probeCount + 1))
		t := time.NewTimer(time.Until(at))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		p.probe(ctx)
	}
}

// try is one resume a probe sends.
type try struct {
	kind    string // how the report names it
	id      string // the Last-Event-ID
	session bool   // with the probe's Mcp-Session-Id
	foreign bool   // the id is another live session's (as sent or its counter moved)
}

// probe opens a session, presents the ids and ends the session.
func (p *isolation) probe(ctx context.Context) {
	sid, replica := p.open(ctx)
	if ctx.Err() != nil {
		return
	}
	p.res.Probes++
	v, have := p.victim(sid, replica)
	base, owner := "probe", "session"
	var tries []try
	if have {
		base, owner = streamPart(v.id), v.session
		tries = append(tries,
			try{"foreign-id", v.id, true, true},
			try{"no-session", v.id, false, true},
			try{"counter-moved", moveCounter(v.id), true, true})
	}
	tries = append(tries,
		try{"long-id", base + "_" + strings.Repeat("9", 4096), true, false},
		try{"non-ascii", base + "_\uff15\u00e9", true, false},
		try{"path-like", "../" + owner + "/" + base + "_0", true, false},
		try{"empty", "", true, false})
	for _, t := range tries {
		if ctx.Err() != nil {
			return
		}
		p.resume(ctx, sid, t)
	}
	if sid != "" {
		if resp, err := p.do(ctx, http.MethodDelete, sid, nil, nil); err == nil {
			drain(resp)
		}
	}
}

// open initializes the probe's session: its id ("" when the server gives
// none) and the replica the LB sent it to (-1 when unknown).
func (p *isolation) open(ctx context.Context) (string, int) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": p.dr.d.Era, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": ProbeClientName, "version": "0.1.0"}}})
	resp, err := p.do(ctx, http.MethodPost, "", nil, body)
	if err != nil {
		return "", -1
	}
	drain(resp)
	if resp.StatusCode/100 != 2 {
		return "", -1
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	replica := -1
	if n, err := strconv.Atoi(resp.Header.Get(lb.ReplicaHeader)); err == nil {
		replica = n
	}
	if sid != "" {
		if resp, err := p.do(ctx, http.MethodPost, sid, nil, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err == nil {
			drain(resp)
		}
	}
	return sid, replica
}

// do sends one probe request and counts it with its status.
func (p *isolation) do(ctx context.Context, method, sid string, lastID *string, body []byte) (*http.Response, error) {
	rctx, cancel := context.WithTimeout(ctx, probeTimeout)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, p.dr.endpoint, rd)
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
	p.res.Requests++
	resp, err := p.dr.http.Do(req)
	if err != nil {
		cancel()
		p.res.StatusCodes["0"]++
		return nil, err
	}
	p.res.StatusCodes[strconv.Itoa(resp.StatusCode)]++
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
func (p *isolation) resume(ctx context.Context, sid string, t try) {
	if t.foreign {
		p.res.Presented++
	}
	s := ""
	if t.session {
		s = sid
	}
	resp, err := p.do(ctx, http.MethodGet, s, &t.id, nil)
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
		p.res.Events++
		if l, leaked := p.judge(ev, t, s); leaked {
			p.res.Leaked++
			if len(p.res.Leaks) < maxLeaks {
				p.res.Leaks = append(p.res.Leaks, l)
			}
		}
	}
}

// judge says whether an event a probe was sent is another session's: a
// progress notification or a result (the probe made no call, so any call's
// data is someone else's), or an event of the stream whose id it presented.
func (p *isolation) judge(ev sse.Event, t try, sid string) (report.Leak, bool) {
	d := parseData(ev.Data, 0)
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
