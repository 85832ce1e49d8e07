package topo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// An LB process at its open-file limit refuses what it cannot relay and
// says so: with its limit lowered (prlimit) to two files above what it
// holds idle, a burst of clients, each on a connection of its own, finds
// it out of files. Each request either gets the LB's 503 naming the open
// files or is not accepted within its timeout; the process counts both
// (LBFiles), which is what a live run reads to call its own harness, not
// the design, saturated. With the limit raised again it serves at once.
func TestLBOutOfFiles(t *testing.T) {
	t.Parallel()
	top := start(t, "steady", "memory-sticky")
	pid := top.LBPID()
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		t.Fatal(err)
	}
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatal(err)
	}
	low := unix.Rlimit{Cur: uint64(len(fds) + 2), Max: old.Max}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &low, nil); err != nil {
		t.Fatal(err)
	}
	const clients = 8
	var wg sync.WaitGroup
	answers := make([]string, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = initializeOnce(top.Endpoint(), time.Second)
		}()
	}
	wg.Wait()
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil); err != nil {
		t.Fatal(err)
	}
	short := 0
	for _, a := range answers {
		if strings.Contains(a, "out of open files") || strings.Contains(a, "timeout") || strings.Contains(a, "deadline") {
			short++
		}
	}
	if short == 0 {
		t.Errorf("%d clients at a limit of %d files: none was refused or left waiting: %q", clients, low.Cur, answers)
	}
	var got string
	deadline := time.Now().Add(10 * time.Second)
	for got = initializeOnce(top.Endpoint(), 2*time.Second); got != "200" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		got = initializeOnce(top.Endpoint(), 2*time.Second)
	}
	if got != "200" {
		t.Errorf("with the limit back at %d, initialize through the LB: %s, want 200", old.Cur, got)
	}
	f, err := top.LBFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !f.Short() || f.Limit != old.Cur {
		t.Errorf("LBFiles = %+v: want files run short, and the limit read back as %d", f, old.Cur)
	}
	if s := f.String(); !strings.Contains(s, "ran out of open files") {
		t.Errorf("LBFiles says %q", s)
	}
}

// initializeOnce POSTs an initialize through endpoint on a connection of
// its own and says what came back: the status, with the body when it is
// not 200, or the error.
func initializeOnce(endpoint string, timeout time.Duration) string {
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	defer hc.CloseIdleConnections()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusOK {
		return "200"
	}
	return strconv.Itoa(resp.StatusCode) + " " + strings.TrimSpace(string(b))
}
