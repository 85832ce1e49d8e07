package replica

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// specCase is one answer the MCP specification requires, checked against
// a replica of cfg.
type specCase struct {
	name string
	cfg  func() Config
	run  func(t *testing.T, c *client)
}

// runSpec checks each case against a replica of its own, over real HTTP.
func runSpec(t *testing.T, cases []specCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := newServer(t, tc.cfg())
			tc.run(t, c)
		})
	}
}

// The answers the MCP specification (2025-11-25) requires of the transport
// and the base protocol, over real HTTP: a ping, a POSTed response, an
// unsupported protocol version. Each row failed on the replica before it
// followed them.
func TestSpecAnswers(t *testing.T) {
	t.Parallel()
	runSpec(t, []specCase{
		// ping gets an empty result, not "method not found".
		{"ping", memoryDesign, func(t *testing.T, c *client) {
			c.initialize()
			got := decode(t, c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 7, "method": "ping"}, nil))
			if string(got["result"]) != "{}" || string(got["id"]) != "7" {
				t.Errorf("ping: %v, want the result {} for id 7", str(got))
			}
		}},
		// ping on a stateless design too.
		{"ping stateless", statelessDesign, func(t *testing.T, c *client) {
			got := decode(t, c.do("POST", map[string]any{"jsonrpc": "2.0", "id": "p", "method": "ping"}, nil))
			if string(got["result"]) != "{}" {
				t.Errorf("ping: %v, want the result {}", str(got))
			}
		}},
		// A JSON-RPC response the client POSTs is accepted with 202 and no body.
		{"posted response", memoryDesign, func(t *testing.T, c *client) {
			c.initialize()
			for _, msg := range []map[string]any{
				{"jsonrpc": "2.0", "id": 3, "result": map[string]any{}},
				{"jsonrpc": "2.0", "id": "x", "error": map[string]any{"code": -32601, "message": "no"}},
			} {
				resp := c.do("POST", msg, nil)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted || len(body) != 0 {
					t.Errorf("%v: %d %q, want 202 and no body", msg, resp.StatusCode, body)
				}
			}
		}},
		// A message that is neither a request, a notification nor a response is 400.
		{"not a message", memoryDesign, func(t *testing.T, c *client) {
			c.initialize()
			resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 3}, nil)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("an id alone: %d, want 400", resp.StatusCode)
			}
		}},
		// An unsupported MCP-Protocol-Version is 400 on POST, GET and DELETE.
		{"unsupported version", memoryDesign, func(t *testing.T, c *client) {
			c.initialize()
			bad := map[string]string{"MCP-Protocol-Version": "1999-01-01"}
			for _, method := range []string{"POST", "GET", "DELETE"} {
				var body any
				if method == "POST" {
					body = map[string]any{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
				}
				resp := c.do(method, body, bad)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("%s with version 1999-01-01: %d, want 400", method, resp.StatusCode)
				}
			}
			resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, map[string]string{"MCP-Protocol-Version": "2025-11-25"})
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("POST with the era's version: %d, want 200", resp.StatusCode)
			}
		}},
		// A 2025-06-18 replica does not speak 2025-11-25.
		{"newer than the era", func() Config { d := memoryDesign(); d.Era = "2025-06-18"; return d }, func(t *testing.T, c *client) {
			c.initialize()
			resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, map[string]string{"MCP-Protocol-Version": "2025-11-25"})
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("version 2025-11-25 to a 2025-06-18 replica: %d, want 400", resp.StatusCode)
			}
		}},
	})
}

// A call without a progress token, and DNS rebinding: both rows failed on
// the replica before it followed the specification.
func TestSpecProgressAndHosts(t *testing.T) {
	t.Parallel()
	runSpec(t, []specCase{
		// A call without _meta.progressToken gets no progress notification:
		// its events keep their ids (a resume still works) and carry no data.
		{"no progress token", memoryDesign, func(t *testing.T, c *client) {
			c.initialize()
			resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
				"params": map[string]any{"name": "stream", "arguments": map[string]any{"events": 4, "interval_ms": 1}}}, nil)
			evs := readSSE(t, resp, 0)
			resp.Body.Close()
			if len(evs) != 5 {
				t.Fatalf("events: %+v, want the priming event, 3 more and the result", evs)
			}
			for _, e := range evs[:4] {
				if e.Data != "" {
					t.Errorf("event %s carries %q, want no data: no progress token was given", e.ID, e.Data)
				}
			}
			if !strings.Contains(evs[4].Data, `"result"`) {
				t.Errorf("last event: %+v, want the result", evs[4])
			}
		}},
		// Another Host, or another Origin, is refused with 403 (DNS rebinding);
		// loopback names pass.
		{"dns rebinding", memoryDesign, func(t *testing.T, c *client) {
			for _, h := range []map[string]string{
				{"Host": "evil.example.com", "Origin": "http://evil.example.com"},
				{"Host": "evil.example.com"},
				{"Origin": "http://evil.example.com"},
			} {
				resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}}, h)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("initialize with %v: %d, want 403 and no session", h, resp.StatusCode)
				}
			}
			for _, h := range []map[string]string{
				{"Host": "localhost", "Origin": "http://localhost:3000"},
				{"Origin": "http://127.0.0.1"},
				{"Host": "[::1]:8080"},
			} {
				resp := c.do("POST", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}}, h)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("initialize with %v: %d, want 200", h, resp.StatusCode)
				}
			}
		}},
	})
}

func statelessDesign() Config {
	return Config{Sessions: topology.SessionsNone, Events: topology.EventsNone}
}

// decode reads a JSON-RPC answer's fields.
func decode(t *testing.T, resp *http.Response) map[string]json.RawMessage {
	t.Helper()
	defer resp.Body.Close()
	var m map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("status %d, not JSON: %v", resp.StatusCode, err)
	}
	return m
}

func str(m map[string]json.RawMessage) string { b, _ := json.Marshal(m); return string(b) }
