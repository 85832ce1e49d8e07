package runner

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/sse"
	"github.com/stormsim/stormsim/scenario"
)

// What a server under test can send that stormsim refuses to trust: the
// guard counts each, and the design's notes say how many there were.
//
// A result must answer the call: the native client takes a JSON-RPC
// response only with its own call's id. A response with the id of another
// of its requests (wrongID), one with an id it never sent (unsolicited)
// and a message that is not JSON (invalidJSON) end the stream as protocol
// errors: the call is never counted completed on them.
//
// A redirect never leaves the origin the clients were aimed at: a redirect
// to another scheme, host or port is refused (the call fails with
// errCrossOrigin's cause), and a redirect within the origin is followed up
// to maxRedirects hops, each hop a request of the history.

// Kinds of protocol error, as the request's Err starts.
const (
	protoWrongID     = "protocol error: a response with the id of another request"
	protoUnsolicited = "protocol error: a response to a request never sent"
	protoInvalidJSON = "protocol error: a message that is not valid JSON"
)

// maxRedirects is how many redirects within the origin one request follows.
const maxRedirects = 5

// errCrossOrigin and errRedirectLoop fail a request whose redirect is not
// followed.
var (
	errCrossOrigin  = errors.New("redirect to another origin")
	errRedirectLoop = fmt.Errorf("more than %d redirects", maxRedirects)
)

// guard counts, for one design's run, what its clients refused. Its fields
// are atomic: every client adds to them from its own goroutine.
type guard struct {
	wrongID, unsolicited, invalidJSON atomic.Int64
	hintsClamped                      atomic.Int64 // retry hints above sse.MaxRetry
	absurdProgress                    atomic.Int64 // index progress values over progressIndex's bound
	crossOrigin, tooMany, hops        atomic.Int64 // redirects refused, refused past maxRedirects, followed
	limits                            [nLimits]atomic.Int64
	lim                               scenario.Limits // fixed at creation
}

// The limits of scenario.Limits, as the guard counts their hits.
const (
	limEvent = iota
	limLine
	limBody
	limEvents
	limID
	limSession
	nLimits
)

// limitKeys are the limits' scenario keys.
var limitKeys = [nLimits]string{"limits.event_bytes", "limits.line_bytes", "limits.body_bytes", "limits.events_per_call", "limits.id_bytes", "limits.session_id_bytes"}

// value is limit k's value in the run.
func (g *guard) value(k int) int {
	l := &g.lim
	return [nLimits]int{l.EventBytes, l.LineBytes, l.BodyBytes, l.EventsPerCall, l.IDBytes, l.SessionIDBytes}[k]
}

// hit counts a hit of limit k and returns the cause a call fails with.
func (g *guard) hit(k int) string {
	g.limits[k].Add(1)
	return g.cause(k)
}

// cause is the cause of a call that limit k failed.
func (g *guard) cause(k int) string {
	return fmt.Sprintf("limit: %s = %d exceeded", limitKeys[k], g.value(k))
}

// sseLimits are the native clients' SSE reader's limits.
func (g *guard) sseLimits() sse.Limits {
	return sse.Limits{Line: g.lim.LineBytes, Event: g.lim.EventBytes, ID: g.lim.IDBytes}
}

// streamLimit is the limit a stream's read error says was hit; -1 none.
func streamLimit(err error) int {
	switch {
	case errors.Is(err, sse.ErrLineTooLong):
		return limLine
	case errors.Is(err, sse.ErrEventTooLarge):
		return limEvent
	case errors.Is(err, sse.ErrIDTooLong):
		return limID
	}
	return -1
}

// limitResponse applies the body and session-id limits to an answer to
// an SDK client's request (go-sdk and ts-sdk alike): an error for a
// session id over its limit; a body that is not a stream then fails when
// read past its limit.
func (g *guard) limitResponse(initialize bool, resp *http.Response) error {
	if initialize && len(resp.Header.Get("Mcp-Session-Id")) > g.lim.SessionIDBytes {
		return errors.New(g.hit(limSession))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &limitedBody{ReadCloser: resp.Body, g: g, left: int64(g.lim.BodyBytes)}
	}
	return nil
}

