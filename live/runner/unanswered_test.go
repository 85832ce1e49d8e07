package runner

import (
	"testing"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
)

// unansweredNote counts the requests with no status, by kind and error,
// and says nothing when every request was answered.
func TestUnansweredNote(t *testing.T) {
	t.Parallel()
	h := &history.History{Requests: []history.Request{
		{Kind: clients.ReqCall, Status: 200},
		{Kind: clients.ReqCall, Status: 0, Err: "dial tcp: connection refused"},
		{Kind: clients.ReqCall, Status: 0, Err: "dial tcp: connection refused"},
		{Kind: clients.ReqResume, Status: 0}, // still waiting when the run ended
		{Kind: clients.ReqResume, Status: 404},
	}}
	want := "requests that got no answer: 3 (2 tools/call, 1 resume GET); top errors: 2 dial tcp: connection refused, 1 no response"
	if got := unansweredNote(h); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	h.Requests = h.Requests[:1]
	if got := unansweredNote(h); got != "" {
		t.Errorf("every request answered: note %q, want none", got)
	}
}
