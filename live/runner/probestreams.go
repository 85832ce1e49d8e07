package runner

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/live/lb"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/report"
)

// What the probes present, and where. A store shared by every session and
// keyed by stream alone (the TypeScript SDK's InMemoryEventStore shared, the
// class of the fastmcp and frontmcp advisories) replays what follows the id
// presented, so the probes present the earliest id a client was sent on
// another session's stream (a priming event's, when the server sends one):
// nothing follows the newest. Ids may be opaque, so the probes present ids
// as the server wrote them, from several streams of different sessions. A
// store that lives in one replica leaks only to a session on that replica:
// when stormsim runs the topology a probe opens its session on the replica
// that served the stream it presents; through an endpoint it does not run,
// it opens sessions until one lands on a sighted stream's replica, as the
// LB's replica header says, or presents the ids from several sessions when
// no header says which replica answered. The isolation block's routes say
// which of these happened.

const (
	// streamRing is how many recent streams the clients' sightings keep.
	streamRing = 256
	// probeStreams is how many other sessions' streams a probe presents
	// the earliest id of.
	probeStreams = 3
	// maxReopen is how many sessions a probe opens through the endpoint
	// looking for one on a sighted stream's replica.
	maxReopen = 8
	// blindSessions is how many sessions a probe presents the ids from
	// when no answer says which replica served it, stopping at a leak.
	blindSessions = 3
)

// How a probe reached the store of the streams it presented (the keys of
// report.Isolation.Routes).
const (
	RouteOwnerReplica   = "owner-replica"     // stormsim runs the topology: the session was opened on the stream's replica
	RouteSharedReplica  = "shared-replica"    // through the endpoint, a session landed on a sighted stream's replica
	RouteNoSharedRepl   = "no-shared-replica" // through the endpoint, none of maxReopen sessions did
	RouteReplicaUnknown = "replica-unknown"   // no answer says which replica served it: blindSessions sessions presented the ids
	RouteNoSighting     = "no-sighting"       // no client had been sent another session's event id
)

// stream is one call attempt's stream as a client saw it: the earliest
// event id it was sent on it, in its session, through a replica (-1 when
// unknown).
type stream struct {
	client       int32
	seq, attempt int32
	session      string
	first        string
	replica      int
	seen         int // event ids sighted on it
}

// sightings are the streams the clients saw, newest last. The clients
// call saw from their own goroutines; mu guards every field.
type sightings struct {
	mu       sync.Mutex
	ring     [streamRing]stream
	n        int              // streams recorded
	cur      map[int32]int    // each client's latest stream, as its number in ring order
	sessions map[int32]string // each client's latest session that was sent an event id
}

// saw records that client, in session, was sent the event id on call seq's
// attempt through replica. Only the first id of a stream is kept.
func (p *isolation) saw(client, seq, attempt int32, session, id string, replica int) {
	if session == "" || id == "" {
		return
	}
	s := &p.seen
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.cur[client]; ok && k >= s.n-streamRing {
		if st := &s.ring[k%streamRing]; st.seq == seq && st.attempt == attempt && st.session == session {
			st.seen++
			return
		}
	}
	s.ring[s.n%streamRing] = stream{client: client, seq: seq, attempt: attempt, session: session, first: id, replica: replica, seen: 1}
	s.cur[client] = s.n
	s.n++
	s.sessions[client] = session
}

func (p *isolation) owner(client int32) string {
	p.seen.mu.Lock()
	defer p.seen.mu.Unlock()
	return p.seen.sessions[client]
}

// victims are up to n streams of different sessions, newest first: those
// served by replica (when it is not -1) that were sent more than their
// first event, then those served by replica, then any.
func (p *isolation) victims(replica, n int) []stream {
	s := &p.seen
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stream
	taken := map[string]bool{}
	for pass := 0; pass < 3 && len(out) < n; pass++ {
		for i := 0; i < min(s.n, streamRing) && len(out) < n; i++ {
			st := s.ring[(s.n-1-i)%streamRing]
			if taken[st.session] || (pass < 2 && replica >= 0 && st.replica != replica) || (pass == 0 && st.seen < 2) {
				continue
			}
			taken[st.session] = true
			out = append(out, st)
		}
	}
	return out
}

