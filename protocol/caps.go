package protocol

import "github.com/stormsim/stormsim/topology"

// DefaultEra is the era a replica speaks when none is given.
const DefaultEra = "2025-11-25"

// era is what a protocol version offers a server.
type era struct {
	sessions  bool // Mcp-Session-Id, the standalone GET and DELETE
	resume    bool // event ids and Last-Event-ID resumption
	priming   bool // a stream opens with an empty priming event that has an id
	pollClose bool // a server may close a stream with a retry hint (SSE polling)
	// discover: no initialize; a client opens with server/discover, every
	// request carries its _meta and the revision's headers (2026-07-28).
	discover bool
	// cancelOnClose: closing a response stream cancels its call on the
	// server (2026-07-28); before, an abandoned call keeps running.
	cancelOnClose bool
	// listen: a client receives server notifications on a long-lived
	// subscriptions/listen POST stream, replayed never (2026-07-28).
	listen bool
}

// eras are the protocol versions stormsim models (topology.Eras lists
// their names for the loader).
var eras = map[string]era{
	"2025-06-18": {sessions: true, resume: true},
	"2025-11-25": {sessions: true, resume: true, priming: true, pollClose: true},
	"2026-07-28": {discover: true, cancelOnClose: true, listen: true}, // stateless: no sessions, no resumption
}

// Caps is what one design's replica can do: its era and axes resolved
// into features. It is the one place an era's name is read.
type Caps struct {
	Era string
	// Sessions: the server keeps sessions. False is "stateless", the one
	// field both engines read for it.
	Sessions bool
	// Shared: sessions live in Redis, seen by every replica.
	Shared bool
	// Events is where a stream's events are kept for a resume:
	// topology.EventsNone, EventsMemory or EventsRedis (none when the era
	// has no resumption).
	Events string
	// NoResume: the era has no resumption at all, so a client is never
	// told an event id.
	NoResume bool
	// Priming: a stream opens with an empty priming event that has an id.
	Priming bool
	// PollClose: the server may close a stream with a retry hint.
	PollClose bool
	// Discover: the era has no initialize and no initialized notification;
	// server/discover describes the server, and each request carries what
	// it needs in _meta, checked against the revision's headers (Check).
	// A method the server lacks, the removed ones among them, is a 404
	// with a JSON-RPC -32601 body.
	Discover bool
	// CancelOnClose: a response stream that closes before its result
	// cancels the call on the server: its work and its events stop. In the
	// eras before, a disconnect cancels nothing.
	CancelOnClose bool
	// Listen: the server serves subscriptions/listen (listen.go), the one
	// channel of server notifications, with no replay after a drop. In the
	// eras before, the standalone GET stream is that channel.
	Listen bool
}

// CapsOf resolves an era ("" is DefaultEra) and a design's sessions and
// events axes. An era it does not know has every feature of DefaultEra;
// the loader refuses such eras before a run.
func CapsOf(eraName, sessions, events string) Caps {
	if eraName == "" {
		eraName = DefaultEra
	}
	er, ok := eras[eraName]
	if !ok {
		er = eras[DefaultEra]
	}
	c := Caps{Era: eraName, NoResume: !er.resume, Events: events, Discover: er.discover, CancelOnClose: er.cancelOnClose, Listen: er.listen}
	c.Sessions = er.sessions && sessions != "" && sessions != topology.SessionsNone
	c.Shared = c.Sessions && sessions == topology.SessionsShared
	if !er.resume || events == "" {
		c.Events = topology.EventsNone
	}
	c.Priming = c.Events != topology.EventsNone && er.priming
	c.PollClose = c.Events != topology.EventsNone && er.pollClose
	return c
}

// HasStore reports whether streams are kept for a resume.
func (c Caps) HasStore() bool { return c.Events != topology.EventsNone }

// HashIDs reports whether a design's session ids must hash back to the
// replica that minted them: under an LB policy that routes by the id alone
// (topology.HomeRouter, such as hash; the minting is topology.MintSession).
func HashIDs(lb string) bool { return topology.HomeIDs(lb) }
