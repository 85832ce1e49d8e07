// Package store holds the live engine's event and session stores: an
// in-memory store with go-sdk's semantics (a byte cap for the whole replica,
// purging the oldest event of every stream in turn) and a Redis store over
// go-redis (Redis Streams for events, records with a TTL for sessions, and a
// lease per running call so that an orphaned call is detected).
//
// Both follow the semantics the simulator models in topology: a replay is
// all or nothing, and a replay that would miss an event fails with
// ErrPurged, which a replica answers with 400.
//
// Redis key layout (every key of a session shares its hash tag, so a
// cluster keeps them on one shard):
//
//	stormsim:{<session>}:session          string, the session record, TTL session_ttl
//	stormsim:{<session>}:streams          set of the session's stream ids
//	stormsim:{<session>}:s:<stream>       stream: one entry per event, ID "<index>-1",
//	                                      fields d (the data) and f ("1" on the final event);
//	                                      XADD MAXLEN redis_maxlen (exact), EXPIRE redis_ttl
//	stormsim:{<session>}:lease:<stream>   string, set while the call runs, PX lease
//	stormsim:{<session>}:call:<stream>    string, the call's JSON-RPC request id, EXPIRE redis_ttl
package store

import (
	"context"
	"errors"
)

// ErrPurged is returned by After when events after the cursor are no longer
// stored (evicted, expired, lost in an outage or a restart): the replay
// cannot be complete, so it does not happen.
var ErrPurged = errors.New("store: events purged")

// ErrUnknownStream is returned for a stream the store never had.
var ErrUnknownStream = errors.New("store: unknown stream")

// Event is one stored SSE event of a stream.
type Event struct {
	Index int64
	Data  []byte
	Final bool // the call's result: the stream ends here
}

// Events stores the events of a replica's streams. Implementations are safe
// for concurrent use.
type Events interface {
	// Append stores the event with index (0 is the priming event) as the
	// next of (session, stream). Indices must increase by one. The store
	// may keep ev.Data as it is: the caller does not change it afterwards.
	Append(ctx context.Context, session, stream string, ev Event) error
	// After returns every stored event of (session, stream) with an index
	// above after, in order, or ErrPurged if any of them is missing.
	After(ctx context.Context, session, stream string, after int64) ([]Event, error)
	// SessionClosed drops every stream of the session.
	SessionClosed(ctx context.Context, session string) error
}
