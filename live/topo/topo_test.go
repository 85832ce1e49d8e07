package topo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/redisd"
	"github.com/stormsim/stormsim/scenario"
)

var bin string

// TestMain builds the stormsim binary the replicas run.
func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }

func start(t *testing.T, scName, design string) *Topology {
	t.Helper()
	f, err := scenario.Load("../../scenarios.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario(scName)
	var d *scenario.Design
	for i := range sc.Designs {
		if sc.Designs[i].Name == design {
			d = &sc.Designs[i]
		}
	}
	abs, _ := filepath.Abs("../../scenarios.toml")
	top, err := Start(context.Background(), sc, d, &Options{Bin: bin, File: abs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pids := top.PIDs()
		top.Close()
		for _, p := range pids {
			if redisd.Alive(p) {
				t.Errorf("process %d outlived the topology", p)
			}
		}
	})
	return top
}

// connect opens a go-sdk client session through the topology's LB, counting
// the progress notifications it receives.
func connect(t *testing.T, top *Topology, progress *atomic.Int64) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "stormsim-test", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	limit := wait.For(wait.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: top.Endpoint()}, nil)
	if err != nil {
		t.Fatalf("go-sdk client: waited up to %v to connect through the LB at %s: %v", limit, top.Endpoint(), err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callStream(ctx context.Context, cs *mcp.ClientSession, events, intervalMS int) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "stream", Meta: mcp.Meta{"progressToken": "t"},
		Arguments: map[string]any{"events": events, "interval_ms": intervalMS}})
}

// The official go-sdk client calls stream through the LB and gets every
// progress event and the result.
func TestGoSDKClientStreams(t *testing.T) {
	t.Parallel()
	top := start(t, "steady", "memory-sticky")
	var progress atomic.Int64
	cs := connect(t, top, &progress)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := callStream(ctx, cs, 20, 10)
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	if n := waitFor(&progress, 19); n != 19 {
		t.Errorf("%d progress notifications, want 19", n)
	}
}

// After the proxy cuts its connection, the go-sdk client resumes with
// Last-Event-ID on a design that can, and loses nothing.
func TestGoSDKClientResumes(t *testing.T) {
	t.Parallel()
	top := start(t, "steady", "redis-shared")
	var progress atomic.Int64
	cs := connect(t, top, &progress)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := callStream(ctx, cs, 60, 25)
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		done <- err
	}()
	for progress.Load() < 10 {
		select {
		case err := <-done:
			t.Fatalf("the call ended before 10 progress events (%d): %v", progress.Load(), err)
		case <-ctx.Done():
			t.Fatalf("only %d progress events in 30 s", progress.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
	top.Apply(ctx, faults.Step{Kind: faults.StepClientDrop, Fraction: 1})
	if err := <-done; err != nil {
		t.Fatalf("the call did not survive the cut: %v", err)
	}
	if n := waitFor(&progress, 59); n != 59 {
		t.Errorf("%d progress notifications after the cut, want all 59", n)
	}
}

// After a hard restart of a memory design, the go-sdk client fails with its
// session-missing error: the session died with the process.
func TestGoSDKClientSessionMissing(t *testing.T) {
	t.Parallel()
	top := start(t, "steady", "memory-sticky")
	var progress atomic.Int64
	cs := connect(t, top, &progress)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := callStream(ctx, cs, 2, 1); err != nil {
		t.Fatal(err)
	}
	for slot := 0; slot < 3; slot++ { // every replica restarts hard
		top.Apply(ctx, faults.Step{Kind: faults.StepStop, Replica: slot})
		if err := top.Apply(ctx, faults.Step{Kind: faults.StepStart, Replica: slot}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := callStream(ctx, cs, 2, 1)
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("call after a hard restart: %v, want mcp.ErrSessionMissing", err)
	}
}

// waitFor gives the client's notification handlers, which run concurrently
// with the call's return, up to 2 s to deliver want notifications.
func waitFor(n *atomic.Int64, want int64) int64 {
	for deadline := time.Now().Add(2 * time.Second); n.Load() < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return n.Load()
}

// Streams that follow another request on a kept-alive connection to the LB
// get every event: the LB once cut about 1% of them right after their first
// event, with replicas in their own processes.
func TestKeptAliveStreamsAreWhole(t *testing.T) {
	t.Parallel()
	top := start(t, "steady", "memory-sticky")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	do := func(session, body string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", top.Endpoint(), strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		return client.Do(req)
	}
	const clients, calls = 200, 6
	errs := make(chan string, clients*calls)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := do("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
			if err != nil {
				errs <- err.Error()
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			sess := r.Header.Get("Mcp-Session-Id")
			for k := range calls {
				if r, err = do(sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err == nil {
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
					r, err = do(sess, fmt.Sprintf(`{"jsonrpc":"2.0","id":"c%d","method":"tools/call","params":{"name":"stream","arguments":{"events":3,"interval_ms":50}}}`, k))
				}
				if err != nil {
					errs <- err.Error()
					return
				}
				body, _ := io.ReadAll(r.Body)
				r.Body.Close()
				if !bytes.Contains(body, []byte(`"result"`)) {
					errs <- fmt.Sprintf("a stream ended without its result: %q", body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 3 {
			t.Error(e)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d calls went wrong", n, clients*calls)
	}
}

// An own server's command runs with a GOTMPDIR of the topology's own,
// which Close removes with whatever a `go run` left there (its go-build*
// folders stay behind when it is killed).
func TestOwnServerGoTmpRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen := filepath.Join(dir, "gotmp")
	shipped, _ := filepath.Abs("../../scenarios.toml")
	command := fmt.Sprintf(`mkdir "$GOTMPDIR/go-build123" && echo "$GOTMPDIR" > %s && exec %s serve --file %s --scenario steady --design memory-sticky --addr 127.0.0.1:{port}`,
		seen, bin, shipped)
	file := filepath.Join(dir, "o.toml")
	src := fmt.Sprintf("[scenario.o]\nreplicas = 1\ndesigns = [\"memory-sticky\"]\n[scenario.o.server]\ncommand = %q\nready_timeout = \"60s\"\n", command)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("o")
	top, err := Start(context.Background(), sc, &sc.Designs[0], &Options{Bin: bin, File: file})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(seen)
	gotmp := strings.TrimSpace(string(b))
	if err != nil || !strings.Contains(filepath.Base(gotmp), "stormsim-gotmp-") {
		top.Close()
		t.Fatalf("the command ran with GOTMPDIR %q (%v), want a folder of the topology's own", gotmp, err)
	}
	if _, err := os.Stat(filepath.Join(gotmp, "go-build123")); err != nil {
		t.Errorf("the command's build folder is not there while it runs: %v", err)
	}
	top.Close()
	if _, err := os.Stat(gotmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("GOTMPDIR %s outlived the topology (%v)", gotmp, err)
	}
}
