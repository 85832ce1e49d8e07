package runner

import (
	"fmt"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/scenario"
)

// resumeBound is the least wait between two resumes of one client that
// design d allows: the fastest profile's backoff (clients.FastestBackoff),
// or less when d's own client settings or its replicas' retry hints ask
// for less; 0 when d allows no wait at all, and then nothing is too fast.
func resumeBound(d *scenario.Design) time.Duration {
	b := min(clients.FastestBackoff(), d.Client.MinDelay())
	if rc := &d.Replica; d.Own == nil && rc.RetryHint > 0 {
		lo := 1.0
		if s := rc.RetryHintSpread; s != [2]float64{} {
			lo = s[0]
		}
		b = min(b, time.Duration(float64(rc.RetryHint)*lo))
	}
	return b
}

// resumeRateNote is the request-rate guard: the note, naming design d,
// when one of h's clients sent more resumes in one second of the run than
// d's backoff allows (resumeBound: one per bound, and one more for a late
// timer), with the peak and the design's mean rate; "" when none did.
func resumeRateNote(h *history.History, d *scenario.Design) string {
	bound := resumeBound(d)
	if bound <= 0 {
		return ""
	}
	allowed := int(time.Second/bound) + 1
	type slot struct {
		client int32
		sec    int64
	}
	per := map[slot]int{}
	total := 0
	for i := range h.Requests {
		if r := &h.Requests[i]; r.Kind == clients.ReqResume {
			per[slot{r.Client, r.Sent / int64(time.Second)}]++
			total++
		}
	}
	over := map[int32]bool{}
	var peak slot
	most := 0
	for s, n := range per {
		if n > allowed {
			over[s.client] = true
		}
		if n > most || n == most && (s.sec < peak.sec || s.sec == peak.sec && s.client < peak.client) {
			peak, most = s, n
		}
	}
	if len(over) == 0 {
		return ""
	}
	span := h.Horizon
	if h.Interrupted > 0 {
		span = h.Interrupted
	}
	return fmt.Sprintf("request rate: design %s: client %d sent %d resumes (GETs with Last-Event-ID) in the second from %d s, %d clients more than %d in some second, "+
		"%.0f resumes/s over the run: faster than any client profile's backoff allows (one reconnect per %s at most, or what the design's own settings allow when less); "+
		"a server's retry hint shorter than that, or a client that does not back off, drives such a rate",
		d.Name, peak.client, most, peak.sec, len(over), allowed, float64(total)/time.Duration(span).Seconds(), bound)
}
