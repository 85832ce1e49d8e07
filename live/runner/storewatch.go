package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/live/topo"
)

// RefusedError is a run the live engine refuses before it starts anything,
// for its input: a store fault on a Redis stormsim did not start. The CLI
// exits 2 (ExitCode), as for any bad input.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// ExitCode is 2, the CLI's code for bad input.
func (e *RefusedError) ExitCode() int { return 2 }

// How the store watcher pings the design's Redis: often enough to date an
// outage to a fraction of a second, with a timeout generous enough that a
// Redis busy on a loaded machine is not taken for a dead one.
const (
	storePingEvery   = 200 * time.Millisecond
	storeDialTimeout = time.Second
	storePingTimeout = 2 * time.Second
	// storeFailures failed pings in a row make an outage; one refused
	// connection is enough on its own.
	storeFailures = 2
)

// outage is a time the store did not answer and no scheduled fault held it
// down.
type outage struct {
	from  time.Duration // when the first failed ping was sent, from t0
	until time.Duration // when it answered again; 0 if it never did
	why   string        // what the ping got: "connection refused", …
}

// storeWatch pings the design's Redis from the runner while the run goes
// on, so that a Redis that dies (or is killed from outside) is a note and a
// mark instead of silently lost events: the live counterpart of a
// replica's unexpected exit.
type storeWatch struct {
	addr    string        // host:port, for the note (never a URL's password)
	done    chan struct{} // closed when the watch has stopped
	outages []outage      // read after done
}

// watchStore pings t's Redis every storePingEvery until ctx ends. A ping
// that fails while a scheduled store fault holds the store down, or across
// the start or end of one, is the schedule at work and not counted.
func watchStore(ctx context.Context, t *topo.Topology, t0 time.Time) (*storeWatch, error) {
	o, err := store.ParseRedisURL(t.RedisAddr())
	if err != nil {
		return nil, err
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = storeDialTimeout, storePingTimeout, storePingTimeout
	o.MaxRetries, o.PoolSize, o.MinIdleConns = -1, 1, 0
	w := &storeWatch{addr: o.Addr, done: make(chan struct{})}
	rdb := redis.NewClient(o)
	go func() {
		defer close(w.done)
		defer rdb.Close()
		tick := time.NewTicker(storePingEvery)
		defer tick.Stop()
		var cur *outage
		fails, firstFail := 0, time.Duration(0)
		for {
			select {
			case <-ctx.Done():
				if cur != nil {
					w.outages = append(w.outages, *cur)
				}
				return
			case <-tick.C:
			}
			g0, held0 := t.StoreFault()
			sent := time.Since(t0)
			pctx, cancel := context.WithTimeout(ctx, storeDialTimeout+storePingTimeout)
			err := rdb.Ping(pctx).Err()
			cancel()
			if ctx.Err() != nil {
				continue // the end of the run cut the ping short: no sample
			}
			g1, held1 := t.StoreFault()
			switch {
			case err == nil:
				if cur != nil {
					cur.until = time.Since(t0)
					w.outages = append(w.outages, *cur)
					cur = nil
				}
				fails = 0
			case held0 || held1 || g0 != g1:
				fails = 0 // a scheduled store fault; an outage already open stays open
			default:
				if fails++; fails == 1 {
					firstFail = sent
				}
				if cur == nil && (fails >= storeFailures || errors.Is(err, syscall.ECONNREFUSED)) {
					cur = &outage{from: firstFail, why: pingFailure(err)}
				}
			}
		}
	}()
	return w, nil
}

// pingFailure says in a few words why a ping failed.
func pingFailure(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF):
		return "connection closed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", storePingTimeout)
	}
	return err.Error()
}

// ms is d in seconds, rounded to the millisecond: a mark's time.
func ms(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// maxOutageNotes is how many outages get a note of their own; a Redis
// that flaps more often gets one more note with the count.
const maxOutageNotes = 5

// notes says what happened to the store, one note per outage: "redis at
// 127.0.0.1:6379 unreachable from 10.2 s: connection refused; not back by
// the end of the run (40.0 s)". end is when the run ended, from t0.
func (w *storeWatch) notes(end time.Duration) []string {
	var out []string
	for i, o := range w.outages {
		if i == maxOutageNotes {
			out = append(out, fmt.Sprintf("redis at %s was unreachable %d more times", w.addr, len(w.outages)-i))
			break
		}
		s := fmt.Sprintf("redis at %s unreachable from %.1f s: %s", w.addr, o.from.Seconds(), o.why)
		if o.until > 0 {
			s += fmt.Sprintf("; back at %.1f s", o.until.Seconds())
		} else {
			s += fmt.Sprintf("; not back by the end of the run (%.1f s)", end.Seconds())
		}
		out = append(out, s+"; no scheduled fault stopped it")
	}
	return out
}
