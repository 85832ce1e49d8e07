package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/internal/cpuprof"
	"github.com/stormsim/stormsim/live/redislog"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// InputError is a problem with what Serve was given (a design that needs
// Redis without a Redis URL, a URL that does not parse): the command line
// exits 2 for it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ServeOptions are what a replica process is told besides its design:
// `stormsim serve`'s flags.
type ServeOptions struct {
	Addr       string   // listen address (port 0 picks a free one)
	RedisAddr  string   // Redis URL, for the Redis designs
	LogPath    string   // production log file; none when empty
	Socket     string   // a Unix socket path to serve on too; none when empty
	AllowHosts []string // host names besides loopback and Addr's host that a Host or Origin may name
	Slot       int      // this replica's slot
	Slots      int      // number of slots, for hash-minted session ids
	// NotifyRate is the scenario's workload.notification_rate: the
	// notifications per second each listen stream gets.
	NotifyRate float64
	// Stdout is where the handshake lines go (Listening, Draining): the
	// topology that started the process reads them.
	Stdout io.Writer
}

// Serve runs one replica of design d until ctx ends (a crash: nothing
// drains) or SIGTERM (a drain), whichever server the design names: the
// reference replica of this package, the go-sdk replica, or the ts-sdk
// replica, which replaces this process.
func Serve(ctx context.Context, d *scenario.Design, o *ServeOptions) error {
	switch d.Server {
	case topology.ServerGoSDK:
		return serveSDK(ctx, d, o)
	case topology.ServerTSSDK:
		return serveTS(d, o.Addr, o.Socket, o.LogPath, o.AllowHosts)
	}
	defer cpuprof.Start("replica-" + strconv.Itoa(o.Slot))()
	cfg, done, err := ConfigOf(d, o)
	if err != nil {
		return err
	}
	defer done()
	srv := New(cfg)
	var storeBytes func() int64
	if mem, ok := cfg.Store.(*store.Memory); ok {
		storeBytes = mem.Bytes
	}
	hs, drain, err := listenAndWait(ctx, o.Stdout, o.Addr, o.Socket, srv, srv.Healthy, storeBytes, countRoutes(srv)...)
	if err != nil {
		return err
	}
	if drain {
		srv.Drain() // returns once the calls are done or the drain limit passed
		if o.LogPath != "" {
			// The endpoint goes with the process: a planned stop leaves its
			// counters beside the production log.
			c := srv.Freeze(5 * time.Second) // whatever the drain limit killed has stopped
			c.Gone = true
			writeCounts(CountsFile(o.LogPath, os.Getpid()), c)
		}
	} else {
		srv.Kill()
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	hs.Close()
	return nil
}

// ConfigOf maps design d and the process's options to the reference
// replica's Config: its stores (memory, Redis, or none), the shared session
// table, its production log. done closes what it opened.
func ConfigOf(d *scenario.Design, o *ServeOptions) (cfg Config, done func(), err error) {
	cfg = Config{
		Slot: o.Slot, Slots: o.Slots, HashMint: protocol.HashIDs(d.LB),
		Sessions: d.Sessions, Events: d.Events, Era: d.Era, Replica: d.Replica, NotifyRate: o.NotifyRate,
		Allow: protocol.NewAllow(append([]string{o.Addr}, o.AllowHosts...)...),
	}
	var closers []func()
	done = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if d.Events == topology.EventsMemory {
		cfg.Store = store.NewMemory(d.Store.MemoryCapBytes, int64(d.Store.MemoryOverheadBytes))
	}
	if d.Events == topology.EventsRedis || d.Sessions == topology.SessionsShared {
		rs, closeRedis, err := redisStore(d, o.RedisAddr)
		if err != nil {
			return Config{}, nil, err
		}
		closers = append(closers, closeRedis)
		if d.Events == topology.EventsRedis {
			cfg.Store = rs
		}
		cfg.Shared = rs
	}
	if o.LogPath != "" {
		f, err := openLog(o.LogPath)
		if err != nil {
			done()
			return Config{}, nil, err
		}
		closers = append(closers, func() { f.Close() })
		cfg.Log = f
		logRedisTo(f)
	}
	return cfg, done, nil
}

// redisStore connects design d's Redis store at redisAddr, with the
// design's timeouts, retention and caps; done closes the store and the
// connection.
func redisStore(d *scenario.Design, redisAddr string) (rs *store.Redis, done func(), err error) {
	if redisAddr == "" {
		return nil, nil, &InputError{fmt.Errorf("serve: design %s needs Redis: pass --redis-url", d.Name)}
	}
	ropts, err := store.ParseRedisURL(redisAddr)
	if err != nil {
		return nil, nil, &InputError{fmt.Errorf("--redis-url %q: %w", redisAddr, err)}
	}
	ropts.ReadTimeout, ropts.WriteTimeout = d.Store.Timeout, d.Store.Timeout
	rdb := redis.NewClient(ropts)
	rs = store.NewRedis(rdb, &store.RedisOptions{MaxLen: int64(d.Store.RedisMaxLen), TTL: d.Store.RedisTTL, SessionTTL: time.Hour})
	return rs, func() { rs.Close(); rdb.Close() }, nil
}

// StorePath is where a reference replica reports the bytes its in-memory
// event store holds, as {"bytes": N}; 404 when it keeps none it can measure.
const StorePath = "/stormsim/store"

// CountsPath is where a reference replica serves its counters
// (Counts, as JSON); FreezePath, POSTed to, stops its production
// first. A replica that drains writes them to CountsFile when it stops.
const (
	CountsPath = "/stormsim/counts"
	FreezePath = "/stormsim/counts/freeze"
)

// CountsFile is where a replica with production log logPath and process id
// pid leaves its counters when a planned stop ends it.
func CountsFile(logPath string, pid int) string {
	return fmt.Sprintf("%s.counts-%d.json", strings.TrimSuffix(logPath, ".jsonl"), pid)
}

// route is one more handler of a replica's stormsim endpoint.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// countRoutes serve the reference replica's counters: GET reads them, POST
// to the freeze path stops production first (just before a hard stop, and
// at the end of a run) and returns them.
func countRoutes(srv *Server) []route {
	serve := func(w http.ResponseWriter, c *Counts) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c) //nolint:errcheck // the client reads what arrives
	}
	return []route{
		{"GET " + CountsPath, func(w http.ResponseWriter, _ *http.Request) { serve(w, srv.Snapshot()) }},
		{"POST " + FreezePath, func(w http.ResponseWriter, _ *http.Request) { serve(w, srv.Freeze(5*time.Second)) }},
	}
}

// writeCounts writes a replica's counters to path; a failure is reported on
// stderr and leaves the replica's calls not reconcilable.
func writeCounts(path string, c *Counts) {
	b, err := json.Marshal(c)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: writing the counters to %s: %v\n", path, err)
	}
}

// openLog opens a replica's production log for appending: a restarted
// replica adds to the lines its predecessor wrote.
func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// logRedisTo sends go-redis's own log lines to the production log f, the
// first 1000 of them, as {"go_redis": LINE, "t_ns": N} lines: the live
// runner moves them to the run's log. Without a production log they go to
// stderr, as go-redis prints them. They go to f until the process ends: a
// line after f is closed is lost, never printed.
func logRedisTo(f *os.File) {
	redislog.To(redislog.Capped(1000, func(msg string) {
		line, _ := json.Marshal(map[string]any{"go_redis": msg, "t_ns": time.Now().UnixNano()})
		f.Write(append(line, '\n')) //nolint:errcheck // nowhere better to say it
	}))
}
