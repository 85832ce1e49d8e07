package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/topology"
)

// TestCheck holds the revision's header and _meta checks to their order
// and their errors; the eras before let every message through.
func TestCheck(t *testing.T) {
	t.Parallel()
	rev := CapsOf("2026-07-28", topology.SessionsLocal, topology.EventsMemory)
	meta := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	call := `{"name":"stream","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	ok := Wire{Request: true, Version: "2026-07-28", VersionSent: true, MethodHead: "tools/list", MethodSent: true, Method: "tools/list", Params: json.RawMessage(meta)}
	with := func(f func(*Wire)) Wire { w := ok; f(&w); return w }
	cases := []struct {
		name   string
		w      Wire
		status int
		code   int
	}{
		{"all there", ok, 0, 0},
		{"no version header", with(func(w *Wire) { w.VersionSent, w.Version = false, "" }), 400, CodeHeaderMismatch},
		{"no Mcp-Method", with(func(w *Wire) { w.MethodSent = false }), 400, CodeHeaderMismatch},
		{"Mcp-Method of another method", with(func(w *Wire) { w.MethodHead = "prompts/list" }), 400, CodeHeaderMismatch},
		// values are case-sensitive; the whitespace around them is not part of them
		{"Mcp-Method upper case", with(func(w *Wire) { w.MethodHead = "TOOLS/LIST" }), 400, CodeHeaderMismatch},
		{"Mcp-Method with whitespace", with(func(w *Wire) { w.MethodHead = "  tools/list " }), 0, 0},
		{"tools/call without Mcp-Name", with(func(w *Wire) { w.Method, w.MethodHead, w.Params = "tools/call", "tools/call", json.RawMessage(call) }), 400, CodeHeaderMismatch},
		{"tools/call with another Mcp-Name", with(func(w *Wire) {
			w.Method, w.MethodHead, w.Params, w.NameHead, w.NameSent = "tools/call", "tools/call", json.RawMessage(call), "other", true
		}), 400, CodeHeaderMismatch},
		{"tools/call with its Mcp-Name", with(func(w *Wire) {
			w.Method, w.MethodHead, w.Params, w.NameHead, w.NameSent = "tools/call", "tools/call", json.RawMessage(call), " stream ", true
		}), 0, 0},
		{"no _meta", with(func(w *Wire) { w.Params = nil }), 400, CodeInvalidParams},
		{"_meta without capabilities", with(func(w *Wire) {
			w.Params = json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)
		}), 400, CodeInvalidParams},
		{"_meta of another version", with(func(w *Wire) {
			w.Params = json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}`)
		}), 400, CodeHeaderMismatch},
		{"a version it does not speak", with(func(w *Wire) {
			w.Version, w.Params = "2025-11-25", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`)
		}), 400, CodeUnsupportedVersion},
		// a notification needs the headers, not the _meta
		{"notification", with(func(w *Wire) {
			w.Request, w.Params, w.Method, w.MethodHead = false, nil, "notifications/cancelled", "notifications/cancelled"
		}), 0, 0},
	}
	for _, c := range cases {
		a := rev.Check(c.w)
		if a.Status != c.status || a.Code != c.code {
			t.Errorf("%s: %d %d (%s), want %d %d", c.name, a.Status, a.Code, a.Why, c.status, c.code)
		}
	}
	if a := rev.Check(with(func(w *Wire) {
		w.Version, w.Params = "v9", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}`)
	})); a.Data == nil {
		t.Errorf("unsupported version: no data: %+v", a)
	} else if d := a.Data.(map[string]any); d["requested"] != "v9" || len(d["supported"].([]string)) != 1 {
		t.Errorf("unsupported version data = %v, want requested v9 and the one supported version", d)
	}
	for _, era := range []string{"2025-06-18", "2025-11-25"} {
		if a := CapsOf(era, topology.SessionsLocal, topology.EventsMemory).Check(Wire{Request: true, Method: "tools/call"}); a.Status != 0 {
			t.Errorf("%s: Check = %+v, want nothing checked before the revision", era, a)
		}
	}
}

// TestRevisionLifecycle holds what Serve answers the lifecycle's requests
// in each era: initialize and its notification are gone in 2026-07-28
// (404, method not found), server/discover is there only then, and only
// then does closing a response stream cancel the call.
func TestRevisionLifecycle(t *testing.T) {
	t.Parallel()
	rev := CapsOf("2026-07-28", topology.SessionsNone, topology.EventsNone)
	old := CapsOf("2025-11-25", topology.SessionsNone, topology.EventsNone)
	cases := []struct {
		name   string
		caps   Caps
		req    clients.Req
		status int
		code   int
	}{
		{"initialize removed", rev, clients.ReqInitialize, 404, CodeMethodNotFound},
		{"initialized removed", rev, clients.ReqInitialized, 404, CodeMethodNotFound},
		{"discover", rev, clients.ReqDiscover, 200, 0},
		{"call", rev, clients.ReqCall, 200, 0},
		{"initialize before", old, clients.ReqInitialize, 200, 0},
		// before the revision server/discover is a method like any unknown one
		{"discover before", old, clients.ReqDiscover, 200, CodeMethodNotFound},
	}
	for _, c := range cases {
		var f script
		a := c.caps.Serve(Request{Kind: c.req}, &f)
		if a.Status != c.status || a.Code != c.code || a.OK() != (c.code == 0) {
			t.Errorf("%s: %d %d ok %v, want %d %d", c.name, a.Status, a.Code, a.OK(), c.status, c.code)
		}
	}
	if !rev.CancelOnClose || !rev.Discover || old.CancelOnClose || old.Discover {
		t.Errorf("2026-07-28 %+v and 2025-11-25 %+v: only the revision discovers and cancels on close", rev, old)
	}
	if _, ok := rev.Builtin("ping"); ok {
		t.Error("2026-07-28 answers ping, which it removed")
	}
	r := rev.Result("tools/list", map[string]any{"tools": []any{}}, map[string]any{"name": "x", "version": "1"})
	if r["resultType"] != "complete" || r["ttlMs"] != 0 || r["cacheScope"] != "private" {
		t.Errorf("2026-07-28 tools/list result = %v, want resultType, ttlMs and cacheScope", r)
	}
	if r := old.Result("tools/list", map[string]any{"tools": []any{}}, nil); len(r) != 1 {
		t.Errorf("2025-11-25 tools/list result = %v, want it as it was", r)
	}
}
