package drift

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/tsdk"
)

// breaker is an MCP server that answers initialize, opens each tools/call
// as an SSE stream with a priming event (with a retry: hint when hint > 0)
// and one progress event, then resets the connection; every GET that
// resumes is reset too (or answered 503 when refuse is set). It records
// when the call's stream broke and when each resume came.
type breaker struct {
	hint   time.Duration
	refuse bool
	// progress answers each resume with one new event, then resets it.
	progress bool
	// missing answers each resume 404, as a server that lost the session.
	missing bool

	mu      sync.Mutex
	broke   time.Time
	resumes []time.Time
}

func (b *breaker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		if r.Header.Get("Last-Event-ID") == "" {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		b.mu.Lock()
		b.resumes = append(b.resumes, time.Now())
		b.mu.Unlock()
		if b.refuse {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		if b.missing {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`)
			return
		}
		if b.progress {
			b.mu.Lock()
			k := len(b.resumes) + 1
			b.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "id: st_%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"drift\",\"progress\":%d,\"total\":100}}\n\n", k, k)
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
		reset(w)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta struct {
				Token any `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &m) //nolint:errcheck // an unreadable body is answered 202
	switch m.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"breaker","version":"1"}}}`, m.ID)
	case "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if b.hint > 0 {
			fmt.Fprintf(w, "id: st_0\nretry: %d\ndata: \n\n", b.hint.Milliseconds())
		} else {
			fmt.Fprint(w, "id: st_0\ndata: \n\n")
		}
		tok, _ := json.Marshal(m.Params.Meta.Token)
		fmt.Fprintf(w, "id: st_1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1,\"total\":10}}\n\n", tok)
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		b.mu.Lock()
		b.broke = time.Now()
		b.mu.Unlock()
		reset(w)
	default:
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
	}
}

// reset closes the connection under the handler: the client sees the
// network fail.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// measured is what one SDK did after one stream break.
type measured struct {
	Delays []time.Duration // between the break and the first resume, then between resumes
}

func (b *breaker) measured() measured {
	b.mu.Lock()
	defer b.mu.Unlock()
	var m measured
	prev := b.broke
	for _, t := range b.resumes {
		m.Delays = append(m.Delays, t.Sub(prev))
		prev = t
	}
	return m
}

func (b *breaker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.resumes)
}

// constSrc is a rand source that always draws the same: 0 gives a jitter's
// least, all ones its most.
type constSrc uint64

func (s constSrc) Uint64() uint64 { return uint64(s) }

// slack is how late a measured delay may come beyond the profile's most:
// the timers of a loaded 2-core machine, never a bound on the SDK.
func slack(d time.Duration) time.Duration { return 300*time.Millisecond + d/5 }

// early is how early a measured delay may come before the profile's least:
// the break is stamped just before the connection closes.
const early = 60 * time.Millisecond

// drift compares what the SDK did after a break, every resume reset, with
// profile p: the number of resumes (max_retries) and each delay within the
// least and the most p's backoff and jitter give. It returns every
// mismatch.
func drift(p clients.Config, m measured) []string {
	var out []string
	if len(m.Delays) != p.MaxRetries {
		out = append(out, fmt.Sprintf("max_retries: the SDK resumed %d times, the profile says %d", len(m.Delays), p.MaxRetries))
	}
	lo, hi := rand.New(constSrc(0)), rand.New(constSrc(^uint64(0)))
	for n, d := range m.Delays {
		if n >= p.MaxRetries {
			break
		}
		least, most := clients.Delay(&p, n, 0, lo), clients.Delay(&p, n, 0, hi)
		if d < least-early || d > most+slack(most) {
			out = append(out, fmt.Sprintf("delay before resume %d: the SDK waited %v, the profile says %v to %v (base %v, factor %g, jitter %s)",
				n+1, d.Round(time.Millisecond), least, most, p.Base, p.Factor, p.Jitter))
		}
	}
	return out
}

// hintDrift compares the first delay after a break whose stream carried a
// retry: hint with profile p's honor_retry_hint.
func hintDrift(p clients.Config, hint time.Duration, m measured) []string {
	if len(m.Delays) == 0 {
		return []string{"the SDK never resumed"}
	}
	// Honoured when the first delay is nearer the hint than the least the
	// profile's backoff waits without one.
	d := m.Delays[0]
	least := clients.Delay(&p, 0, 0, rand.New(constSrc(0)))
	honoured := d >= hint-early && d < (hint+least)/2
	if honoured != p.HonorRetryHint {
		return []string{fmt.Sprintf("honor_retry_hint: the SDK waited %v after a %v hint (honoured: %v), the profile says %v", d.Round(time.Millisecond), hint, honoured, p.HonorRetryHint)}
	}
	return nil
}

// refuseDrift compares what the SDK did when its resume got 503 with
// profile p's retry_on: "network" resumes once and gives up, "any" retries.
func refuseDrift(p clients.Config, resumes int) []string {
	on := clients.RetryOnNetwork
	if resumes > 1 {
		on = clients.RetryOnAny
	}
	if on != p.RetryOn {
		return []string{fmt.Sprintf("retry_on: the SDK resumed %d times when each resume got 503 (%s), the profile says %q", resumes, on, p.RetryOn)}
	}
	return nil
}

// progressDrift compares how many times the SDK resumed when every resume
// brought one new event and then broke with profile p's reset_on_progress:
// a client whose retry count starts again on progress keeps resuming past
// max_retries.
func progressDrift(p clients.Config, resumes int) []string {
	resets := resumes > p.MaxRetries
	if resets != p.ResetOnProgress {
		return []string{fmt.Sprintf("reset_on_progress: the SDK resumed %d times when every resume brought an event and then broke (resets: %v), the profile says %v", resumes, resets, p.ResetOnProgress)}
	}
	return nil
}

// giveUpDrift compares what became of the call when every resume got 404
// with profile p's resume_give_up: rejected is whether the SDK ended the
// call once it stopped resuming. "fail" ends it at the first 404; "wait"
// retries the 404 as any failed resume (max_retries resumes) and leaves the
// call pending.
func giveUpDrift(p clients.Config, resumes int, rejected bool) []string {
	got := clients.GiveUpWait
	if rejected {
		got = clients.GiveUpFail
	}
	if got != p.ResumeGiveUp {
		return []string{fmt.Sprintf("resume_give_up: after %d resumes answered 404 the SDK's call was rejected: %v (%s), the profile says %q", resumes, rejected, got, p.ResumeGiveUp)}
	}
	want := 1
	if got == clients.GiveUpWait {
		want = p.MaxRetries
	}
	if resumes != want {
		return []string{fmt.Sprintf("resume_give_up: the SDK resumed %d times when each resume got 404, the profile (%q, max_retries %d) says %d", resumes, p.ResumeGiveUp, p.MaxRetries, want)}
	}
	return nil
}

// checkProfile fails t on every drift, then changes one profile number
// (mutate) and requires that the same measurements show drift.
func checkProfile(t *testing.T, name string, found func(clients.Config) []string, mutate func(*clients.Config)) {
	t.Helper()
	p, err := clients.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range found(p) {
		t.Errorf("%s profile drifts from the SDK: %s", name, d)
	}
	mut := p
	mutate(&mut)
	if len(found(mut)) == 0 {
		t.Errorf("%s profile with one number changed: the measurements show no drift; the check cannot fail", name)
	}
}

// goSDKBreak runs the go-sdk client (StreamableClientTransport, its
// defaults) against b until its call fails, or until it has resumed stop
// times (0: no limit).
func goSDKBreak(t *testing.T, b *breaker, stop int) measured {
	m, _ := goSDKCall(t, b, stop)
	return m
}

// goSDKCall is goSDKBreak that also says whether the SDK ended the call
// itself (rejected) rather than the test's deadline or stop.
func goSDKCall(t *testing.T, b *breaker, stop int) (measured, bool) {
	srv := httptest.NewServer(b)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "drift", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if stop > 0 {
		go func() {
			for ctx.Err() == nil && b.count() < stop {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}()
	}
	params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{"events": 10}}
	params.SetProgressToken("drift")
	if _, err := cs.CallTool(ctx, params); err == nil {
		t.Fatal("the call succeeded against a server that breaks every stream")
	}
	return b.measured(), ctx.Err() == nil
}

// tsSDKBreak runs one ts-sdk client (node/clients.mjs: the SDK's Client
// over StreamableHTTPClientTransport, its defaults) against b. The SDK
// does not end the call when it gives up reconnecting, so the break is
// over once no resume has come for quiet after the last (or stop resumes
// came).
func tsSDKBreak(t *testing.T, b *breaker, stop int, quiet time.Duration) measured {
	m, _ := tsSDKCall(t, b, stop, quiet)
	return m
}

// tsSDKCall is tsSDKBreak that also says whether the SDK ended the call
// (rejected: node/clients.mjs reported its outcome) by the time the resumes
// were over.
func tsSDKCall(t *testing.T, b *breaker, stop int, quiet time.Duration) (measured, bool) {
	node, script, err := tsdk.Program("clients.mjs")
	if err != nil {
		t.Fatalf("%v (make test runs make node first)", err)
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	cmd := exec.Command(node, script)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }() //nolint:errcheck // it may be gone
	var rejected atomic.Bool
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m struct {
				Done bool `json:"done"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Done {
				rejected.Store(true)
			}
		}
	}()
	fmt.Fprintf(in, `{"op":"call","client":0,"seq":0,"endpoint":%q,"name":"stream","arguments":{"events":10},"token":"drift"}`+"\n", srv.URL)
	deadline := time.Now().Add(2 * time.Minute)
	last, n := time.Now(), 0
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if k := b.count(); k != n {
			last, n = time.Now(), k
		}
		if stop > 0 && n >= stop || n > 0 && time.Since(last) > quiet || n == 0 && time.Since(last) > quiet+5*time.Second {
			break
		}
	}
	return b.measured(), rejected.Load()
}