// limitedBody is a response body that fails past the body limit, so that
// an SDK that reads a JSON body whole reads no more than that.
type limitedBody struct {
	io.ReadCloser
	g    *guard
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New(b.g.hit(limBody))
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left <= 0 && err == nil {
		// One more byte says whether the body goes on past the limit.
		var one [1]byte
		if m, _ := b.ReadCloser.Read(one[:]); m > 0 {
			return n, errors.New(b.g.hit(limBody))
		}
	}
	return n, err
}

// redirect decides whether a request to orig that was redirected to loc,
// after hops redirects already followed, may go on: nil, errCrossOrigin or
// errRedirectLoop. It is the one redirect rule of every client
// implementation (CheckRedirect of the native and go-sdk clients, the
// ts-sdk clients' recording proxy), and counts what it decides.
func (g *guard) redirect(orig, loc *url.URL, hops int) error {
	if !sameOrigin(orig, loc) {
		g.crossOrigin.Add(1)
		return errCrossOrigin
	}
	if hops >= maxRedirects {
		g.tooMany.Add(1)
		return errRedirectLoop
	}
	g.hops.Add(1)
	return nil
}

// sameOrigin reports whether a and b share scheme, host and port (the
// scheme's default port when none is written).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// checkRedirect is the CheckRedirect of the http.Client the go-sdk
// clients use: the client follows what redirect allows.
func (g *guard) checkRedirect(req *http.Request, via []*http.Request) error {
	return g.redirect(via[0].URL, req.URL, len(via)-1)
}

// location is where a redirect answer points, resolved against the request
// it answers; nil when resp is not a redirect with a Location.
func location(resp *http.Response) *url.URL {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil
	}
	loc, err := resp.Location()
	if err != nil {
		return nil
	}
	return loc
}

// hint reads a Retry-After header in seconds, clamped to sse.MaxRetry;
// 0 when there is none.
func (g *guard) hint(h string) time.Duration {
	d, clamped, ok := sse.ParseRetry(strings.TrimSpace(h), time.Second)
	if !ok {
		return 0
	}
	if clamped {
		g.hintsClamped.Add(1)
	}
	return d
}

// protocol counts a request's protocol error by its kind.
func (g *guard) protocol(kind string) {
	switch kind {
	case protoWrongID:
		g.wrongID.Add(1)
	case protoUnsolicited:
		g.unsolicited.Add(1)
	case protoInvalidJSON:
		g.invalidJSON.Add(1)
	}
}

// notes says what the guard refused, one note per kind that happened.
func (g *guard) notes() []string {
	if g == nil {
		return nil
	}
	var out []string
	if w, u, j := g.wrongID.Load(), g.unsolicited.Load(), g.invalidJSON.Load(); w+u+j > 0 {
		out = append(out, fmt.Sprintf("protocol errors: %d responses with the id of another request (wrong id), %d responses to a request never sent (unsolicited), "+
			"%d messages that are not valid JSON; each failed its call's stream, and no call was counted completed on one", w, u, j))
	}
	if n := g.hintsClamped.Load(); n > 0 {
		out = append(out, fmt.Sprintf("retry hints: the server asked %d times for a reconnection delay over %s (a retry field or Retry-After); each was clamped to %s",
			n, sse.MaxRetry, sse.MaxRetry))
	}
	for k := range nLimits {
		if n := g.limits[k].Load(); n > 0 {
			out = append(out, fmt.Sprintf("limits: %s = %d was exceeded %d times; each failed its call (or its initialize) with the cause %q",
				limitKeys[k], g.value(k), n, g.cause(k)))
		}
	}
	if n := g.absurdProgress.Load(); n > 0 {
		out = append(out, fmt.Sprintf("progress: %d progress values (server.tool.progress = \"index\") pointed past the call's asked length plus the notifications received; each was clamped to that bound", n))
	}
	if n := g.crossOrigin.Load(); n > 0 {
		out = append(out, fmt.Sprintf("redirects: %d to another origin were refused, never followed; their calls failed with %q", n, errCrossOrigin.Error()))
	}
	if n := g.tooMany.Load(); n > 0 {
		out = append(out, fmt.Sprintf("redirects: %d requests were refused after %d redirects within the origin", n, maxRedirects))
	}
	if n := g.hops.Load(); n > 0 {
		out = append(out, fmt.Sprintf("redirects: %d hops within the origin were followed, each counted as a request", n))
	}
	return out
}

