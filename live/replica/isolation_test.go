package replica

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Another session presenting a live stream's event id is answered 400 with
// none of its events, with the owner's stream open or not, and never holds
// up the owner's own resume: a stream is claimed per session (before that,
// the foreign GET got 409 while the owner's stream was open, and could make
// the owner's resume 409 while it held the claim).
func TestOtherSessionsStream(t *testing.T) {
	t.Parallel()
	_, a := newServer(t, memoryDesign())
	b := &client{t: t, url: a.url}
	a.initialize()
	b.initialize()
	resp := a.call(40, 10)
	first := readSSE(t, resp, 3) // priming, 1, 2; the stream stays open
	cursor := first[2].ID
	for _, tc := range []struct {
		name string
		c    *client
	}{
		{"another session", b},
		{"no session", &client{t: t, url: a.url}},
	} {
		r := tc.c.do("GET", nil, map[string]string{"Last-Event-ID": cursor})
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "progress") {
			t.Errorf("%s, owner's stream open: %d %q, want 400 and none of its events", tc.name, r.StatusCode, body)
		}
	}
	resp.Body.Close() // the owner drops
	time.Sleep(100 * time.Millisecond)
	// The foreign GET and the owner's resume, at once: the owner's gets its
	// events whatever the order.
	done := make(chan int, 1)
	go func() {
		r := b.do("GET", nil, map[string]string{"Last-Event-ID": cursor})
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		done <- r.StatusCode
	}()
	got := readSSE(t, a.do("GET", nil, map[string]string{"Last-Event-ID": cursor}), 0)
	if st := <-done; st != http.StatusBadRequest {
		t.Errorf("another session, owner resuming: %d, want 400", st)
	}
	if len(got) != 38 || !strings.Contains(got[37].Data, `"result"`) {
		t.Errorf("the owner's resume gave %d events, want 38 ending with the result", len(got))
	}
}
