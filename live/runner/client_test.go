package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/history"
)

// The fast scan of event data agrees with encoding/json on the messages the
// reference replica sends, and leaves anything else to encoding/json.
func TestParseData(t *testing.T) {
	pad := strings.Repeat("x", 40)
	tok := "c3.k7.a1"
	msgs := []string{}
	for i := 1; i < 5; i++ {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": tok, "progress": i, "total": 5, "message": pad}})
		msgs = append(msgs, string(b))
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": tok,
		"result": map[string]any{"content": []map[string]any{{"type": "text", "text": "streamed 5 events"}}}})
	msgs = append(msgs, string(b))
	for i, m := range msgs {
		fast, ok := scanData([]byte(m), 5)
		if !ok {
			t.Fatalf("fast path refused %s", m)
		}
		p := parsed{index: -1}
		var msg message
		if err := json.Unmarshal([]byte(m), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Method != "" {
			p.index, p.token = int32(*msg.Params.Progress), msg.Params.ProgressToken.(string)
			p.progress, p.isProg = *msg.Params.Progress, true
		} else {
			p.index, p.result, p.rawID = 5, true, string(msg.ID)
			json.Unmarshal(msg.ID, &p.token)
		}
		if fast != p || (i < 4 && fast.index != int32(i+1)) || fast.token != tok {
			t.Errorf("%s: fast %+v, json %+v", m, fast, p)
		}
	}
	// Not the replica's layout: encoding/json reads it.
	for _, c := range []struct {
		data string
		want parsed
	}{
		{`{ "jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 3, "progressToken": "c1.k2.a0"}}`, parsed{index: 3, progress: 3, isProg: true, token: "c1.k2.a0"}},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"call orphaned"}}`, parsed{index: -1, rpcErr: true, rawID: "null"}},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, parsed{index: 9, result: true, rawID: "7"}},
		{`not json`, parsed{index: -1, invalid: true}},
		{fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2.5,"progressToken":%q}}`, tok), parsed{index: 2, progress: 2.5, isProg: true, token: tok}},
	} {
		if got := parseData([]byte(c.data), 9); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.data, got, c.want)
		}
	}
}

// A step holds the last store sample taken in it, or the one before when
// none was (a sample that failed, or one that overran a step).
func TestStoreSamplerFill(t *testing.T) {
	s := &storeSampler{step: time.Second,
		at:    []time.Duration{999 * time.Millisecond, 1999 * time.Millisecond, 3999 * time.Millisecond, 4500 * time.Millisecond, 4999 * time.Millisecond},
		bytes: []int64{10, 20, 40, 45, 50}}
	got := make([]int64, 7)
	s.fill(got)
	if want := []int64{10, 20, 20, 40, 50, 50, 50}; !slices.Equal(got, want) {
		t.Errorf("filled %v, want %v", got, want)
	}
	none := &storeSampler{step: time.Second}
	got = []int64{7, 7}
	none.fill(got)
	if got[0] != 0 || got[1] != 0 {
		t.Errorf("no samples filled %v, want zeros", got)
	}
}

// TestAnswers: a response answers the call only with one of the call's
// ids; another request's id or one never sent is a protocol error, and an
// error without an id is the call's (the reference replica's orphan error).
func TestAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data string
		want string
	}{
		{fmt.Sprintf(`{"id":%q,"result":{}}`, history.Token(3, 5, 0)), ""},                              // the call's first attempt
		{fmt.Sprintf(`{"id":%q,"result":{}}`, history.Token(3, 5, 2)), ""},                              // a later attempt of the call
		{fmt.Sprintf(`{"id":%q,"result":{}}`, history.Token(3, 4, 0)), protoWrongID},                    // the client's previous call
		{`{"jsonrpc":"2.0","id":0,"result":{}}`, protoWrongID},                                          // initialize's id
		{fmt.Sprintf(`{"id":%q,"result":{}}`, history.Token(4, 5, 0)), protoUnsolicited},                // another client's call
		{`{"jsonrpc":"2.0","id":"never-sent","result":{}}`, protoUnsolicited},                           // an id never sent
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, protoUnsolicited},                                   // a result must have the call's id
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"call orphaned"}}`, ""},           // an error without an id
		{`{"jsonrpc":"2.0","id":"never-sent","error":{"code":-32000,"message":"x"}}`, protoUnsolicited}, // an error for another request
	} {
		if got := answers(parseData([]byte(c.data), 9), 3, 5); got != c.want {
			t.Errorf("%s: %q, want %q", c.data, got, c.want)
		}
	}
}
