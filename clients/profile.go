package clients

import (
	"fmt"
	"slices"
	"time"

	"github.com/stormsim/stormsim/internal/registry"
)

// Reactions to a 404 on a session request (docs/domain.md §3).
const (
	On404Reinit = "reinit" // start over with initialize, then re-issue the call (what the spec says a client MUST do)
	On404Fail   = "fail"   // the connection fails for good; the call fails; a later call starts a new connection
	On404Stale  = "stale"  // the call fails and the client keeps the dead session id
	On404Stuck  = "stuck"  // a 404 on GET reads as "SSE unsupported": the call hangs until its timeout, the id is kept
)

// Reactions to a stream that can never resume: a 400 on resume (purged, or no
// store) or a stream that ends with a JSON-RPC error (an orphaned call).
const (
	OnErrorReissue = "reissue" // re-issue the call from the start
	OnErrorFail    = "fail"    // the call fails
)

// What a client does when its stream breaks before it saw any event id.
const (
	NoIDReissue    = "reissue"    // re-issue the call
	NoIDWait       = "wait"       // nothing can be resumed; wait for the call timeout
	NoIDStandalone = "standalone" // open the standalone GET (no Last-Event-ID) if there is a session, else re-issue
	NoIDFail       = "fail"       // the call fails at once (go-sdk v1.8: "request terminated without response")
)

// Which failures a client retries with backoff.
const (
	RetryOnNetwork = "network" // only network errors; any non-2xx on a resume fails the connection
	RetryOnAny     = "any"     // network errors, 503 and 409 too
)

// What becomes of a call whose resumes failed (resume_give_up).
const (
	// GiveUpFail: a resume the client does not retry (a 404, a 400, a
	// non-2xx under retry_on = "network") or a resume out of retries fails
	// the call at once.
	GiveUpFail = "fail"
	// GiveUpWait: a failed resume, whatever the answer (a 404 too), is
	// retried while retries last, and then the client stops resuming and
	// leaves the call waiting for its call timeout: the TypeScript SDK
	// gives up reconnecting without rejecting the request.
	GiveUpWait = "wait"
)

// What the application does after a failed call (app_reconnect): besides
// these, a duration such as "30s" reconnects that long after the failure.
const (
	// AppReconnectNever: the application keeps its client session. Under
	// on_404 = "fail" a session whose connection failed for good stays
	// closed, so every later call fails at once without a request (go-sdk's
	// ClientSession); under "stale" each later call is sent with the dead
	// id and gets 404.
	AppReconnectNever = "never"
	// AppReconnectOnFailure: after a failed call the application connects a
	// new session; its next call starts with initialize.
	AppReconnectOnFailure = "on_failure"
)

// What a client does when its subscriptions/listen stream (2026-07-28)
// drops or its open is refused (listen_reopen).
const (
	// ListenReopenBackoff: it opens a new stream after the profile's
	// backoff, for as long as it listens.
	ListenReopenBackoff = "backoff"
	// ListenReopenNone: it opens no other stream; the client stops
	// listening (go-sdk v1.8: the listen call is sent without awaiting it,
	// mcp/shared.go line 160 and mcp/transport.go line 283,
	// callSubscriptionsListen, and nothing opens it again;
	// TestDrift2026GoSDKListen).
	ListenReopenNone = "none"
)

// ListenReopen is a value of listen_reopen. Its default, "backoff", is
// left out of a scenario's JSON, so that the scenario_hash of every design
// that keeps it is the one it had before the key existed.
type ListenReopen string

// IsZero reports whether v is the default, for encoding/json's omitzero.
func (v ListenReopen) IsZero() bool { return v == ListenReopenBackoff }

// Valid values, for validation messages.
var (
	On404s        = []string{On404Reinit, On404Fail, On404Stale, On404Stuck}
	OnErrors      = []string{OnErrorReissue, OnErrorFail}
	NoIDs         = []string{NoIDReissue, NoIDWait, NoIDStandalone, NoIDFail}
	RetryOns      = []string{RetryOnNetwork, RetryOnAny}
	GiveUps       = []string{GiveUpFail, GiveUpWait}
	ListenReopens = []string{ListenReopenBackoff, ListenReopenNone}
	profiles      = registry.New[Config]("clients", "profile")
)

// AppReconnects are the named values of app_reconnect; a duration such as
// "30s" is valid too.
var AppReconnects = []string{AppReconnectNever, AppReconnectOnFailure}

