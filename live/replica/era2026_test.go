package replica

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/topology"
)

// revDesign is a replica at the 2026-07-28 revision.
func revDesign() Config {
	return Config{Sessions: topology.SessionsNone, Events: topology.EventsNone, Era: "2026-07-28"}
}

// rev POSTs a request of the revision: its headers and its _meta.
func (c *client) rev(id any, method string, params map[string]any) *http.Response {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[protocol.MetaVersion], meta[protocol.MetaCapabilities] = "2026-07-28", map[string]any{}
	params["_meta"] = meta
	hdr := map[string]string{protocol.HeaderVersion: "2026-07-28", protocol.HeaderMethod: method}
	if name, ok := params["name"].(string); ok {
		hdr[protocol.HeaderName] = name
	}
	return c.do("POST", map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}, hdr)
}

// The revision's answers over real HTTP: server/discover, the removed
// methods 404 with -32601 and the request's id, the header and _meta
// errors 400 with theirs, the results' resultType and caching hints.
func TestRevisionAnswers(t *testing.T) {
	t.Parallel()
	_, c := newServer(t, revDesign())
	errOf := func(resp *http.Response, status, code int, id string) {
		t.Helper()
		got := decode(t, resp)
		var e struct{ Code int }
		json.Unmarshal(got["error"], &e)
		if resp.StatusCode != status || e.Code != code || string(got["id"]) != id {
			t.Errorf("%d %s, want %d with error %d for id %s", resp.StatusCode, str(got), status, code, id)
		}
	}
	d := decode(t, c.rev(1, "server/discover", nil))
	var disc struct {
		SupportedVersions []string
		Capabilities      map[string]any
		ResultType        string
		TTLMs             *int `json:"ttlMs"`
		CacheScope        string
		Meta              map[string]map[string]string `json:"_meta"`
	}
	json.Unmarshal(d["result"], &disc)
	if len(disc.SupportedVersions) != 1 || disc.SupportedVersions[0] != "2026-07-28" || disc.Capabilities["tools"] == nil ||
		disc.ResultType != "complete" || disc.TTLMs == nil || disc.CacheScope != "private" || disc.Meta[protocol.MetaServerInfo]["name"] == "" {
		t.Errorf("server/discover = %s", str(d))
	}
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"} {
		errOf(c.rev(5, m, nil), http.StatusNotFound, protocol.CodeMethodNotFound, "5")
	}
	// a 2025 client's initialize, with none of the revision's headers: 404 too
	errOf(c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": map[string]any{}}, nil), http.StatusNotFound, protocol.CodeMethodNotFound, "6")
	// a request without the revision's headers
	errOf(c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": map[string]any{}}, nil), http.StatusBadRequest, protocol.CodeHeaderMismatch, "7")
	// without _meta
	errOf(c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
		map[string]string{protocol.HeaderVersion: "2026-07-28", protocol.HeaderMethod: "tools/list"}), http.StatusBadRequest, protocol.CodeInvalidParams, "8")
	l := decode(t, c.rev(9, "tools/list", nil))
	var list struct {
		ResultType string
		TTLMs      *int `json:"ttlMs"`
		Tools      []struct{ Name string }
	}
	json.Unmarshal(l["result"], &list)
	if list.ResultType != "complete" || list.TTLMs == nil || len(list.Tools) != 1 {
		t.Errorf("tools/list = %s", str(l))
	}
	resp := c.rev(10, "tools/call", map[string]any{"name": "stream", "arguments": map[string]any{"events": 2, "interval_ms": 1}})
	evs := readSSE(t, resp, 2)
	var final struct {
		Result struct{ ResultType string }
	}
	json.Unmarshal([]byte(evs[len(evs)-1].Data), &final)
	if final.Result.ResultType != "complete" {
		t.Errorf("the call's result %s has no resultType complete", evs[len(evs)-1].Data)
	}
	if resp := c.do("GET", nil, map[string]string{protocol.HeaderVersion: "2026-07-28"}); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
}

// Closing a call's response stream cancels the call under 2026-07-28:
// it stops producing, and the replica counts it cancelled with the events
// it saved. Under 2025-11-25 the same disconnect cancels nothing: the call
// runs to its result for nobody.
func TestCancelOnClose(t *testing.T) {
	t.Parallel()
	const events = 100
	for _, tc := range []struct {
		name   string
		cfg    Config
		cancel bool
	}{
		{"2026-07-28 cancels", revDesign(), true},
		{"2025-11-25 runs on", statelessDesign(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newServer(t, tc.cfg)
			args := map[string]any{"name": "stream", "arguments": map[string]any{"events": events, "interval_ms": 10, "bytes": 8},
				"_meta": map[string]any{"progressToken": "t"}}
			var resp *http.Response
			if tc.cancel {
				resp = c.rev(2, "tools/call", args)
			} else {
				resp = c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": args}, nil)
			}
			readSSE(t, resp, 3)
			resp.Body.Close() // the client goes away after three events
			var cc *CallCount
			var n *Counts
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				n = srv.Snapshot()
				cc = n.Calls["t"]
				if cc != nil && (cc.Killed || cc.Produced == events) {
					break
				}
			}
			if cc == nil {
				t.Fatal("the call was never counted")
			}
			if !tc.cancel {
				if cc.Produced != events || cc.Cancelled || n.Cancelled != 0 {
					t.Errorf("produced %d of %d, cancelled %v (%d): want the call to run to its result", cc.Produced, events, cc.Cancelled, n.Cancelled)
				}
				return
			}
			if !cc.Cancelled || !cc.Killed || n.Cancelled != 1 || cc.Produced >= events || n.EventsSaved != int64(events-cc.Produced) {
				t.Fatalf("counts %+v, call %+v: want it cancelled, with the %d events it did not produce saved", n, cc, events-cc.Produced)
			}
			time.Sleep(100 * time.Millisecond) // ten more intervals: a call that went on would produce more
			if again := srv.Snapshot().Calls["t"]; again.Produced != cc.Produced {
				t.Errorf("produced %d after the cancel, then %d: the work did not stop", cc.Produced, again.Produced)
			}
		})
	}
}
