package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormsim/stormsim/live/redislog"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/store"
	"github.com/stormsim/stormsim/live/topo"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(command{name: "serve", summary: "run one reference MCP replica of a design (the live engine starts these)", run: serveCmd})
}

// designOf resolves a scenario's design by name.
func designOf(file, scName, design string, sets []string) (*scenario.Scenario, *scenario.Design, error) {
	f, err := scenario.Load(file, &scenario.Options{Set: sets, Target: scName})
	if err != nil {
		return nil, nil, usageError{err}
	}
	sc, err := f.Scenario(scName)
	if err != nil {
		return nil, nil, usageError{err}
	}
	for i := range sc.Designs {
		if sc.Designs[i].Name == design {
			return sc, &sc.Designs[i], nil
		}
	}
	var names []string
	for _, d := range sc.Designs {
		names = append(names, d.Name)
	}
	return nil, nil, usagef("scenario %s has no design %q (it runs: %v)", scName, design, names)
}

func serveCmd(ctx context.Context, env *Env, args []string) error {
	var file, scName, design, addr, redisAddr, logPath string
	var slot, slots int
	var set, allowHosts listFlag
	fs := newFlags(env, "serve", "--scenario S --design D [flags]",
		"Run one replica of design D of scenario S: MCP Streamable HTTP on /mcp, health on /healthz.\n"+
			"It prints \"listening on http://ADDR/mcp\" when ready. SIGTERM drains it (the replica refuses new\n"+
			"work, closes its streams with a retry hint, lets calls finish up to the drain limit) and exits 0;\n"+
			"SIGKILL is a crash. The production log records every event produced, one JSON line each.\n"+
			"A request whose Host, or Origin when it has one, names neither a loopback name, the --addr host nor an\n"+
			"--allow-host name gets 403 (DNS rebinding protection).")
	fs.StringVar(&file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&scName, "scenario", "", "`scenario` whose settings to use")
	fs.StringVar(&design, "design", "", "`design` to serve")
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "listen `address` (port 0 picks a free one)")
	fs.StringVar(&redisAddr, "redis-url", "", "Redis `URL` (redis://host:port/db or host:port), for the Redis designs")
	fs.StringVar(&logPath, "log", "", "production log `file` (none when empty); go-redis's own messages go there too, as {\"go_redis\": …} lines, instead of stderr")
	fs.Var(&set, "set", "override a scenario key, repeatable (`key=value`), as 'stormsim run --set' does")
	fs.Var(&allowHosts, "allow-host", "a host `name` (or address) clients may reach this replica by, in a Host or Origin header, besides loopback and the --addr host; repeatable; '*' allows any")
	fs.IntVar(&slot, "slot", 0, "this replica's slot")
	fs.IntVar(&slots, "slots", 1, "number of slots, for hash-minted session ids")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || scName == "" || design == "" {
		return usagef("serve: want --scenario and --design, and no arguments")
	}
	_, d, err := designOf(file, scName, design, set)
	if err != nil {
		return err
	}
	if d.Server == topology.ServerGoSDK {
		return serveSDK(ctx, env, d, addr, redisAddr, logPath)
	}
	if d.Server == topology.ServerTSSDK {
		return serveTS(d, addr, logPath, allowHosts)
	}
	cfg := replica.Config{
		Slot: slot, Slots: slots, HashMint: protocol.HashIDs(d.LB),
		Sessions: d.Sessions, Events: d.Events, Era: d.Era, Replica: d.Replica,
		Allow: protocol.NewAllow(append([]string{addr}, allowHosts...)...),
	}
	if d.Events == topology.EventsMemory {
		cfg.Store = store.NewMemory(d.Store.MemoryCapBytes, int64(d.Store.MemoryOverheadBytes))
	}
	if d.Events == topology.EventsRedis || d.Sessions == topology.SessionsShared {
		rs, closeRedis, err := redisStore(d, redisAddr)
		if err != nil {
			return err
		}
		defer closeRedis()
		if d.Events == topology.EventsRedis {
			cfg.Store = rs
		}
		cfg.Shared = rs
	}
	if logPath != "" {
		f, err := openLog(logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Log = f
		logRedisTo(f)
	}
	srv := replica.New(cfg)
	var storeBytes func() int64
	if mem, ok := cfg.Store.(*store.Memory); ok {
		storeBytes = mem.Bytes
	}
	hs, drain, err := listenAndWait(ctx, env, addr, srv, srv.Healthy, storeBytes, countRoutes(srv)...)
	if err != nil {
		return err
	}
	if drain {
		srv.Drain() // returns once the calls are done or the drain limit passed
		if logPath != "" {
			// The endpoint goes with the process: a planned stop leaves its
			// counters beside the production log.
			c := srv.Freeze(5 * time.Second) // whatever the drain limit killed has stopped
			c.Gone = true
			writeCounts(topo.CountsFile(logPath, os.Getpid()), c)
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

// redisStore connects design d's Redis store at redisAddr, with the
// design's timeouts, retention and caps; done closes the store and the
// connection.
func redisStore(d *scenario.Design, redisAddr string) (rs *store.Redis, done func(), err error) {
	if redisAddr == "" {
		return nil, nil, usagef("serve: design %s needs Redis: pass --redis-url", d.Name)
	}
	ropts, err := topo.RedisOptions(redisAddr)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--redis-url %q: %w", redisAddr, err)}
	}
	ropts.ReadTimeout, ropts.WriteTimeout = d.Store.Timeout, d.Store.Timeout
	rdb := redis.NewClient(ropts)
	rs = store.NewRedis(rdb, &store.RedisOptions{MaxLen: int64(d.Store.RedisMaxLen), TTL: d.Store.RedisTTL, SessionTTL: time.Hour})
	return rs, func() { rs.Close(); rdb.Close() }, nil
}

// listenAndWait serves mcp on /mcp, a health check on /healthz (503 when
// healthy says no) and, when storeBytes is set, the bytes its in-memory
// event store holds on /stormsim/store ({"bytes": N}; 404 without) at addr, prints "listening on http://ADDR/mcp", and
// waits for SIGTERM (drain: true, after printing "draining") or the end of
// ctx (false). The caller shuts hs down.
func listenAndWait(ctx context.Context, env *Env, addr string, mcp http.Handler, healthy func() bool, storeBytes func() int64, routes ...route) (hs *http.Server, drain bool, err error) {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.HandleFunc(r.pattern, r.h)
	}
	mux.Handle("/mcp", mcp)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !healthy() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET "+topo.StorePath, func(w http.ResponseWriter, _ *http.Request) {
		if storeBytes == nil {
			http.Error(w, "this replica keeps no in-memory event store it can measure", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"bytes\":%d}\n", storeBytes())
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false, err
	}
	hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln) //nolint:errcheck // ends with the caller's Shutdown or Close
	fmt.Fprintf(env.Stdout, "listening on http://%s/mcp\n", ln.Addr())
	if f, ok := env.Stdout.(*os.File); ok {
		f.Sync()
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	select {
	case <-term:
	case <-ctx.Done():
		// The command's context ends on SIGINT and SIGTERM alike: SIGTERM
		// reaches term as well, SIGINT does not.
		select {
		case <-term:
		case <-time.After(100 * time.Millisecond):
			return hs, false, nil
		}
	}
	// The line tells the process that started this one (stormsim's
	// topology) that the drain begins: its LB takes the replica out of
	// the pool at once, whoever sent the SIGTERM.
	fmt.Fprintln(env.Stdout, "draining")
	if f, ok := env.Stdout.(*os.File); ok {
		f.Sync()
	}
	return hs, true, nil
}

// route is one more handler of a replica's stormsim endpoint.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// countRoutes serve the reference replica's counters: GET reads them, POST
// to the freeze path stops production first (just before a hard stop, and
// at the end of a run) and returns them.
func countRoutes(srv *replica.Server) []route {
	serve := func(w http.ResponseWriter, c *replica.Counts) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c) //nolint:errcheck // the client reads what arrives
	}
	return []route{
		{"GET " + topo.CountsPath, func(w http.ResponseWriter, _ *http.Request) { serve(w, srv.Snapshot()) }},
		{"POST " + topo.FreezePath, func(w http.ResponseWriter, _ *http.Request) { serve(w, srv.Freeze(5*time.Second)) }},
	}
}

// writeCounts writes a replica's counters to path; a failure is reported on
// stderr and leaves the replica's calls not reconcilable.
func writeCounts(path string, c *replica.Counts) {
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
