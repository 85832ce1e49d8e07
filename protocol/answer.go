package protocol

import (
	"time"

	"github.com/stormsim/stormsim/clients"
)

// Session is what the session check found.
type Session uint8

// Session check results.
const (
	SessionKnown       Session = iota // the session exists (or was created, for an initialize)
	SessionMissing                    // the request carries no session id
	SessionUnknown                    // no such session here
	SessionUnavailable                // the session store did not answer
)

// Read is what the store read of a resume found.
type Read uint8

// Store read results.
const (
	ReadOK          Read = iota // the events after the cursor are there
	ReadPurged                  // some of them are gone: retention, a cap, a gap or a restart
	ReadUnknown                 // the store has no such stream: it lives (or died) in another process
	ReadUnavailable             // the store did not answer
)

// Facts are what a replica learns through I/O while it serves a request.
// Serve calls them at most once each, in this order, and only as far as it
// needs: Session, then Claim, then Read. An implementation may do the work
// (create the session, take the claim, read the events) as it answers.
type Facts interface {
	// Session checks the request's session; for an initialize it creates
	// one (only SessionKnown or SessionUnavailable then).
	Session() Session
	// Claim takes the stream's one connection; false when another
	// connection holds it.
	Claim() bool
	// Read reads the stream's events after the cursor.
	Read() Read
}

// Request is a request a replica serves.
type Request struct {
	Kind clients.Req
	// Draining: the replica has started to drain and takes no new work.
	Draining bool
}

// Answer is a replica's decision on a request.
type Answer struct {
	Status int
	Purged bool // a 400 for a resume whose events are gone
	// Draining: a draining replica refused the request before doing any
	// work, so a load balancer may send it to another replica.
	Draining bool
	// Unavailable: a store did not answer; the 503 comes when its call
	// times out.
	Unavailable bool
	// Session: an initialize that opened a session (the id goes back).
	Session bool
	// RetryHint goes with a 503 as Retry-After (0: none), in whole
	// seconds (RetryAfter).
	RetryHint time.Duration
	// Why says what the status means, for a response body.
	Why string
	// Code is the JSON-RPC error the body carries with the status (0: a
	// plain answer): CodeMethodNotFound for a method the server lacks, the
	// revision's header and _meta errors (Check). Data goes with it.
	Code int
	Data any
}

// OK reports whether the request is served: a stream or a result follows.
func (a Answer) OK() bool { return (a.Status == 200 || a.Status == 202) && a.Code == 0 }

// Fixed answers outside a design's rules.
var (
	// Unreachable is what a client gets when no replica takes the
	// connection: none in the LB's pool, or one that is down or cut off.
	Unreachable = Answer{Status: 503, Why: "replica unreachable"}
	// Malformed answers a request that is not valid MCP (a bad body or
	// Last-Event-ID).
	Malformed = Answer{Status: 400, Why: "malformed request"}
	// NoMethod answers an HTTP method the endpoint does not serve.
	NoMethod = Answer{Status: 405, Why: "method not allowed"}
	// NoBody answers a served message that gets no answer: a notification
	// or a response.
	NoBody = Answer{Status: 202}
)

// Serve answers request r, asking f for its facts in the fixed order. A
// caller that gets a status of 200 or 202 carries the request out.
func (c Caps) Serve(r Request, f Facts) Answer {
	switch r.Kind {
	case clients.ReqInitialize:
		if c.Discover {
			return c.NotFound("initialize")
		}
		return c.initialize(r, f)
	case clients.ReqInitialized:
		if c.Discover {
			return c.NotFound("notifications/initialized")
		}
		return c.withSession(f, Answer{Status: 202})
	case clients.ReqNone:
		// Any other message (tools/list, a notification): the session
		// check alone.
		return c.withSession(f, Answer{Status: 200})
	case clients.ReqDiscover:
		switch {
		case !c.Discover:
			return c.NotFound("server/discover")
		case r.Draining:
			return draining
		}
		return Answer{Status: 200}
	case clients.ReqCall:
		if a := c.withSession(f, Answer{Status: 200}); !a.OK() {
			return a
		}
		if r.Draining {
			return draining
		}
		return Answer{Status: 200}
	case clients.ReqListen:
		return c.serveListen(r)
	case clients.ReqStandalone, clients.ReqDelete:
		if !c.Sessions {
			return NoMethod
		}
		return c.withSession(f, Answer{Status: 200})
	case clients.ReqResume:
		return c.resume(f)
	}
	return NoMethod
}

var draining = Answer{Status: 503, Draining: true, Why: "draining"}

// NotFound answers a request for a method the server does not have: a
// JSON-RPC -32601 error, sent with 200 before 2026-07-28 and with 404
// from it on (Caps.Discover), which tells a client that this server
// speaks only the new revision (initialize and the other methods it
// removed are answered so).
func (c Caps) NotFound(method string) Answer {
	a := Answer{Status: 200, Code: CodeMethodNotFound, Why: "method not found: " + method}
	if c.Discover {
		a.Status = 404
	}
	return a
}

func (c Caps) initialize(r Request, f Facts) Answer {
	if r.Draining {
		return draining
	}
	if !c.Sessions {
		return Answer{Status: 200}
	}
	if f.Session() == SessionUnavailable {
		return Answer{Status: 503, Unavailable: true, Why: "session store unavailable"}
	}
	return Answer{Status: 200, Session: true}
}

// withSession checks the session of a request that needs one, when the
// design keeps sessions, and answers ok when it is there.
func (c Caps) withSession(f Facts, ok Answer) Answer {
	if !c.Sessions {
		return ok
	}
	switch f.Session() {
	case SessionMissing:
		return Answer{Status: 400, Why: "missing Mcp-Session-Id"}
	case SessionUnknown:
		return Answer{Status: 404, Why: "unknown session"}
	case SessionUnavailable:
		return Answer{Status: 503, Unavailable: true, Why: "session store unavailable"}
	}
	return ok
}

// resume answers a GET with Last-Event-ID. The claim comes before the
// store read, as the live replica needs it to avoid replaying a stream
// twice: a second resume of a purged stream gets 409, not 400.
func (c Caps) resume(f Facts) Answer {
	if !c.Sessions {
		return NoMethod
	}
	if a := c.withSession(f, Answer{Status: 200}); !a.OK() {
		return a
	}
	if !c.HasStore() {
		return Answer{Status: 400, Why: "no event store: cannot resume"}
	}
	if !f.Claim() {
		return Answer{Status: 409, Why: "stream already has a connection"}
	}
	switch f.Read() {
	case ReadPurged:
		return Answer{Status: 400, Purged: true, Why: "events purged"}
	case ReadUnknown:
		return Answer{Status: 400, Why: "unknown stream: it is not in this replica's store"}
	case ReadUnavailable:
		return Answer{Status: 503, Unavailable: true, Why: "event store unavailable"}
	}
	return Answer{Status: 200}
}
