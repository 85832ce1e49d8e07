package replica

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// TestListenAnswers: subscriptions/listen over real HTTP. A replica that
// sends notifications declares what its listen streams deliver, opens the
// stream with the acknowledgement of what it honours (no prompts) and
// then sends notifications tagged with the subscription id and their seq;
// one that sends none declares nothing, honours nothing and ends the
// subscription at once with its result; a listen without notifications is
// 400 with -32602; before 2026-07-28 the method does not exist (200 with
// -32601), and a draining replica refuses it (503).
func TestListenAnswers(t *testing.T) {
	t.Parallel()
	want := map[string]any{"notifications": map[string]any{"toolsListChanged": true, "promptsListChanged": true}}
	notify := revDesign()
	notify.NotifyRate = 50
	srv, c := newServer(t, notify)
	if caps := string(decode(t, c.rev(1, "server/discover", nil))["result"]); !strings.Contains(caps, `"listChanged":true`) {
		t.Errorf("a notifying replica's discover declares no listChanged: %s", caps)
	}
	resp := c.rev(2, protocol.MethodListen, want)
	evs := readSSE(t, resp, 3)
	resp.Body.Close()
	if len(evs) != 3 || !strings.Contains(evs[0].Data, protocol.MethodListenAck) || strings.Contains(evs[0].Data, "prompts") {
		t.Fatalf("first events %+v: want the acknowledgement, without prompts, then notifications", evs)
	}
	for _, ev := range evs[1:] {
		var n struct {
			Method string
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
		}
		json.Unmarshal([]byte(ev.Data), &n)
		if n.Method != protocol.MethodToolsChanged || string(n.Params.Meta[protocol.MetaSubscriptionID]) != "2" || n.Params.Meta[protocol.MetaNotifySeq] == nil {
			t.Errorf("notification %s: want a tools list change with subscription id 2 and a seq", ev.Data)
		}
	}
	if got := srv.Snapshot().NotificationsWritten; got < 2 {
		t.Errorf("notifications_written %d after two notifications read", got)
	}

	_, quiet := newServer(t, revDesign())
	if caps := string(decode(t, quiet.rev(1, "server/discover", nil))["result"]); strings.Contains(caps, "listChanged") {
		t.Errorf("a replica that sends no notifications declares listChanged: %s", caps)
	}
	evs = readSSE(t, quiet.rev(3, protocol.MethodListen, want), 0)
	if len(evs) != 2 || !strings.Contains(evs[1].Data, `"id":3`) || !strings.Contains(evs[1].Data, `"resultType":"complete"`) {
		t.Errorf("a quiet replica's listen: %+v, want the acknowledgement and the result", evs)
	}
	r := quiet.rev(4, protocol.MethodListen, map[string]any{})
	var e struct{ Error struct{ Code int } }
	json.NewDecoder(r.Body).Decode(&e)
	if r.StatusCode != 400 || e.Error.Code != protocol.CodeInvalidParams {
		t.Errorf("listen without notifications: %d %d, want 400 -32602", r.StatusCode, e.Error.Code)
	}

	_, old := newServer(t, Config{Sessions: topology.SessionsNone, Events: topology.EventsNone, Era: "2025-11-25"})
	r = old.do("POST", map[string]any{"jsonrpc": "2.0", "id": 5, "method": protocol.MethodListen, "params": want}, nil)
	json.NewDecoder(r.Body).Decode(&e)
	if r.StatusCode != 200 || e.Error.Code != protocol.CodeMethodNotFound {
		t.Errorf("2025-11-25 listen: %d %d, want 200 -32601", r.StatusCode, e.Error.Code)
	}

	drainSrv, dc := newServer(t, notify)
	drainSrv.mu.Lock()
	drainSrv.draining = true
	drainSrv.mu.Unlock()
	if r := dc.rev(6, protocol.MethodListen, want); r.StatusCode != 503 {
		t.Errorf("draining replica's listen: %d, want 503", r.StatusCode)
	}
}

// TestListenEndsOnDrain: a drain ends an open listen stream at once with
// the subscription's result, rather than holding the drain to its limit.
func TestListenEndsOnDrain(t *testing.T) {
	t.Parallel()
	cfg := revDesign()
	cfg.NotifyRate = 5
	srv, c := newServer(t, cfg)
	resp := c.rev(7, protocol.MethodListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	defer resp.Body.Close()
	if evs := readSSE(t, resp, 1); len(evs) != 1 || !strings.Contains(evs[0].Data, protocol.MethodListenAck) {
		t.Fatalf("no acknowledgement: %+v", evs)
	}
	go srv.Drain()
	evs := readSSE(t, resp, 0)
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Data, `"id":7`) || !strings.Contains(evs[len(evs)-1].Data, `"result"`) {
		t.Errorf("after the drain: %+v, want the stream to end with the subscription's result", evs)
	}
}
