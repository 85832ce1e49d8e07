package history_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	. "github.com/stormsim/stormsim/history"
)

// bigHistory is 40 calls of 5,000 events each, every event received and
// produced: 200,000 receipts.
func bigHistory() *History {
	b := newHist()
	for c := int32(0); c < 40; c++ {
		b.Call(c, 0, 5000, 0, 55_000, clients.Completed, clients.CauseNone)
		ri := b.Req(Request{Client: c, Seq: 0, Attempt: 0, Kind: clients.ReqCall, Sent: 0, Answered: 1, Closed: 55_000, Status: 200, Replica: -1})
		b.Recv(ri, seq(1, 5000), at(1, 10, 5000))
		b.Produce(c, 0, 0, 0, 1, 1, 5000)
	}
	return b.H
}

// TestJudgeContext: JudgeContext with a context that does not end judges
// as Judge does, and one whose context ends while it judges returns the
// context's error, long before the judging would have ended.
func TestJudgeContext(t *testing.T) {
	h := bigHistory()
	t0 := time.Now()
	want := Judge(h)
	whole := time.Since(t0)
	got, err := JudgeContext(context.Background(), h)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("JudgeContext without an end: err %v, same judgment %v", err, reflect.DeepEqual(got, want))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if j, err := JudgeContext(ctx, h); !errors.Is(err, context.Canceled) || j != nil {
		t.Fatalf("JudgeContext of an ended context: %v, %v: want context.Canceled and no judgment", j, err)
	}
	// Ended a tenth of the way through, it stops well before the end.
	ctx, cancel = context.WithTimeout(context.Background(), whole/10)
	defer cancel()
	t0 = time.Now()
	_, err = JudgeContext(ctx, h)
	stopped := time.Since(t0)
	t.Logf("judging %d receipts takes %v; ended after %v, it returned after %v", len(h.Receipts), whole, whole/10, stopped)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("JudgeContext ended part way: err %v, want the deadline", err)
	}
}
