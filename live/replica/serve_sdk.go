package replica

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/live/sdkreplica"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// serveSDK runs a replica of the go-sdk flavour: the SDK's
// StreamableHTTPHandler with the SDK's MemoryEventStore (capped at the
// design's memory_cap_bytes), or stormsim's Redis store behind the SDK's
// EventStore interface. SIGTERM shuts the HTTP server down the way a Go
// service does: no new connections, running streams get up to the drain
// limit, then the rest are closed. Under 2026-07-28 every design is the
// SDK's stateless server with no store (sdkreplica.Config.Revision).
func serveSDK(ctx context.Context, d *scenario.Design, o *ServeOptions) error {
	addr, redisAddr, logPath := o.Addr, o.RedisAddr, o.LogPath
	caps := protocol.CapsOf(d.Era, d.Sessions, d.Events)
	cfg := sdkreplica.Config{Stateless: d.Mode == topology.ModeStateless, Era: d.Era, Revision: caps.Discover}
	events := d.Events
	if cfg.Revision {
		events = caps.Events // none: the revision has no resumption
	}
	switch events {
	case topology.EventsMemory:
		es := mcp.NewMemoryEventStore(nil)
		limit := math.MaxInt // memory_cap_bytes = 0: no cap, as in the model (the SDK's own default is 10 MiB)
		if d.Store.MemoryCapBytes > 0 {
			limit = int(d.Store.MemoryCapBytes)
		}
		es.SetMaxBytes(limit)
		cfg.Events = es
	case topology.EventsRedis:
		rs, closeRedis, err := redisStore(d, redisAddr)
		if err != nil {
			return err
		}
		defer closeRedis()
		cfg.Events = sdkreplica.NewEventStore(rs)
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
	srv := sdkreplica.New(cfg)
	hs, drain, err := listenAndWait(ctx, o.Stdout, addr, o.Socket, srv, func() bool { return true }, nil)
	if err != nil {
		return err
	}
	limit := 100 * time.Millisecond
	if drain {
		limit = d.Replica.DrainLimit
	}
	sctx, cancel := context.WithTimeout(context.Background(), max(limit, 100*time.Millisecond))
	defer cancel()
	err = hs.Shutdown(sctx)
	srv.Stop()
	hs.Close()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