// TestDriftGoSDK measures go-sdk v1.8's client against the go-sdk profile.
func TestDriftGoSDK(t *testing.T) {
	t.Parallel()
	var reset, hinted measured
	var refused int
	var wg sync.WaitGroup
	var onProgress, missing int
	var missingRejected bool
	wg.Add(5)
	go func() {
		defer wg.Done()
		b := &breaker{progress: true}
		goSDKBreak(t, b, 8)
		onProgress = b.count()
	}()
	go func() {
		defer wg.Done()
		b := &breaker{missing: true}
		_, missingRejected = goSDKCall(t, b, 0)
		missing = b.count()
	}()
	go func() { defer wg.Done(); reset = goSDKBreak(t, &breaker{}, 0) }()
	go func() { defer wg.Done(); hinted = goSDKBreak(t, &breaker{hint: 100 * time.Millisecond}, 2) }()
	go func() { defer wg.Done(); b := &breaker{refuse: true}; goSDKBreak(t, b, 0); refused = b.count() }()
	wg.Wait()
	t.Logf("go-sdk: resets: %d resumes, delays %v; 100ms hint: first delay %v; 503: %d resumes", len(reset.Delays), reset.Delays, hinted.Delays[:min(1, len(hinted.Delays))], refused)
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return drift(p, reset) }, func(p *clients.Config) { p.Base = 2 * time.Second })
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return drift(p, reset) }, func(p *clients.Config) { p.MaxRetries = 4 })
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return hintDrift(p, 100*time.Millisecond, hinted) }, func(p *clients.Config) { p.HonorRetryHint = false })
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return refuseDrift(p, refused) }, func(p *clients.Config) { p.RetryOn = clients.RetryOnAny })
	t.Logf("go-sdk: %d resumes when each brought an event", onProgress)
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return progressDrift(p, onProgress) }, func(p *clients.Config) { p.ResetOnProgress = false })
	t.Logf("go-sdk: %d resumes answered 404, the call rejected: %v", missing, missingRejected)
	checkProfile(t, "go-sdk", func(p clients.Config) []string { return giveUpDrift(p, missing, missingRejected) }, func(p *clients.Config) { p.ResumeGiveUp = clients.GiveUpWait })
}

