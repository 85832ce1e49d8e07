package listen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/internal/wait"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/protocol"
)

var bin string

func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }

const listenToml = `
[design.rev]
mode = "stateless"
sessions = "none"
events = "none"
era = "2026-07-28"
[scenario.s]
designs = ["rev"]
[scenario.s.workload]
notification_rate = 20.0
`

// serve starts a `stormsim serve` replica of design rev at addr and
// returns its endpoint and process.
func serve(t *testing.T, file, addr string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--file", file, "--scenario", "s", "--design", "rev", "--addr", addr)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("serve printed nothing")
	}
	u, ok := strings.CutPrefix(sc.Text(), "listening on ")
	if !ok {
		t.Fatalf("first line %q", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return u, cmd
}

// counts reads (freeze: stops first) a replica's counters.
func counts(t *testing.T, endpoint string, freeze bool) *replica.Counts {
	t.Helper()
	u, _ := url.Parse(endpoint)
	u.Path = replica.CountsPath
	method := http.MethodGet
	if freeze {
		u.Path, method = replica.FreezePath, http.MethodPost
	}
	req, _ := http.NewRequest(method, u.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c replica.Counts
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// until polls cond for at most wait.For(wait.Ready), saying what it waited for.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait.For(wait.Ready))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", wait.For(wait.Ready), what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListenRestart: a real replica process at 2026-07-28 sends a listen
// stream its notifications; a hard restart (SIGKILL, a new process on the
// same address 700 ms later) drops the stream, the client re-opens it under
// its backoff, and the replicas' count of what they sent minus what the
// client received is the client's own count of the seqs it never got,
// which is at least what 700 ms of downtime at 20/s must lose.
func TestListenRestart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(file, []byte(listenToml), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint, first := serve(t, file, "127.0.0.1:0")
	addr, _ := url.Parse(endpoint)
	cfg, _ := clients.Profile("compliant")
	cfg.Strategy, cfg.Jitter, cfg.Base = clients.StrategyConstant, clients.JitterNone, 200*time.Millisecond
	l := New(endpoint, "listener-1", time.Now().UnixNano(), &cfg, rand.New(rand.NewPCG(1, 2)), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	iv := protocol.NotifyInterval(20)
	go func() { l.Run(ctx, iv); close(done) }()
	until(t, "10 notifications before the restart", func() bool { return l.Counts().Received >= 10 })

	old := counts(t, endpoint, true) // what the hard stop leaves, read just before it
	first.Process.Kill()
	first.Wait()
	const down = 700 * time.Millisecond
	time.Sleep(down)
	second, _ := serve(t, file, addr.Host)
	before := l.Counts().Received
	until(t, "the re-opened stream's notifications", func() bool { return l.Counts().Received >= before+10 })
	cancel()
	<-done
	// The replica may not have seen the close yet: its due then runs to
	// now, and the seqs past the client's last are missing on both sides.
	now := counts(t, second, false)

	got := l.Counts()
	o, n := old.Listeners["listener-1"], now.Listeners["listener-1"]
	if o == nil || n == nil {
		t.Fatalf("listener-1 missing from the counters: before %+v after %+v", old.Listeners, now.Listeners)
	}
	sent, written := Sent([]int64{o.Due, n.Due}, []int64{o.Written, n.Written})
	lost, err := Reconcile("listener-1", got, sent, written)
	if err != nil {
		t.Fatal(err)
	}
	if got.Drops < 1 || got.Reopened < 1 {
		t.Errorf("drops %d, reopened %d: the restart did not drop and re-open the stream", got.Drops, got.Reopened)
	}
	if missing := l.Missing(sent); missing != lost {
		t.Errorf("sent %d − received %d = %d, but the client never got %d of seqs 1..%d", sent, got.Received, lost, missing, sent)
	}
	if min := int64(down.Seconds() * 20 * 0.9); lost < min {
		t.Errorf("lost %d notifications over a %v restart at 20/s, want at least %d", lost, down, min)
	}
	t.Logf("sent %d (due), written %d, received %d, lost %d, client %+v", sent, written, got.Received, lost, got)
}

// TestListenReopenNone: under listen_reopen = "none" (the go-sdk profile)
// Run returns once its stream drops, or once its listen request is
// refused, having sent that one request and re-opened nothing, as the
// simulator's listeners do (both follow clients.Listener).
func TestListenReopenNone(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusOK, http.StatusServiceUnavailable} {
		var posts atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			posts.Add(1)
			if status != http.StatusOK {
				http.Error(w, http.StatusText(status), status)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":%q,\"params\":{}}\n\n", protocol.MethodListenAck)
		})) // the handler's return ends the stream: a drop
		cfg, _ := clients.Profile("go-sdk")
		l := New(srv.URL, "listener-1", time.Now().UnixNano(), &cfg, rand.New(rand.NewPCG(1, 2)), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l.Run(ctx, protocol.NotifyInterval(20))
		timedOut := ctx.Err() != nil
		cancel()
		srv.Close()
		got, drops := l.Counts(), int64(0)
		if status == http.StatusOK {
			drops = 1
		}
		if timedOut || posts.Load() != 1 || got.Opens != 1 || got.Reopens != 0 || got.Drops != drops {
			t.Errorf("status %d: Run timed out %v, %d listen requests, counts %+v; want it to return after one request, %d drops and no re-open",
				status, timedOut, posts.Load(), got, drops)
		}
	}
}