// answers classifies a JSON-RPC response p that reached client c's call
// seq: "" when it answers the call (its id is one of the call's attempts'),
// else the kind of protocol error. An error without an id (null, as
// JSON-RPC has it when the server cannot tell the request, or none) is
// taken as the call's: it fails the call, it cannot complete one.
func answers(p parsed, client, seq int32) string {
	cl, k, _, ok := history.ParseToken(p.token)
	switch {
	case ok && cl == client && k == seq:
		return ""
	case p.rpcErr && (p.rawID == "null" || p.rawID == ""):
		return ""
	case ok && cl == client && k < seq, p.rawID == "0":
		return protoWrongID // another of the client's requests: an earlier call, or initialize (id 0)
	}
	return protoUnsolicited
}

// follow sends a request to endpoint with send, and again to where each
// redirect within the origin points, as redirect allows. hop, if not nil,
// is told of each redirect answer followed (its body is then closed). It
// returns the last answer: not a redirect, or a redirect refused, with
// refused saying why; err is send's.
func (g *guard) follow(endpoint *url.URL, send func(u *url.URL) (*http.Response, error), hop func(*http.Response)) (resp *http.Response, refused, err error) {
	u := endpoint
	for hops := 0; ; hops++ {
		if resp, err = send(u); err != nil {
			return nil, nil, err
		}
		loc := location(resp)
		if loc == nil {
			return resp, nil, nil
		}
		if refused = g.redirect(endpoint, loc, hops); refused != nil {
			return resp, refused, nil
		}
		if hop != nil {
			hop(resp)
		}
		drain(resp)
		u = loc
	}
}

// failedCauses is the note of the top causes of h's failed calls, with
// counts, whatever the client implementation: an SDK client's error for
// the call, else the error of the call's last request that had one, else
// the brain's cause. "" when no call failed.
func failedCauses(h *history.History) string {
	last := map[[2]int32]string{}
	for _, r := range h.Requests {
		if r.Err != "" && r.Seq >= 0 {
			last[[2]int32{r.Client, r.Seq}] = r.Err
		}
	}
	count := map[string]int{}
	for _, c := range h.Calls {
		if c.End < 0 || c.Outcome != clients.Failed {
			continue
		}
		why := c.Err
		if why == "" {
			why = last[[2]int32{c.Client, c.Seq}]
		}
		if why == "" {
			why = causeNames[c.Cause]
		}
		count[cut(why, 160)]++
	}
	if len(count) == 0 {
		return ""
	}
	keys := slices.Collect(maps.Keys(count))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(count[b]-count[a], strings.Compare(a, b)) })
	var parts []string
	for _, k := range keys[:min(len(keys), 3)] {
		parts = append(parts, fmt.Sprintf("%d: %s", count[k], k))
	}
	return "failed calls, top causes: " + strings.Join(parts, "; ")
}

// causeNames names the brain's causes of a failed call.
var causeNames = map[clients.Cause]string{
	clients.CauseNone: "no cause recorded", clients.CauseAbandoned: "the client gave up (timeout, retries, 404 or an answer it does not recover from)",
	clients.CausePurged: "a resume was answered 400 purged", clients.CauseError: "the stream ended with a JSON-RPC error",
}