// TestDriftTSSDK measures the TypeScript SDK 1.32.2's client against the
// ts-sdk profile.
func TestDriftTSSDK(t *testing.T) {
	t.Parallel()
	var reset, hinted measured
	var refused int
	var wg sync.WaitGroup
	var onProgress, missing int
	var missingRejected bool
	wg.Add(5)
	go func() {
		defer wg.Done()
		b := &breaker{progress: true}
		tsSDKBreak(t, b, 5, 6*time.Second)
		onProgress = b.count()
	}()
	go func() {
		defer wg.Done()
		b := &breaker{missing: true}
		_, missingRejected = tsSDKCall(t, b, 0, 6*time.Second)
		missing = b.count()
	}()
	var resetRejected, refusedRejected bool
	go func() { defer wg.Done(); reset, resetRejected = tsSDKCall(t, &breaker{}, 0, 6*time.Second) }()
	go func() {
		defer wg.Done()
		hinted = tsSDKBreak(t, &breaker{hint: 100 * time.Millisecond}, 0, 3*time.Second)
	}()
	go func() {
		defer wg.Done()
		b := &breaker{refuse: true}
		_, refusedRejected = tsSDKCall(t, b, 0, 6*time.Second)
		refused = b.count()
	}()
	wg.Wait()
	t.Logf("ts-sdk: resets: %d resumes, delays %v; 100ms hint: delays %v; 503: %d resumes", len(reset.Delays), reset.Delays, hinted.Delays, refused)
	checkProfile(t, "ts-sdk", func(p clients.Config) []string { return drift(p, reset) }, func(p *clients.Config) { p.Factor = 2 })
	checkProfile(t, "ts-sdk", func(p clients.Config) []string { return drift(p, reset) }, func(p *clients.Config) { p.MaxRetries = 3 })
	checkProfile(t, "ts-sdk", func(p clients.Config) []string { return hintDrift(p, 100*time.Millisecond, hinted) }, func(p *clients.Config) { p.HonorRetryHint = false })
	t.Logf("ts-sdk: %d resumes when each brought an event", onProgress)
	checkProfile(t, "ts-sdk", func(p clients.Config) []string { return progressDrift(p, onProgress) }, func(p *clients.Config) { p.ResetOnProgress = !p.ResetOnProgress })
	t.Logf("ts-sdk: %d resumes answered 404, the call rejected: %v", missing, missingRejected)
	checkProfile(t, "ts-sdk", func(p clients.Config) []string { return giveUpDrift(p, missing, missingRejected) }, func(p *clients.Config) { p.ResumeGiveUp = clients.GiveUpFail })
	// Out of retries after resets or 503s, the call is left pending too.
	t.Logf("ts-sdk: the call rejected after its resumes were reset: %v; after 503s: %v", resetRejected, refusedRejected)
	for what, rejected := range map[string]bool{"reset": resetRejected, "answered 503": refusedRejected} {
		checkProfile(t, "ts-sdk", func(p clients.Config) []string {
			if rejected != (p.ResumeGiveUp == clients.GiveUpFail) {
				return []string{fmt.Sprintf("resume_give_up: with every resume %s, the SDK's call was rejected: %v, the profile says %q", what, rejected, p.ResumeGiveUp)}
			}
			return nil
		}, func(p *clients.Config) { p.ResumeGiveUp = clients.GiveUpFail })
	}
	checkProfile(t, "ts-sdk", func(p clients.Config) []string { return refuseDrift(p, refused) }, func(p *clients.Config) {
		if p.RetryOn == clients.RetryOnAny {
			p.RetryOn = clients.RetryOnNetwork
		} else {
			p.RetryOn = clients.RetryOnAny
		}
	})
}
