package clients

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Request backoffs: how a client of the open-loop request workload waits
// before it retries an attempt that timed out or was refused.
const (
	// RequestBackoffImmediate retries at once, as the retry experiment of
	// Huang et al. (OSDI 2022) does.
	RequestBackoffImmediate = "immediate"
	// RequestBackoffProfile waits the profile's backoff (strategy, base,
	// factor, cap, jitter) before retry n.
	RequestBackoffProfile = "backoff"
)

// RequestBackoffs lists the valid request_backoff values.
var RequestBackoffs = []string{RequestBackoffImmediate, RequestBackoffProfile}

func (c *Config) validateRequest() []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.RequestTimeout < 0 {
		bad("request_timeout", "%v is negative (0: no per-attempt timeout)", c.RequestTimeout)
	}
	if c.RequestRetries < 0 || c.RequestRetries > 100 {
		bad("request_retries", "%d is not in 0..100", c.RequestRetries)
	}
	if c.RequestBackoff != "" && !slices.Contains(RequestBackoffs, c.RequestBackoff) {
		bad("request_backoff", "%q is not one of %v", c.RequestBackoff, RequestBackoffs)
	}
	return errs
}

// Abandon reports when a client gives up on an attempt sent at sent: sent
// plus the request timeout, or ok false when the profile sets none (the
// client waits for the answer however long it takes).
func (c *Config) Abandon(sent int64) (at int64, ok bool) {
	if c.RequestTimeout <= 0 {
		return 0, false
	}
	return sent + int64(c.RequestTimeout), true
}

// Retry decides what a client does after attempt n (0 for the first) of a
// request timed out or was refused: retry after wait, or give the request
// up (ok false) once it has made RequestRetries retries. hint is a retry
// hint the server sent with a refusal (0 for none): a client that honours
// hints waits at least that long. prev is the previous wait, for the
// decorrelated strategy. rng is drawn from only under the profile's
// backoff, and then as Delay draws.
func (c *Config) Retry(n int, hint, prev time.Duration, rng *rand.Rand) (wait time.Duration, ok bool) {
	if n >= c.RequestRetries {
		return 0, false
	}
	if c.RequestBackoff == RequestBackoffProfile {
		wait = Delay(c, n, prev, rng)
	}
	if c.HonorRetryHint && hint > wait {
		wait = hint
	}
	return wait, true
}
