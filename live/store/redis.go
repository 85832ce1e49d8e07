package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configures a Redis store. A nil *RedisOptions means the
// defaults.
type RedisOptions struct {
	MaxLen     int64         // events kept per stream (exact XADD MAXLEN); 0 = all
	TTL        time.Duration // a stream expires this long after its last append; 0 = never
	SessionTTL time.Duration // a session record expires this long after its last touch; 0 = never
}

// Redis keeps events in Redis Streams and sessions as records with a TTL.
// It is safe for concurrent use; every field is fixed at creation.
//
// Appends from concurrent producers are batched: a few writer goroutines
// each take every append waiting at that moment and send them in one
// pipeline, so that a replica streaming thousands of calls makes one round
// trip per batch instead of one per event. An Append still returns only
// once its own event is stored (or failed).
type Redis struct {
	rdb     redis.UniversalClient
	opts    RedisOptions
	appends chan *appendOp
	start   sync.Once
	done    chan struct{}
	close   sync.Once
}

// opPool recycles appendOps: a busy replica appends thousands a second.
// An op goes back to the pool only once its result was read.
var opPool = sync.Pool{New: func() any { return &appendOp{err: make(chan error, 1)} }}

// appendOp is one Append waiting for its batch.
type appendOp struct {
	session, stream string
	ev              Event
	err             chan error
}

const (
	appendWriters = 4   // batches in flight at once
	appendBatch   = 256 // appends per pipeline at most
	// ttlEvery: the TTL is refreshed on a stream's first event, on every
	// ttlEvery-th and on its final one, not on every event: a stream whose
	// producer dies may expire up to ttlEvery−1 events sooner than TTL after
	// its last append.
	ttlEvery = 16
)

var _ Events = (*Redis)(nil)

// NewRedis returns a store over rdb.
func NewRedis(rdb redis.UniversalClient, opts *RedisOptions) *Redis {
	r := &Redis{rdb: rdb, appends: make(chan *appendOp, 4*appendBatch), done: make(chan struct{})}
	if opts != nil {
		r.opts = *opts
	}
	return r
}

// Close stops the batch writers; appends after Close fail. It does not
// close rdb.
func (r *Redis) Close() error {
	r.close.Do(func() { close(r.done) })
	return nil
}

// ErrClosed is returned by an Append after Close.
var ErrClosed = errors.New("store: closed")

func sessionKey(session string) string { return "stormsim:{" + session + "}:session" }
func streamsKey(session string) string { return "stormsim:{" + session + "}:streams" }
func streamKey(session, stream string) string {
	return "stormsim:{" + session + "}:s:" + stream
}
func leaseKey(session, stream string) string {
	return "stormsim:{" + session + "}:lease:" + stream
}
func callKey(session, stream string) string {
	return "stormsim:{" + session + "}:call:" + stream
}

func entryID(index int64) string { return strconv.FormatInt(index, 10) + "-1" }

// cursorID is the stream ID just before the event after the cursor: "0-0"
// for a cursor before the priming event.
func cursorID(after int64) string {
	if after < 0 {
		return "0-0"
	}
	return entryID(after)
}

func entryIndex(id string) (int64, error) {
	ms, _, ok := strings.Cut(id, "-")
	if !ok {
		return 0, fmt.Errorf("store: bad stream entry id %q", id)
	}
	return strconv.ParseInt(ms, 10, 64)
}

// Append adds the event with XADD (exact MAXLEN), in a pipeline with
// the other appends waiting at the same moment. The stream joins its
// session's set on its first event; its TTL is refreshed as ttlEvery says.
func (r *Redis) Append(ctx context.Context, session, stream string, ev Event) error {
	r.start.Do(func() {
		for range appendWriters {
			go r.writer()
		}
	})
	select {
	case <-r.done:
		return ErrClosed
	default:
	}
	op := opPool.Get().(*appendOp)
	op.session, op.stream, op.ev = session, stream, ev
	select {
	case r.appends <- op: // the common case: room in the queue
	default:
		select {
		case r.appends <- op:
		case <-ctx.Done():
			opPool.Put(op)
			return fmt.Errorf("store: append %s/%s #%d: %w", session, stream, ev.Index, ctx.Err())
		case <-r.done:
			opPool.Put(op)
			return ErrClosed
		}
	}
	// The batch is bounded by the client's read and write timeouts, so
	// the wait needs no select of its own.
	err := <-op.err
	opPool.Put(op)
	if err != nil {
		return fmt.Errorf("store: append %s/%s #%d: %w", session, stream, ev.Index, err)
	}
	return nil
}

