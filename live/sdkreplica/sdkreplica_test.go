package sdkreplica

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The go-sdk replica answers initialize with the design's era, whatever
// version the client asks for; without an era the SDK negotiates (it
// answers a version it supports with that version).
func TestInitializeAnswersTheEra(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		era, asked, want string
	}{
		{"2025-06-18", "2025-11-25", "2025-06-18"}, // a newer client gets the design's era
		{"2025-06-18", "2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-06-18", "2025-11-25"}, // an older client too
		{"", "2025-06-18", "2025-06-18"},           // no era: the SDK's own answer
	} {
		srv := httptest.NewServer(New(Config{Era: c.era}))
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + c.asked + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if !bytes.Contains(got, []byte(`"protocolVersion":"`+c.want+`"`)) {
			t.Errorf("era %q, client asks %s: answer %s, want protocolVersion %s", c.era, c.asked, got, c.want)
		}
	}
}

// Under the revision the go-sdk replica is the SDK's stateless server and
// speaks its era alone: server/discover lists that one version, as the
// reference replica's does, and GET is 405.
func TestRevisionDiscover(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(Config{Era: "2026-07-28", Revision: true}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"supportedVersions":["2026-07-28"]`)) {
		t.Errorf("server/discover: %d %s, want 200 with the era alone", resp.StatusCode, got)
	}
	resp, err = http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
}
