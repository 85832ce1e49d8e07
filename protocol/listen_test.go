package protocol

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/topology"
)

// TestServeListen: subscriptions/listen is served from 2026-07-28 on (200,
// refused by a draining replica as every new stream is), and is a method
// the server lacks before it (200 with -32601, the GET stream being that
// era's channel).
func TestServeListen(t *testing.T) {
	t.Parallel()
	rev := CapsOf("2026-07-28", topology.SessionsLocal, topology.EventsMemory)
	old := CapsOf("2025-11-25", topology.SessionsLocal, topology.EventsMemory)
	cases := []struct {
		name string
		c    Caps
		r    Request
		want Answer
	}{
		{"revision", rev, Request{Kind: clients.ReqListen}, Answer{Status: 200}},
		{"revision, draining", rev, Request{Kind: clients.ReqListen, Draining: true}, draining},
		{"2025-11-25", old, Request{Kind: clients.ReqListen}, old.NotFound(MethodListen)},
	}
	for _, tc := range cases {
		if got := tc.c.Serve(tc.r, nil); !cmp.Equal(tc.want, got) {
			t.Errorf("%s: %s", tc.name, cmp.Diff(tc.want, got))
		}
	}
	if !NewConn(clients.ReqListen) {
		t.Error("a listen request does not count as a new connection for admission")
	}
}

// TestListenParams: the notifications object is required (go-sdk's
// server refuses a listen without it with -32602).
func TestListenParams(t *testing.T) {
	t.Parallel()
	got, a := ListenParams(json.RawMessage(`{"_meta":{},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}}`))
	if a.Status != 0 || !got.ToolsListChanged || len(got.ResourceSubscriptions) != 1 {
		t.Fatalf("valid params: %+v %+v", got, a)
	}
	for _, p := range []string{`{"_meta":{}}`, `not json`, ``} {
		if _, a := ListenParams(json.RawMessage(p)); a.Status != 400 || a.Code != CodeInvalidParams {
			t.Errorf("params %q: %+v, want 400 -32602", p, a)
		}
	}
}

// TestHonourAndMessages: a server that notifies honours the tools and
// resources it asked for and never prompts; one that does not honours
// nothing and declares no listen capability. The acknowledgement and the
// notifications carry the listen request's id, the notifications their
// seq, and the kinds agreed take turns.
func TestHonourAndMessages(t *testing.T) {
	t.Parallel()
	want := Subscriptions{ToolsListChanged: true, PromptsListChanged: true, ResourceSubscriptions: []string{"file:///a"}}
	agreed := Honour(want, true)
	if diff := cmp.Diff(Subscriptions{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///a"}}, agreed); diff != "" {
		t.Errorf("Honour (-want +got):\n%s", diff)
	}
	if Honour(want, false).Any() {
		t.Error("a server that sends no notifications honoured some")
	}
	rev := CapsOf("2026-07-28", topology.SessionsNone, topology.EventsNone)
	if len(rev.ListenCapabilities(false)) != 0 || len(CapsOf("2025-11-25", "", "").ListenCapabilities(true)) != 0 {
		t.Error("a listen capability declared by a server that does not deliver one")
	}
	if _, ok := rev.ListenCapabilities(true)["resources"]; !ok {
		t.Error("a notifying server at 2026-07-28 declares no resources capability")
	}
	id := json.RawMessage(`7`)
	b, _ := json.Marshal(ListenAck(id, agreed))
	if string(b) != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}}}` {
		t.Errorf("ack: %s", b)
	}
	var methods []string
	for seq := int64(1); seq <= 3; seq++ {
		n, ok := ListenNotification(id, seq, agreed)
		if !ok {
			t.Fatal("no notification for an agreed subscription")
		}
		methods = append(methods, n["method"].(string))
		meta := n["params"].(map[string]any)["_meta"].(map[string]any)
		if meta[MetaNotifySeq] != seq || string(meta[MetaSubscriptionID].(json.RawMessage)) != "7" {
			t.Errorf("seq %d: _meta %v", seq, meta)
		}
	}
	if diff := cmp.Diff([]string{MethodResUpdated, MethodToolsChanged, MethodResUpdated}, methods); diff != "" {
		t.Errorf("methods (-want +got):\n%s", diff)
	}
	if _, ok := ListenNotification(id, 1, Subscriptions{}); ok {
		t.Error("a notification with nothing agreed")
	}
}

// TestNotifyDue: the schedule counted by brute force over its instants
// anchor + k·iv, k ≥ 1, half-open windows; windows that tile a span add
// up to the whole.
func TestNotifyDue(t *testing.T) {
	t.Parallel()
	const anchor, iv = 1000, 250
	brute := func(from, to int64) int64 {
		var n int64
		for k := int64(1); anchor+k*iv < 100000; k++ {
			if at := anchor + k*iv; at >= from && at < to {
				n++
			}
		}
		return n
	}
	for _, w := range [][2]int64{{0, 1000}, {0, 1250}, {0, 1251}, {1250, 1500}, {1001, 9999}, {5000, 5000}, {7000, 3000}} {
		if got, want := NotifyDue(anchor, w[0], w[1], iv), brute(w[0], w[1]); got != want {
			t.Errorf("NotifyDue[%d,%d) = %d, want %d", w[0], w[1], got, want)
		}
	}
	if a, b, all := NotifyDue(anchor, anchor, 4321, iv), NotifyDue(anchor, 4321, 9000, iv), NotifyDue(anchor, anchor, 9000, iv); a+b != all {
		t.Errorf("windows %d + %d != %d", a, b, all)
	}
	if NotifySeq(anchor, 1000+3*iv, iv) != 3 || NotifySeq(anchor, 999, iv) != 0 {
		t.Error("NotifySeq")
	}
	if NotifyInterval(0) != 0 || NotifyInterval(4) != 250e6 {
		t.Error("NotifyInterval")
	}
}
