package protocol

import (
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/topology"
)

// script is a Facts that answers from fixed values and records the order
// in which it was asked.
type script struct {
	session Session
	claim   bool
	read    Read
	asked   []string
}

func (s *script) Session() Session { s.asked = append(s.asked, "session"); return s.session }
func (s *script) Claim() bool      { s.asked = append(s.asked, "claim"); return s.claim }
func (s *script) Read() Read       { s.asked = append(s.asked, "read"); return s.read }

// TestServeStages holds Serve to its fixed order of facts, asked only as
// far as the answer needs them.
func TestServeStages(t *testing.T) {
	t.Parallel()
	mem := CapsOf("2025-11-25", topology.SessionsLocal, topology.EventsMemory)
	cases := []struct {
		name   string
		caps   Caps
		req    Request
		facts  script
		status int
		purged bool
		asked  string
	}{
		// a resume with everything in place reads the store last
		{"resume ok", mem, Request{Kind: clients.ReqResume}, script{claim: true}, 200, false, "session claim read"},
		// the claim comes before the store: a held, purged stream is 409
		{"claim first", mem, Request{Kind: clients.ReqResume}, script{claim: false, read: ReadPurged}, 409, false, "session claim"},
		{"purged", mem, Request{Kind: clients.ReqResume}, script{claim: true, read: ReadPurged}, 400, true, "session claim read"},
		{"unknown stream", mem, Request{Kind: clients.ReqResume}, script{claim: true, read: ReadUnknown}, 400, false, "session claim read"},
		{"store down", mem, Request{Kind: clients.ReqResume}, script{claim: true, read: ReadUnavailable}, 503, false, "session claim read"},
		// the session check answers before anything else is asked
		{"unknown session", mem, Request{Kind: clients.ReqResume}, script{session: SessionUnknown}, 404, false, "session"},
		{"missing session", mem, Request{Kind: clients.ReqCall}, script{session: SessionMissing}, 400, false, "session"},
		{"session store down", mem, Request{Kind: clients.ReqInitialized}, script{session: SessionUnavailable}, 503, false, "session"},
		// no store: 400 without a claim
		{"no store", CapsOf("2025-06-18", topology.SessionsLocal, topology.EventsNone), Request{Kind: clients.ReqResume}, script{}, 400, false, "session"},
		// stateless: 405 without a question
		{"stateless GET", CapsOf("2026-07-28", topology.SessionsShared, topology.EventsRedis), Request{Kind: clients.ReqStandalone}, script{}, 405, false, ""},
		{"stateless call", CapsOf("2025-11-25", topology.SessionsNone, topology.EventsNone), Request{Kind: clients.ReqCall}, script{}, 200, false, ""},
		// a draining replica refuses new work before creating a session
		{"drain initialize", mem, Request{Kind: clients.ReqInitialize, Draining: true}, script{}, 503, false, ""},
		{"drain call", mem, Request{Kind: clients.ReqCall, Draining: true}, script{}, 503, false, "session"},
		{"initialize", mem, Request{Kind: clients.ReqInitialize}, script{}, 200, false, "session"},
		{"delete", mem, Request{Kind: clients.ReqDelete}, script{}, 200, false, "session"},
	}
	for _, c := range cases {
		f := c.facts
		a := c.caps.Serve(c.req, &f)
		if a.Status != c.status || a.Purged != c.purged || strings.Join(f.asked, " ") != c.asked {
			t.Errorf("%s: %d purged %v, asked %q; want %d purged %v, asked %q", c.name, a.Status, a.Purged, strings.Join(f.asked, " "), c.status, c.purged, c.asked)
		}
	}
}

// TestCapsOf holds the eras' features.
func TestCapsOf(t *testing.T) {
	t.Parallel()
	for _, name := range topology.Eras {
		if _, ok := eras[name]; !ok {
			t.Errorf("era %s has no features in protocol", name)
		}
	}
	if c := CapsOf("2026-07-28", topology.SessionsShared, topology.EventsRedis); c.Sessions || c.Shared || c.HasStore() || !c.NoResume {
		t.Errorf("2026-07-28 = %+v, want stateless without resumption", c)
	}
	if c := CapsOf("2025-06-18", topology.SessionsLocal, topology.EventsMemory); c.Priming || c.PollClose || !c.HasStore() {
		t.Errorf("2025-06-18 = %+v, want a store without priming or polling", c)
	}
	if c := CapsOf("", topology.SessionsShared, topology.EventsRedis); !c.Shared || !c.Priming || !c.PollClose || c.Era != DefaultEra {
		t.Errorf("default era = %+v", c)
	}
}

// TestAdmission walks the admission bucket across windows and the
// connection-rate limit.
func TestAdmission(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{0, 0}, {-1, 0}, {1, time.Second}, {time.Second, time.Second}, {time.Second + 1, 2 * time.Second}} {
		if got := RetryAfter(c.in); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	t.Parallel()
	never := func() float64 { t.Fatal("no hint spread: no draw"); return 0 }
	rc := topology.DefaultReplica
	rc.AdmitBucket, rc.AdmitInterval = 2, time.Second
	var s Admission
	var got []string
	for _, at := range []int64{0, 1, 2, 3, 4, 1e9 + 5} {
		a := s.Admit(&rc, at, clients.ReqInitialize, never)
		got = append(got, time.Duration(a.RetryHint).String())
		if (a.Status == 200) != (a.RetryHint == 0) {
			t.Errorf("at %d: %+v", at, a)
		}
	}
	// two admitted, two sent to window 1, the fifth to window 2; in window
	// 1 its two promised places are taken by then (a fresh window counts
	// its own arrivals). Each hint is rounded up to whole seconds, as the
	// Retry-After header carries it (RetryAfter).
	if want := "0s 0s 1s 1s 2s 0s"; strings.Join(got, " ") != want {
		t.Errorf("hints %s, want %s", strings.Join(got, " "), want)
	}
	if a := s.Admit(&rc, 0, clients.ReqDelete, never); a.Status != 200 {
		t.Errorf("a DELETE went through admission: %+v", a)
	}
	rc = topology.DefaultReplica
	rc.MaxConnRate, rc.HintOn503, rc.RetryHint, rc.RetryHintSpread = 1, true, time.Second, [2]float64{1, 3}
	s = Admission{}
	if a := s.Admit(&rc, 1e9, clients.ReqCall, never); a.Status != 200 {
		t.Fatalf("first call refused: %+v", a)
	}
	if a := s.Admit(&rc, 1e9, clients.ReqCall, func() float64 { return 0.5 }); a.Status != 503 || a.RetryHint != 2*time.Second {
		t.Errorf("second call = %+v, want 503 with a 2 s hint (1 s × U(1, 3) at 0.5)", a)
	}
}