// writer sends batches of waiting appends until Close.
func (r *Redis) writer() {
	batch := make([]*appendOp, 0, appendBatch)
	for {
		batch = batch[:0]
		select {
		case op := <-r.appends:
			batch = append(batch, op)
		case <-r.done:
			for { // answer what is still queued, then stop
				select {
				case op := <-r.appends:
					op.err <- ErrClosed
				default:
					return
				}
			}
		}
	fill:
		for len(batch) < appendBatch {
			select {
			case op := <-r.appends:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		r.flush(batch)
	}
}

// flush stores one batch in one pipeline and tells every Append its result.
func (r *Redis) flush(batch []*appendOp) {
	ctx := context.Background() // the client's read and write timeouts bound it
	p := r.rdb.Pipeline()
	counts := make([]int, len(batch)) // commands queued per append
	for i, op := range batch {
		before := p.Len()
		key := streamKey(op.session, op.stream)
		args := &redis.XAddArgs{Stream: key, ID: entryID(op.ev.Index), Values: []any{"d", op.ev.Data}}
		if op.ev.Final {
			args.Values = []any{"d", op.ev.Data, "f", "1"}
		}
		if r.opts.MaxLen > 0 {
			// Exact, as the simulator trims: a stream keeps its last MaxLen
			// events, so both engines evict the same ones. Redis then trims
			// on every append past the limit (one entry marked deleted in
			// the stream's first node, whose memory goes with its last
			// entry), where "~" trims only whole nodes and keeps up to a
			// node's worth (stream-node-max-entries, 100) more.
			args.MaxLen = r.opts.MaxLen
		}
		p.XAdd(ctx, args)
		first := op.ev.Index <= 1
		if first {
			p.SAdd(ctx, streamsKey(op.session), op.stream)
		}
		if r.opts.TTL > 0 && (first || op.ev.Final || op.ev.Index%ttlEvery == 0) {
			p.Expire(ctx, key, r.opts.TTL)
		}
		if r.opts.TTL > 0 && (first || op.ev.Final) {
			p.Expire(ctx, streamsKey(op.session), r.opts.TTL)
		}
		counts[i] = p.Len() - before
	}
	cmds, err := p.Exec(ctx)
	k := 0
	for i, op := range batch {
		var e error
		for _, c := range cmds[k:min(k+counts[i], len(cmds))] {
			if e == nil && c.Err() != nil {
				e = c.Err()
			}
		}
		if len(cmds) == 0 && err != nil {
			e = err // nothing was sent
		}
		k += counts[i]
		op.err <- e
	}
}

// After replays with XRANGE from just after the cursor. It fails with
// ErrPurged when the first event returned is not the next index, when the
// indices have a gap, or when the stream is gone though the cursor says it
// had events.
func (r *Redis) After(ctx context.Context, session, stream string, after int64) ([]Event, error) {
	key := streamKey(session, stream)
	msgs, err := r.rdb.XRange(ctx, key, "("+cursorID(after), "+").Result()
	if err != nil {
		return nil, fmt.Errorf("store: replay %s/%s: %w", session, stream, err)
	}
	if len(msgs) == 0 {
		n, err := r.rdb.Exists(ctx, key).Result()
		if err != nil {
			return nil, fmt.Errorf("store: replay %s/%s: %w", session, stream, err)
		}
		if n == 0 {
			return nil, ErrPurged // expired, trimmed away or lost in a restart
		}
		return nil, nil
	}
	return decode(msgs, after)
}

// decode turns stream entries into events, checking they follow after
// without a gap.
func decode(msgs []redis.XMessage, after int64) ([]Event, error) {
	out := make([]Event, 0, len(msgs))
	next := after + 1
	for _, m := range msgs {
		idx, err := entryIndex(m.ID)
		if err != nil {
			return nil, err
		}
		if idx != next {
			return nil, ErrPurged
		}
		d, _ := m.Values["d"].(string)
		f, _ := m.Values["f"].(string)
		out = append(out, Event{Index: idx, Data: []byte(d), Final: f == "1"})
		next++
	}
	return out, nil
}

// Follow blocks (XREAD BLOCK) until events after the cursor exist, for at
// most block, and returns them; none when the wait ran out. A replica that
// resumes a stream another replica produces follows it with this.
func (r *Redis) Follow(ctx context.Context, session, stream string, after int64, block time.Duration) ([]Event, error) {
	res, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{streamKey(session, stream), cursorID(after)}, Block: block, Count: 1000}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: follow %s/%s: %w", session, stream, err)
	}
	if len(res) == 0 {
		return nil, nil
	}
	return decode(res[0].Messages, after)
}

// SessionClosed deletes the session's streams, leases and record.
func (r *Redis) SessionClosed(ctx context.Context, session string) error {
	streams, err := r.rdb.SMembers(ctx, streamsKey(session)).Result()
	if err != nil {
		return fmt.Errorf("store: close %s: %w", session, err)
	}
	keys := []string{sessionKey(session), streamsKey(session)}
	for _, s := range streams {
		keys = append(keys, streamKey(session, s), leaseKey(session, s), callKey(session, s))
	}
	if err := r.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("store: close %s: %w", session, err)
	}
	return nil
}

