package replica

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/internal/logbuf"
	"github.com/stormsim/stormsim/topology"
)

// A drain that waits for a call (drain_close = exit) ends its stream with
// the call's result, and the counters frozen right after Drain returns
// count it sent: the call's last event and the drain's closing of the
// stream come at the same moment, and the event must win. Twenty calls,
// since a lost race dropped the result about one time in two.
func TestDrainSendsTheLastResult(t *testing.T) {
	t.Parallel()
	for i := 0; i < 20; i++ {
		cfg := memoryDesign()
		cfg.Replica.DrainClose = topology.DrainCloseExit
		srv, c := newServer(t, cfg)
		c.initialize()
		resp := c.call(5, 10)
		readSSE(t, resp, 2) // priming and the first progress event
		srv.Drain()         // returns once the call has ended
		counts := srv.Freeze(0)
		rest := readSSE(t, resp, 0)
		resp.Body.Close()
		if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].Data, `"result"`) {
			t.Fatalf("call %d: the drained stream ended with %+v, want the result", i, rest)
		}
		if counts.ResultsSent != 1 {
			t.Fatalf("call %d: %d results counted sent, want 1", i, counts.ResultsSent)
		}
	}
}

// A replica's Unix socket keeps its file when the server closes it, so
// that a connection afterwards is refused, as one to a closed TCP port is:
// the LB's passive health check reads that as the replica gone.
func TestServeSocketRefusedAfterClose(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "r.sock")
	hs := &http.Server{Handler: http.NotFoundHandler()}
	if err := serveSocket(hs, sock); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Get("http://127.0.0.1/") // answered: the server serves on the socket
	if err != nil {
		t.Fatalf("a request on the open socket: %v", err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()
	hs.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the socket's file went with its listener: %v", err)
	}
	if _, err := net.Dial("unix", sock); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialling the closed socket: %v; want connection refused", err)
	}
}

// A call that reaches a replica after its counters were read for a hard
// stop (Freeze) does not begin: the production log gets no start of it and
// no counter names it, so the reconciliation finds no attempt the log has
// and the counters lack. Before, a call in that gap logged its start after
// the reading and the reconciliation of an honest replica failed on it.
func TestFrozenReplicaStartsNoCall(t *testing.T) {
	t.Parallel()
	cfg := memoryDesign()
	log := &logbuf.Buffer{}
	cfg.Log = log
	srv, c := newServer(t, cfg)
	c.initialize()
	srv.Freeze(0)
	// Answered with a stream on which nothing comes: the process is about
	// to die. The call's producer is running once the answer's headers are
	// out; a second Freeze returns once it has (a producer that did begin
	// logs its start and, its calls' context cancelled, returns at once).
	resp := c.call(5, 10)
	counts := srv.Freeze(10 * time.Second)
	resp.Body.Close()
	if got := log.String(); strings.Contains(got, `"start":true`) {
		t.Errorf("the frozen replica logged a call's start:\n%s", got)
	}
	if len(counts.Calls) != 0 {
		t.Errorf("the frozen replica counted %d calls after the reading, want 0: %+v", len(counts.Calls), counts.Calls)
	}
}
