package protocol

import (
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

func zero() float64 { return 0 }

// The retry budget lets in ratio × first attempts + 10 × min retries over
// the last 10 s, and forgets deposits older than the window.
func TestRetryBudget(t *testing.T) {
	t.Parallel()
	rc := topology.DefaultReplica
	rc.RetryBudget, rc.RetryBudgetMin = 0.2, 0.1 // 20% plus one retry per 10 s
	var s Admission
	sec := int64(time.Second)
	for i := range 10 {
		if a := s.AdmitRequest(&rc, int64(i)*sec/10, false, true, 0, zero); a.Status != 200 {
			t.Fatalf("first attempt %d refused: %+v", i, a)
		}
	}
	// 10 first attempts: 0.2 × 10 + 10 × 0.1 = 3 retries.
	for i := range 4 {
		a := s.AdmitRequest(&rc, sec, true, true, 0, zero)
		if want := i < 3; (a.Status == 200) != want {
			t.Errorf("retry %d at 1 s: %+v, want admitted %v", i, a, want)
		}
		if i == 3 && a.Why != WhyBudget {
			t.Errorf("the refused retry says %q, want %q", a.Why, WhyBudget)
		}
	}
	// At 10 s the deposits of second 0 have left the window, and the
	// retries of second 1 are still in it: the floor alone (1) is spent.
	if a := s.AdmitRequest(&rc, 10*sec, true, true, 0, zero); a.Status == 200 {
		t.Errorf("retry at 10 s admitted: %+v, want refused", a)
	}
	// At 11 s the window holds nothing: the floor lets one retry in.
	if a := s.AdmitRequest(&rc, 11*sec, true, true, 0, zero); a.Status != 200 {
		t.Errorf("retry at 11 s refused: %+v", a)
	}
}

// A bounded request queue refuses at its bound; shedding drops by age
// only; without either nothing is refused or shed.
func TestRequestQueueAndShed(t *testing.T) {
	t.Parallel()
	rc := topology.DefaultReplica
	var s Admission
	if a := s.AdmitRequest(&rc, 0, true, true, 1<<20, zero); a.Status != 200 {
		t.Errorf("unbounded queue refused: %+v", a)
	}
	if Shed(&rc, int64(time.Hour), 0) {
		t.Error("shed with shed_after 0")
	}
	rc.RequestQueue, rc.ShedAfter = 5, time.Second
	if a := s.AdmitRequest(&rc, 0, false, true, 4, zero); a.Status != 200 {
		t.Errorf("queue of 4 under a bound of 5 refused: %+v", a)
	}
	if a := s.AdmitRequest(&rc, 0, false, true, 5, zero); a.Status != 503 || a.Why != WhyQueueFull {
		t.Errorf("full queue: %+v, want 503 %q", a, WhyQueueFull)
	}
	if Shed(&rc, int64(time.Second), 0) || !Shed(&rc, int64(time.Second)+1, 0) {
		t.Error("shed_after 1s: want kept at 1 s of age and shed beyond")
	}
	// A full queue's hint is the whole seconds Retry-After carries, in
	// both engines (RetryAfter).
	rc.HintOn503, rc.RetryHint = true, 300*time.Millisecond
	if a := s.AdmitRequest(&rc, 0, false, true, 5, zero); a.RetryHint != time.Second {
		t.Errorf("full queue's hint %v for a retry_hint of 300ms, want 1s (Retry-After's whole seconds)", a.RetryHint)
	}
}

// The admission bucket gates attempts that open a connection (a
// closed-loop client's handshake) and lets requests on an accepted
// connection through; RequestCost charges the handshake's service to the
// first and the request's to the rest.
func TestAdmitRequestGatesConnectionsOnly(t *testing.T) {
	t.Parallel()
	rc := topology.DefaultReplica
	rc.AdmitBucket, rc.AdmitInterval = 2, time.Second
	rc.ServiceTime, rc.HandshakeTime = 10*time.Millisecond, 80*time.Millisecond
	var s Admission
	for i := range 3 {
		a := s.AdmitRequest(&rc, 0, false, true, 0, zero)
		if want := i < 2; (a.Status == 200) != want {
			t.Errorf("handshake %d: %+v, want admitted %v", i, a, want)
		}
		if i == 2 && a.RetryHint != time.Second {
			t.Errorf("refused handshake's hint %v, want the next window (1s)", a.RetryHint)
		}
	}
	for i := range 5 {
		if a := s.AdmitRequest(&rc, 0, false, false, 0, zero); a.Status != 200 {
			t.Errorf("request %d on an accepted connection refused: %+v", i, a)
		}
	}
	if got := RequestCost(&rc, true); got != rc.HandshakeTime {
		t.Errorf("handshake cost %v, want %v", got, rc.HandshakeTime)
	}
	if got := RequestCost(&rc, false); got != rc.ServiceTime {
		t.Errorf("request cost %v, want %v", got, rc.ServiceTime)
	}
}
