package replica

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// The handshake between a replica process and the topology that started
// it, both halves: the replica prints listeningLine with its MCP URL when
// it serves, and drainingLine when a SIGTERM begins its drain (whoever sent
// it); WatchHandshake reads them on the topology's side.
const (
	listeningLine = "listening on "
	drainingLine  = "draining"
)

// WatchHandshake reads a replica process's output until it ends: listening
// is called once, with the replica's base URL (its MCP URL without /mcp),
// when the listening line comes; draining each time the draining line
// comes after it. It reports whether the listening line came.
func WatchHandshake(out io.Reader, listening func(base string), draining func()) bool {
	sc := bufio.NewScanner(out)
	found := false
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), listeningLine); ok && !found {
			found = true
			listening(strings.TrimSuffix(u, "/mcp"))
		}
		if sc.Text() == drainingLine && found {
			draining()
		}
	}
	return found
}

// say writes one handshake line to w, at once.
func say(w io.Writer, line string) {
	fmt.Fprintln(w, line)
	if f, ok := w.(*os.File); ok {
		f.Sync()
	}
}

// listenAndWait serves mcp on /mcp, a health check on /healthz (503 when
// healthy says no) and, when storeBytes is set, the bytes its in-memory
// event store holds on StorePath ({"bytes": N}; 404 without) at addr, prints
// the listening line to stdout, and waits for SIGTERM (drain: true, after
// printing the draining line) or the end of ctx (false). The caller shuts
// hs down. With a socket path it serves the same on that Unix socket too
// (serveSocket).
func listenAndWait(ctx context.Context, stdout io.Writer, addr, socket string, mcp http.Handler, healthy func() bool, storeBytes func() int64, routes ...route) (hs *http.Server, drain bool, err error) {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.HandleFunc(r.pattern, r.h)
	}
	mux.Handle("/mcp", mcp)
	for _, r := range ownRoutes(healthy, storeBytes) {
		mux.HandleFunc(r.pattern, r.h)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false, err
	}
	hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := serveSocket(hs, socket); err != nil {
		ln.Close()
		return nil, false, err
	}
	go hs.Serve(ln) //nolint:errcheck // ends with the caller's Shutdown or Close
	say(stdout, fmt.Sprintf("%shttp://%s/mcp", listeningLine, ln.Addr()))
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
	say(stdout, drainingLine)
	return hs, true, nil
}

// serveSocket serves hs on a Unix socket at path too, if path is not
// empty: the LB of a live topology reaches the replica there. The socket's
// file stays when hs closes it, so that a connection after a drain or a
// kill is refused, as a TCP connection to a closed port is.
func serveSocket(hs *http.Server, path string) error {
	if path == "" {
		return nil
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	go hs.Serve(ln) //nolint:errcheck // ends with the caller's Shutdown or Close
	return nil
}

// ownRoutes are stormsim's own endpoints on every replica it starts, which
// are no MCP answers: /healthz (503 when healthy says no) for the load
// balancer's health checks, and StorePath, the bytes the in-memory event
// store holds ({"bytes": N}; 404 when storeBytes is nil).
func ownRoutes(healthy func() bool, storeBytes func() int64) []route {
	return []route{
		{"/healthz", func(w http.ResponseWriter, _ *http.Request) {
			if !healthy() {
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		}},
		{"GET " + StorePath, func(w http.ResponseWriter, _ *http.Request) {
			if storeBytes == nil {
				http.Error(w, "this replica keeps no in-memory event store it can measure", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "{\"bytes\":%d}\n", storeBytes())
		}},
	}
}