// CreateSession writes the session record; any replica can then serve it.
func (r *Redis) CreateSession(ctx context.Context, session string) error {
	if err := r.rdb.Set(ctx, sessionKey(session), "1", r.opts.SessionTTL).Err(); err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	return nil
}

// SessionExists reads the session record and refreshes its TTL.
func (r *Redis) SessionExists(ctx context.Context, session string) (bool, error) {
	var n int64
	var err error
	if r.opts.SessionTTL > 0 {
		n, err = r.rdb.Exists(ctx, sessionKey(session)).Result()
		if err == nil && n > 0 {
			err = r.rdb.Expire(ctx, sessionKey(session), r.opts.SessionTTL).Err()
		}
	} else {
		n, err = r.rdb.Exists(ctx, sessionKey(session)).Result()
	}
	if err != nil {
		return false, fmt.Errorf("store: session: %w", err)
	}
	return n > 0, nil
}

// Lease marks a call as running for d; the producer renews it while it
// works. A follower that finds no lease and no final event knows the call
// is orphaned.
func (r *Redis) Lease(ctx context.Context, session, stream string, d time.Duration) error {
	if err := r.rdb.Set(ctx, leaseKey(session, stream), "1", d).Err(); err != nil {
		return fmt.Errorf("store: lease: %w", err)
	}
	return nil
}

// StartCall takes a call's first lease, as Lease does, and keeps the call's
// JSON-RPC request id (for as long as its stream, TTL redis_ttl), so that
// a replica that ends the stream of an orphaned call answers that id.
func (r *Redis) StartCall(ctx context.Context, session, stream string, reqID []byte, d time.Duration) error {
	pipe := r.rdb.Pipeline()
	pipe.Set(ctx, leaseKey(session, stream), "1", d)
	pipe.Set(ctx, callKey(session, stream), reqID, r.opts.TTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: lease: %w", err)
	}
	return nil
}

// CallID is the request id StartCall kept for the call, or nil when there
// is none.
func (r *Redis) CallID(ctx context.Context, session, stream string) ([]byte, error) {
	id, err := r.rdb.Get(ctx, callKey(session, stream)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: call id: %w", err)
	}
	return id, nil
}

// Leased reports whether the call's lease is still held.
func (r *Redis) Leased(ctx context.Context, session, stream string) (bool, error) {
	n, err := r.rdb.Exists(ctx, leaseKey(session, stream)).Result()
	if err != nil {
		return false, fmt.Errorf("store: lease: %w", err)
	}
	return n > 0, nil
}

// StreamBytes is what every event stream in rdb holds: the sum of MEMORY
// USAGE (all samples) over the keys of the stream layout above, the measure
// 'stormsim calibrate' fits the store model's bytes per event to. Session
// records, stream sets and leases are not counted. A stream that expires
// while it is being measured counts 0.
func StreamBytes(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var total int64
	var cursor uint64
	for {
		keys, next, err := rdb.ScanType(ctx, cursor, "stormsim:{*}:s:*", 1000, "stream").Result()
		if err != nil {
			return 0, fmt.Errorf("store: SCAN: %w", err)
		}
		if len(keys) > 0 {
			pipe := rdb.Pipeline()
			cmds := make([]*redis.IntCmd, len(keys))
			for i, k := range keys {
				cmds[i] = pipe.MemoryUsage(ctx, k, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return 0, fmt.Errorf("store: MEMORY USAGE: %w", err)
			}
			for _, c := range cmds {
				n, err := c.Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					return 0, fmt.Errorf("store: MEMORY USAGE: %w", err)
				}
				total += n
			}
		}
		if cursor = next; cursor == 0 {
			return total, nil
		}
	}
}

// StreamStat is what XINFO STREAM says of one call's stream.
type StreamStat struct {
	Exists       bool
	EntriesAdded int64 // every entry ever added, trimmed ones included (Redis 7)
	Length       int64
	FirstIndex   int64 // the index of the first entry held; -1 when empty
}

// StreamInfo reads XINFO STREAM of (session, stream): an independent count
// of what the stream took, which trimming does not lower.
func StreamInfo(ctx context.Context, rdb redis.UniversalClient, session, stream string) (StreamStat, error) {
	info, err := rdb.XInfoStream(ctx, streamKey(session, stream)).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return StreamStat{FirstIndex: -1}, nil
		}
		return StreamStat{}, err
	}
	st := StreamStat{Exists: true, EntriesAdded: info.EntriesAdded, Length: info.Length, FirstIndex: -1}
	if info.Length > 0 {
		if i, err := entryIndex(info.FirstEntry.ID); err == nil {
			st.FirstIndex = i
		}
	}
	return st, nil
}

// ParseRedisURL reads a Redis URL (redis://host:port/db), or a bare
// host:port.
func ParseRedisURL(u string) (*redis.Options, error) {
	if !strings.Contains(u, "://") {
		return &redis.Options{Addr: u}, nil
	}
	return redis.ParseURL(u)
}