// sightedOn says whether a stream the clients saw was served by replica.
func (p *isolation) sightedOn(replica int) bool {
	s := &p.seen
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < min(s.n, streamRing); i++ {
		if s.ring[i].replica == replica {
			return true
		}
	}
	return false
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

// probe is one probe: sessions opened where the presented streams live,
// each presenting the ids (the forged ones from the first session only),
// until one leaks or the route allows no more.
func (p *isolation) probe(ctx context.Context) {
	p.add(func(r *report.Isolation) { r.Probes++ })
	for i := 0; ; i++ {
		at, route := p.reach(ctx)
		if ctx.Err() != nil {
			return
		}
		if i == 0 {
			p.add(func(r *report.Isolation) { r.Routes[route]++ })
		}
		leaked := p.present(ctx, at, i == 0)
		if leaked || route != RouteReplicaUnknown || i+1 >= blindSessions {
			return
		}
	}
}

// site is a probe's session: the endpoint it was opened at, its id ("" when
// the server gives none) and its replica (-1 when unknown).
type site struct {
	endpoint string
	sid      string
	replica  int
}

// reach opens a probe's session where the newest stream's store is, and
// says how (a Route… name).
func (p *isolation) reach(ctx context.Context) (site, string) {
	vs := p.victims(-1, 1)
	if len(vs) == 0 {
		return p.open(ctx, p.dr.endpoint), RouteNoSighting
	}
	v := vs[0]
	if v.replica < 0 {
		return p.open(ctx, p.dr.endpoint), RouteReplicaUnknown
	}
	if ep := p.slotEndpoint(v.replica); ep != "" {
		at := p.open(ctx, ep)
		at.replica = v.replica
		return at, RouteOwnerReplica
	}
	var at site
	for i := 0; i < maxReopen && ctx.Err() == nil; i++ {
		if i > 0 {
			p.end(ctx, at)
		}
		at = p.open(ctx, p.dr.endpoint)
		if at.replica >= 0 && p.sightedOn(at.replica) {
			return at, RouteSharedReplica
		}
	}
	return at, RouteNoSharedRepl
}

// slotEndpoint is the MCP endpoint of the replica process serving slot,
// when stormsim runs the topology and that slot serves; "" otherwise.
func (p *isolation) slotEndpoint(slot int) string {
	if p.slots == nil {
		return ""
	}
	for _, s := range p.slots() {
		if s.Slot == slot && s.State == topo.SlotServing && s.URL != "" {
			return strings.TrimSuffix(s.URL, "/") + p.dr.target.RequestURI()
		}
	}
	return ""
}

// present sends a session's resumes: the earliest id of up to probeStreams
// other sessions' streams on its replica (the first also with no session
// and with its counter moved), and, when forged, the forged ids, all at
// once. It ends the session and says whether anything leaked.
func (p *isolation) present(ctx context.Context, at site, forged bool) bool {
	vs := p.victims(at.replica, probeStreams)
	base, owner := "probe", "session"
	var tries []try
	for i, v := range vs {
		if i == 0 {
			base, owner = streamPart(v.first), v.session
			tries = append(tries, try{"foreign-id", v.first, true, true}, try{"no-session", v.first, false, true})
			if forged {
				tries = append(tries, try{"counter-moved", moveCounter(v.first), true, true})
			}
			continue
		}
		tries = append(tries, try{"other-stream", v.first, true, true})
	}
	if forged {
		tries = append(tries,
			try{"long-id", base + "_" + strings.Repeat("9", 4096), true, false},
			try{"non-ascii", base + "_\uff15\u00e9", true, false},
			try{"path-like", "../" + owner + "/" + base + "_0", true, false},
			try{"empty", "", true, false})
	}
	p.add(func(r *report.Isolation) { r.Streams += int64(len(vs)) })
	var before int64
	p.add(func(r *report.Isolation) { before = r.Leaked })
	var wg sync.WaitGroup
	for _, t := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.resume(ctx, at, t)
		}()
	}
	wg.Wait()
	p.end(ctx, at)
	leaked := false
	p.add(func(r *report.Isolation) { leaked = r.Leaked > before })
	return leaked
}

// end deletes a probe's session, if it has one.
func (p *isolation) end(ctx context.Context, at site) {
	if at.sid == "" {
		return
	}
	if resp, err := p.do(ctx, http.MethodDelete, at.endpoint, at.sid, nil, nil); err == nil {
		drain(resp)
	}
}

// add changes the isolation block under its lock: the probes' resumes run
// side by side.
func (p *isolation) add(f func(*report.Isolation)) {
	p.resMu.Lock()
	f(&p.res)
	p.resMu.Unlock()
}

// replicaOf is the slot an answer names in the LB's replica header, -1
// when none does.
func replicaOf(resp *http.Response) int {
	if n, err := strconv.Atoi(resp.Header.Get(lb.ReplicaHeader)); err == nil {
		return n
	}
	return -1
}

// routeWords say what each route means, in the order the note lists them.
var routeWords = []struct{ route, words string }{
	{RouteOwnerReplica, "sent to the replica that served the stream"},
	{RouteSharedReplica, "opened through the endpoint on a replica that served a sighted stream"},
	{RouteNoSharedRepl, fmt.Sprintf("none of %d sessions opened through the endpoint landed on a replica that served a sighted stream, so a store local to one replica was not reached", maxReopen)},
	{RouteReplicaUnknown, fmt.Sprintf("no answer said which replica served it, so each presented the ids from up to %d sessions, and whether any shared the stream's replica is not known", blindSessions)},
	{RouteNoSighting, "no other session's event id had been seen"},
}

// routesNote says how the probes reached the streams they presented.
func routesNote(res *report.Isolation) string {
	if res.Probes == 0 {
		return ""
	}
	var parts []string
	for _, w := range routeWords {
		if n := res.Routes[w.route]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", n, w.route, w.words))
		}
	}
	return fmt.Sprintf("isolation: %d probes from %d sessions presented the earliest event ids of %d other sessions' streams; %s",
		res.Probes, res.Sessions, res.Streams, strings.Join(parts, "; "))
}
