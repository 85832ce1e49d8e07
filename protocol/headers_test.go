package protocol

import (
	"encoding/json"
	"testing"
)

func TestVersionSupported(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header, era string
		want        bool
	}{
		{"", "2025-11-25", true},             // no header: 2025-03-26 assumed
		{"2025-11-25", "2025-11-25", true},   // the era itself
		{"2025-03-26", "2025-11-25", true},   // an older known version
		{"2025-11-25", "2025-06-18", false},  // newer than the era
		{"1999-01-01", "2025-11-25", false},  // unknown
		{"2025-11-25 ", "2025-11-25", false}, // not exactly a version
	} {
		if got := VersionSupported(tc.header, tc.era); got != tc.want {
			t.Errorf("VersionSupported(%q, %q) = %v, want %v", tc.header, tc.era, got, tc.want)
		}
	}
}

func TestAllowCheck(t *testing.T) {
	t.Parallel()
	a := NewAllow("mcp.svc.cluster.local:8080", "10.0.0.5", "[fd00::1]:80")
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:8080", "", 0},                                     // loopback, no browser
		{"localhost", "http://localhost:3000", 0},                     // loopback with its own origin
		{"[::1]:9", "", 0},                                            // IPv6 loopback
		{"mcp.svc.cluster.local", "", 0},                              // a name given, its port ignored
		{"MCP.svc.cluster.local:1", "", 0},                            // without case
		{"10.0.0.5:8080", "http://10.0.0.5", 0},                       // an address given
		{"[fd00::1]:8080", "", 0},                                     // an IPv6 address given
		{"evil.example.com", "", 403},                                 // another host
		{"127.0.0.1:8080", "http://evil.example.com", 403},            // rebinding seen in the Origin
		{"evil.example.com", "http://evil.example.com", 403},          // both
		{"127.0.0.1", "null", 403},                                    // an opaque origin
		{"localhost:1", "http://app.localhost:5173", 0},               // a .localhost name
		{"mcp.svc.cluster.local", "https://mcp.svc.cluster.local", 0}, // origin on a given name
	} {
		if got, why := a.Check(tc.host, tc.origin); got != tc.want {
			t.Errorf("Check(%q, %q) = %d %s, want %d", tc.host, tc.origin, got, why, tc.want)
		}
	}
	if got, _ := (Allow{}).Check("evil.example.com", ""); got != 403 {
		t.Errorf("the zero Allow let another host in")
	}
	if got, _ := NewAllow(AnyHost).Check("evil.example.com", "http://evil.example.com"); got != 0 {
		t.Errorf("AnyHost refused a host")
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name        string
		id          json.RawMessage
		method      string
		result, err json.RawMessage
		want        MsgKind
	}{
		{"request", raw("1"), "ping", nil, nil, MsgRequest},
		{"notification", nil, "notifications/initialized", nil, nil, MsgNotification},
		{"null id is a notification", raw("null"), "x", nil, nil, MsgNotification},
		{"result", raw(`"a"`), "", raw("{}"), nil, MsgResponse},
		{"error", raw("2"), "", nil, raw(`{"code":1}`), MsgResponse},
		{"both", raw("2"), "", raw("{}"), raw(`{"code":1}`), MsgInvalid},
		{"id alone", raw("2"), "", nil, nil, MsgInvalid},
		{"empty", nil, "", nil, nil, MsgInvalid},
	} {
		if got := KindOf(tc.id, tc.method, tc.result, tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if !Accepted(MsgResponse) || !Accepted(MsgNotification) || Accepted(MsgRequest) {
		t.Errorf("Accepted: want responses and notifications alone")
	}
	if r, ok := Builtin("ping"); !ok {
		t.Errorf("ping is not builtin")
	} else if b, _ := json.Marshal(r); string(b) != "{}" {
		t.Errorf("ping answers %s, want {}", b)
	}
}

func TestProgressToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		meta, want string
		ok         bool
	}{
		{`{"progressToken":"c1.k2"}`, `"c1.k2"`, true}, // a string
		{`{"progressToken":7}`, `7`, true},             // an integer
		{`{"progressToken":1.5}`, ``, false},           // not an integer
		{`{"progressToken":null}`, ``, false},          // null is none
		{`{"other":1}`, ``, false},                     // absent
		{``, ``, false},                                // no _meta
		{`[1]`, ``, false},                             // not an object
	} {
		got, ok := ProgressToken(json.RawMessage(tc.meta))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("ProgressToken(%s) = %s %v, want %s %v", tc.meta, got, ok, tc.want, tc.ok)
		}
	}
}
