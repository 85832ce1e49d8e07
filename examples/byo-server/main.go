// Command byo-server is a small MCP server written against the official Go
// SDK (github.com/modelcontextprotocol/go-sdk), the kind of server
// docs/own-server.md is about. It knows nothing of
// stormsim: it serves one tool, stream, behind the SDK's
// StreamableHTTPHandler with the SDK's MemoryEventStore, as the SDK's own
// examples wire it.
//
//	go run ./examples/byo-server -port 8080
//
// stream takes {"events": N, "interval_ms": I, "bytes": B} and sends N−1
// progress notifications (progress 1..N−1 of total N, each with B bytes of
// message), I ms apart, then its result: the contract stormsim's clients
// judge a server you bring by. SIGTERM drains: no new connections, running
// calls get up to -drain, then the process exits.
//
// -lose-sessions (or BYO_SERVER_LOSE_SESSIONS=1 in its environment) makes
// it a broken server on purpose: every request meets a fresh handler that
// knows no session, so every request after initialize gets 404. The
// examples/ci script must fail against it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	port := flag.Int("port", 8080, "TCP port on 127.0.0.1")
	path := flag.String("path", "/mcp", "the MCP endpoint")
	drain := flag.Duration("drain", 10*time.Second, "how long running calls may finish after SIGTERM")
	flag.BoolVar(&progress, "progress", true, "send progress notifications (false: only the result, which stormsim can judge for completion and latency alone)")
	lose := flag.Bool("lose-sessions", os.Getenv("BYO_SERVER_LOSE_SESSIONS") == "1", "a broken server on purpose: forget every session after each request (every request after initialize gets 404)")
	flag.Parse()
	if err := serve(*port, *path, *drain, *lose); err != nil {
		log.Fatal(err)
	}
}

// progress is whether stream sends its progress notifications.
var progress = true

type streamArgs struct {
	Events     int `json:"events" jsonschema:"how many events the call streams: progress notifications plus the result"`
	IntervalMS int `json:"interval_ms" jsonschema:"milliseconds between two events"`
	Bytes      int `json:"bytes,omitempty" jsonschema:"padding per progress notification"`
}

// stream sends Events−1 progress notifications, then its result.
func stream(ctx context.Context, req *mcp.CallToolRequest, a streamArgs) (*mcp.CallToolResult, any, error) {
	if a.Events < 1 || a.Events > 1_000_000 || a.IntervalMS < 0 || a.Bytes < 0 || a.Bytes > 1<<20 {
		return nil, nil, errors.New("events must be 1..1000000, interval_ms ≥ 0, bytes 0..1048576")
	}
	token := req.Params.GetProgressToken()
	pad := strings.Repeat("x", a.Bytes)
	tick := time.NewTicker(time.Duration(max(a.IntervalMS, 1)) * time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= a.Events; i++ {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-tick.C:
		}
		if i < a.Events && token != nil && progress {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ //nolint:errcheck // a lost notification is what stormsim measures
				ProgressToken: token, Progress: float64(i), Total: float64(a.Events), Message: pad})
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "streamed " + strconv.Itoa(a.Events) + " events"}}}, nil, nil
}

func serve(port int, path string, drain time.Duration, lose bool) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "byo-server", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "stream", Description: "streams progress notifications, then a result"}, stream)
	handler := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	}
	mux := http.NewServeMux()
	if lose {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { handler().ServeHTTP(w, r) })
	} else {
		mux.Handle(path, handler())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln) //nolint:errcheck // ends with Shutdown below
	fmt.Printf("byo-server: MCP on http://%s%s\n", ln.Addr(), path)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err = hs.Shutdown(sctx)
	hs.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