// Config is everything that shapes a client's reconnect behaviour. A profile
// fills every field; scenarios.toml may override any of them.
type Config struct {
	Profile         string        `toml:"profile" json:"profile"`
	Strategy        string        `toml:"strategy" json:"strategy"`
	Jitter          string        `toml:"jitter" json:"jitter"`
	Base            time.Duration `toml:"base" json:"base"`
	Factor          float64       `toml:"factor" json:"factor"`
	Cap             time.Duration `toml:"cap" json:"cap"`
	MaxRetries      int           `toml:"max_retries" json:"max_retries"`
	ResetOnProgress bool          `toml:"reset_on_progress" json:"reset_on_progress"`
	HonorRetryHint  bool          `toml:"honor_retry_hint" json:"honor_retry_hint"`
	RetryOn         string        `toml:"retry_on" json:"retry_on"`
	On404           string        `toml:"on_404" json:"on_404"`
	OnError         string        `toml:"on_error" json:"on_error"`
	NoID            string        `toml:"no_id" json:"no_id"`
	ResumeGiveUp    string        `toml:"resume_give_up" json:"resume_give_up"`
	CallTimeout     time.Duration `toml:"call_timeout" json:"call_timeout"`
	// ListenReopen is what the client does when its listen stream drops or
	// its open is refused (clients.Listener): "backoff" or "none".
	ListenReopen ListenReopen `toml:"listen_reopen" json:"listen_reopen,omitzero"`
	// AppReconnect is what the application does after a failed call:
	// "never", "on_failure" or a duration ("30s": the first call that
	// starts that long after the failure opens a new session).
	AppReconnect string `toml:"app_reconnect" json:"app_reconnect"`
	// MaxConcurrentReconnects caps the reconnect requests in flight at once
	// across every virtual client of a design, as a gateway hosting them
	// all would. 0 = no cap.
	MaxConcurrentReconnects int `toml:"max_concurrent_reconnects" json:"max_concurrent_reconnects"`
	// Impl is the live engine's client implementation: "" (or "native")
	// for stormsim's own SSE clients driven by the brain, or "go-sdk" for
	// the official MCP Go SDK's client, which makes its own decisions. The
	// simulator always runs the brain with the profile's settings.
	Impl string `toml:"impl" json:"impl,omitempty"`
	// ImplShare is the fraction of the live clients that use Impl; 0 means
	// all of them.
	ImplShare float64 `toml:"impl_share" json:"impl_share,omitempty"`
	// RequestTimeout, RequestRetries and RequestBackoff are the per-attempt
	// request timeout of the open-loop request workload (request.go); the
	// zero values leave a request waiting as long as it takes.
	RequestTimeout time.Duration `toml:"request_timeout" json:"request_timeout,omitempty"`
	RequestRetries int           `toml:"request_retries" json:"request_retries,omitempty"`
	RequestBackoff string        `toml:"request_backoff" json:"request_backoff,omitempty"`
	// Discover is set by the engine from the design's era
	// (protocol.Caps.Discover), never by a profile: the client opens with
	// server/discover, holds no session and sends no initialized
	// notification (2026-07-28).
	Discover bool `toml:"-" json:"-"`
}

// Client implementations of the live engine.
const (
	ImplNative = "native"
	ImplGoSDK  = "go-sdk"
	ImplTSSDK  = "ts-sdk"
)

// Impls lists the client implementations.
var Impls = []string{ImplNative, ImplGoSDK, ImplTSSDK}

