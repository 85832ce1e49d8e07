// Package listen is the live engine's listening client at 2026-07-28: it
// holds one client's subscriptions/listen stream against a replica (or an
// LB), re-opens it when it drops or is refused as the profile's
// listen_reopen says (clients.Listener, the simulator's own rule: after
// the backoff, or never), and counts the notifications it received by
// their seq (protocol.MetaNotifySeq), so that what it missed can be held
// to what the replicas counted they sent (Reconcile).
//
//	l := listen.New(url, "client-7", time.Now().UnixNano(), &cfg, rng, nil)
//	go l.Run(ctx)
//	...
//	got := l.Counts()
package listen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/sse"
	"github.com/stormsim/stormsim/protocol"
)

// Limits on what one listen stream may send, whatever the server does.
const (
	maxLine = 64 << 10 // bytes of one SSE line or event
	maxSeqs = 1 << 22  // distinct seqs kept per listener
)

// Client is one listener. Its fixed fields are set by New; mu guards the
// counts, read by Counts while Run goes on.
type Client struct {
	url    string
	id     string
	anchor int64
	era    string
	brain  clients.Listener
	http   *http.Client

	// OnReopen, when set before Run, is called as each re-open request
	// goes out (the live runner's per-step count for the re-listen peak).
	OnReopen func()

	mu     sync.Mutex
	counts Counts
	seqs   map[int64]struct{}
}

// Counts are what a listener counted.
type Counts struct {
	Opens    int64 // listen requests sent
	Reopens  int64 // of them, after a drop or a refusal
	Reopened int64 // streams a re-open opened
	Drops    int64 // open streams that ended without the client closing them
	Received int64 // distinct notifications received
	Phantom  int64 // notifications with a seq the schedule had not reached, or none
	MaxSeq   int64 // the highest seq received
}

// New returns a listener named id whose schedule starts at anchor (Unix
// ns), against url, following cfg with jitter from rng; hc nil is
// http.DefaultClient.
func New(url, id string, anchor int64, cfg *clients.Config, rng *rand.Rand, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{url: url, id: id, anchor: anchor, era: "2026-07-28", http: hc, seqs: map[int64]struct{}{}}
	c.brain.Init(cfg, rng)
	return c
}

// Run listens until ctx ends: it opens the stream, reads it, and after
// every drop or refusal waits the brain's backoff and opens it again; it
// returns early when the brain stops listening (listen_reopen = "none").
func (c *Client) Run(ctx context.Context, iv int64) {
	a := c.brain.Open()
	reqID := 0
	for a.Send && ctx.Err() == nil {
		if a.Delay > 0 {
			t := time.NewTimer(a.Delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		reqID++
		c.add(func(n *Counts) {
			n.Opens++
			if a.Reopen {
				n.Reopens++
			}
		})
		if a.Reopen && c.OnReopen != nil {
			c.OnReopen()
		}
		status, body := c.open(ctx, reqID)
		if next := c.brain.Answered(status, 0); status != 200 {
			a = next
			continue
		}
		if a.Reopen {
			c.add(func(n *Counts) { n.Reopened++ })
		}
		c.read(ctx, body, iv)
		body.Close()
		if ctx.Err() != nil {
			return
		}
		c.add(func(n *Counts) { n.Drops++ })
		a = c.brain.Dropped(0)
	}
}

// open sends one listen request; status 0 when none came back.
func (c *Client) open(ctx context.Context, reqID int) (int, io.ReadCloser) {
	params := map[string]any{"notifications": protocol.Subscriptions{ToolsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"stormsim://listener/" + c.id}},
		"_meta": map[string]any{protocol.MetaVersion: c.era, protocol.MetaCapabilities: map[string]any{},
			protocol.MetaListener: map[string]any{"id": c.id, "anchor": c.anchor}}}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqID, "method": protocol.MethodListen, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocol.HeaderVersion, c.era)
	req.Header.Set(protocol.HeaderMethod, protocol.MethodListen)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	return 200, resp.Body
}

// read counts the notifications of one open stream until it ends.
func (c *Client) read(ctx context.Context, body io.ReadCloser, iv int64) {
	r := sse.NewReaderLimits(body, sse.Limits{Line: maxLine, Event: maxLine, ID: 256})
	for ctx.Err() == nil {
		ev, err := r.Next()
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(ev.Data), &m) != nil {
			continue
		}
		if len(m.ID) > 0 {
			return // the subscription's result (or an error): it ended
		}
		if m.Method == protocol.MethodListenAck {
			continue
		}
		var seq int64
		json.Unmarshal(m.Params.Meta[protocol.MetaNotifySeq], &seq) //nolint:errcheck // 0: no seq, a phantom
		c.got(seq, protocol.NotifySeq(c.anchor, time.Now().UnixNano(), iv))
	}
}

// got counts notification seq, with due the last seq the schedule has
// reached: a seq past it (or none) is a phantom, a repeat counts once.
func (c *Client) got(seq, due int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.seqs[seq]; dup {
		return
	}
	if seq < 1 || seq > due+1 || len(c.seqs) >= maxSeqs {
		c.counts.Phantom++
		return
	}
	c.seqs[seq] = struct{}{}
	c.counts.Received++
	c.counts.MaxSeq = max(c.counts.MaxSeq, seq)
}

func (c *Client) add(f func(*Counts)) {
	c.mu.Lock()
	f(&c.counts)
	c.mu.Unlock()
}

// Counts returns what the listener counted so far.
func (c *Client) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

// Missing counts the seqs 1..upto the listener never received.
func (c *Client) Missing(upto int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for s := int64(1); s <= upto; s++ {
		if _, ok := c.seqs[s]; !ok {
			n++
		}
	}
	return n
}

// Sent is what the replicas counted they sent to one listener: the most any
// of them had due (each knows the whole schedule from the anchor), and the
// notifications they wrote on its streams.
func Sent(due, written []int64) (sent, wrote int64) {
	for _, d := range due {
		sent = max(sent, d)
	}
	for _, w := range written {
		wrote += w
	}
	return sent, wrote
}

// Reconcile holds a listener's counts to the replicas': it received no
// notification that was not sent (received ≤ written ≤ sent, no phantom),
// and lost = sent − received. It returns the loss, or an error naming
// what does not hold.
func Reconcile(id string, got Counts, sent, written int64) (lost int64, err error) {
	switch {
	case got.Phantom > 0:
		return 0, fmt.Errorf("listen: %s received %d notifications no schedule had sent", id, got.Phantom)
	case got.Received > written:
		return 0, fmt.Errorf("listen: %s received %d notifications, the replicas wrote %d", id, got.Received, written)
	case written > sent:
		return 0, fmt.Errorf("listen: the replicas wrote %d notifications to %s, more than the %d its schedule had", written, id, sent)
	}
	return sent - got.Received, nil
}
