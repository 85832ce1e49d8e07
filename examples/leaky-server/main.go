// Command leaky-server is a small MCP server with a mistake stormsim's
// isolation probes are there to catch: its event store is keyed by event id
// alone, one store shared by every session. It serves the same stream tool
// as examples/byo-server, behind the official Go SDK's
// StreamableHTTPHandler, and resumes work for every client; but whoever
// presents an event id as Last-Event-ID, on any session, is replayed that
// stream's events. That is how "adding resumability" with one shared store
// (or one Redis keyspace) leaks one user's data to another.
//
//	go run ./examples/leaky-server -port 8080
//
// Do not copy its store: docs/own-server.md shows how to key a store by
// session. examples/leaky-example.toml runs stormsim against it, and the
// run fails (exit 99) on events_leaked.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	port := flag.Int("port", 8080, "TCP port on 127.0.0.1")
	flag.Parse()
	if err := serve(*port); err != nil {
		log.Fatal(err)
	}
}

// leakyStore is the mistake: events keyed by "<stream>_<index>", the event
// id the client sees, in one map for every session. The session the SDK
// passes is ignored, so After answers any session that names the id.
type leakyStore struct {
	mu     sync.Mutex
	events map[string][]byte // by event id
	next   map[string]int    // each stream's next index
}

var _ mcp.EventStore = (*leakyStore)(nil)

func (s *leakyStore) Open(_ context.Context, _, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.next[stream]; !ok {
		s.next[stream] = 0
	}
	return nil
}

func (s *leakyStore) Append(_ context.Context, _, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next[stream]
	s.next[stream] = i + 1
	s.events[stream+"_"+strconv.Itoa(i)] = data
	return nil
}

// After replays the events after index by looking up their ids: the
// session is never consulted. This is the leak.
func (s *leakyStore) After(_ context.Context, _, stream string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		s.mu.Lock()
		var out [][]byte
		for i := index + 1; ; i++ {
			d, ok := s.events[stream+"_"+strconv.Itoa(i)]
			if !ok {
				break
			}
			out = append(out, d)
		}
		s.mu.Unlock()
		for _, d := range out {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed cannot find the session's events: the store does not know
// which are whose.
func (s *leakyStore) SessionClosed(context.Context, string) error { return nil }

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
		if i < a.Events && token != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ //nolint:errcheck // a lost notification is what stormsim measures
				ProgressToken: token, Progress: float64(i), Total: float64(a.Events), Message: pad})
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "streamed " + strconv.Itoa(a.Events) + " events"}}}, nil, nil
}

func serve(port int) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "leaky-server", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "stream", Description: "streams progress notifications, then a result"}, stream)
	store := &leakyStore{events: map[string][]byte{}, next: map[string]int{}}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: store})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln) //nolint:errcheck // ends with Shutdown below
	fmt.Printf("leaky-server: MCP on http://%s/mcp\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	hs.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