func init() {
	goSDK := Config{
		Profile: "go-sdk", Strategy: StrategyExponential, Jitter: JitterAdditive,
		Base: time.Second, Factor: 1.5, Cap: 30 * time.Second, MaxRetries: 5,
		ResetOnProgress: true, HonorRetryHint: true, RetryOn: RetryOnNetwork,
		On404: On404Fail, OnError: OnErrorFail, NoID: NoIDFail, CallTimeout: 300 * time.Second,
		AppReconnect: AppReconnectNever, ResumeGiveUp: GiveUpFail, ListenReopen: ListenReopenBackoff,
	}
	ts := goSDK
	ts.Profile, ts.Jitter, ts.MaxRetries, ts.ResetOnProgress, ts.On404, ts.NoID = "ts-sdk", JitterNone, 2, false, On404Stale, NoIDWait
	// The TypeScript SDK retries a resume that got any non-2xx answer
	// (but 405) as it retries a network error, and counts its retries
	// from 0 again at every break of a stream it had resumed
	// (TestDriftTSSDK: two resumes against 503s, five and on when each
	// resume brought an event).
	ts.RetryOn, ts.ResetOnProgress = RetryOnAny, true
	// Its resumes give up without failing the call: a resume answered 404
	// is retried as any other, and once the retries are spent the request
	// waits, never rejected (TestDriftTSSDK: two resumes answered 404, and
	// the call still pending).
	ts.ResumeGiveUp = GiveUpWait
	py := ts
	py.Profile, py.Strategy, py.Factor, py.Cap, py.RetryOn, py.ResetOnProgress, py.ResumeGiveUp = "python-sdk", StrategyConstant, 1, 0, RetryOnNetwork, false, GiveUpFail
	compliant := goSDK
	compliant.Profile, compliant.RetryOn, compliant.On404, compliant.OnError, compliant.NoID =
		"compliant", RetryOnAny, On404Reinit, OnErrorReissue, NoIDStandalone
	stuck := ts
	stuck.Profile, stuck.On404, stuck.RetryOn, stuck.ResetOnProgress, stuck.ResumeGiveUp = "stuck", On404Stuck, RetryOnNetwork, false, GiveUpFail
	// go-sdk v1.8 opens a listen stream once, in Connect after
	// server/discover (mcp/client.go lines 334 to 362) or in Subscribe
	// (line 1381), and re-opens none that drops or is refused
	// (TestDrift2026GoSDKListen). The profiles copied from it above keep
	// "backoff": the TypeScript SDK 1.32.2 has no subscriptions/listen (it
	// speaks 2025-11-25 at the latest), so its profile's value is the
	// default, not a measured behaviour; compliant re-opens, as a client
	// that wants notifications must.
	goSDK.ListenReopen = ListenReopenNone
	for _, c := range []Config{goSDK, ts, py, compliant, stuck} {
		profiles.Register(c.Profile, c)
	}
}

// ProfileNames lists the named profiles in a stable order.
func ProfileNames() []string { return profiles.Names() }

// Profile returns the Config of a named profile (docs/domain.md §3).
func Profile(name string) (Config, error) { return profiles.Lookup(name) }

// Validate lists every problem with c. Each error names the key.
func (c *Config) Validate() []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	oneOf := func(key, v string, valid []string) {
		if !slices.Contains(valid, v) {
			bad(key, "%q is not one of %v", v, valid)
		}
	}
	if _, ok := profiles.Get(c.Profile); !ok {
		bad("profile", "%q is not one of %v", c.Profile, ProfileNames())
	}
	oneOf("strategy", c.Strategy, Strategies)
	oneOf("jitter", c.Jitter, Jitters)
	oneOf("retry_on", c.RetryOn, RetryOns)
	oneOf("on_404", c.On404, On404s)
	oneOf("on_error", c.OnError, OnErrors)
	oneOf("no_id", c.NoID, NoIDs)
	oneOf("resume_give_up", c.ResumeGiveUp, GiveUps)
	oneOf("listen_reopen", string(c.ListenReopen), ListenReopens)
	if c.Impl != "" {
		oneOf("impl", c.Impl, Impls)
	}
	if _, _, err := c.appReconnect(); err != nil {
		bad("app_reconnect", "%v", err)
	}
	if c.ImplShare < 0 || c.ImplShare > 1 {
		bad("impl_share", "%v is not within 0..1", c.ImplShare)
	}
	if c.Base < 0 {
		bad("base", "%v is negative", c.Base)
	}
	if c.Cap < 0 {
		bad("cap", "%v is negative", c.Cap)
	}
	if c.Strategy == StrategyExponential && c.Factor < 1 {
		bad("factor", "%v is below 1", c.Factor)
	}
	if c.MaxRetries < 0 {
		bad("max_retries", "%d is negative", c.MaxRetries)
	}
	if c.MaxConcurrentReconnects < 0 {
		bad("max_concurrent_reconnects", "%d is negative", c.MaxConcurrentReconnects)
	}
	if c.CallTimeout <= 0 {
		bad("call_timeout", "%v must be positive", c.CallTimeout)
	}
	errs = append(errs, c.validateRequest()...)
	return errs
}

// ReconnectAfter says whether the application connects a new session after
// a failed call, and how long after the failure (0: before its next call).
// A Config that failed validation reconnects never.
func (c *Config) ReconnectAfter() (time.Duration, bool) {
	d, ok, err := c.appReconnect()
	return d, ok && err == nil
}

func (c *Config) appReconnect() (time.Duration, bool, error) {
	switch c.AppReconnect {
	case AppReconnectNever:
		return 0, false, nil
	case AppReconnectOnFailure:
		return 0, true, nil
	}
	d, err := time.ParseDuration(c.AppReconnect)
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("%q is not one of %v or a duration such as \"30s\"", c.AppReconnect, AppReconnects)
	case d < 0:
		return 0, false, fmt.Errorf("%v is negative", d)
	}
	return d, true, nil
}

// FieldError is a problem with one key of a Config. Callers prefix the key
// with its path in the scenario file.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }
