package protocol

import (
	"encoding/json"
	"strings"
)

// The rules of this file are the 2026-07-28 revision's (Caps.Discover;
// docs/domain.md, "The 2026-07-28 revision"): with no initialize, every
// request carries what it needs in its _meta, and its headers repeat the
// method, the name it acts on and the protocol version, so that an
// intermediary can route it without reading the body. The server checks
// them before anything else and answers server/discover with what it
// offers. Each result says it is complete (resultType), and the results a
// client may cache say for how long and for whom.

// The request headers the revision requires.
const (
	HeaderVersion = "MCP-Protocol-Version"
	HeaderMethod  = "Mcp-Method"
	HeaderName    = "Mcp-Name"
)

// The _meta keys of a request and of a result.
const (
	MetaVersion      = "io.modelcontextprotocol/protocolVersion"
	MetaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo   = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo   = "io.modelcontextprotocol/serverInfo"
)

// The revision's JSON-RPC error codes.
const (
	CodeHeaderMismatch     = -32020 // a header missing or not matching the body
	CodeUnsupportedVersion = -32022 // a protocol version the server does not speak
)

// Wire is what the revision's checks read from one POSTed message: its
// headers (each with whether it was sent at all) and its body's method,
// name and _meta.
type Wire struct {
	Request bool // the message has an id: it gets an answer

	Version     string // MCP-Protocol-Version
	VersionSent bool
	MethodHead  string // Mcp-Method
	MethodSent  bool
	NameHead    string // Mcp-Name
	NameSent    bool

	Method string          // the body's method
	Params json.RawMessage // the body's params, raw ("" when absent)
}

// Check decides a POSTed message under the revision: 0 (the zero Answer)
// when it may go on, else a 400 with the JSON-RPC error to send, in this
// order: the protocol version header is there; Mcp-Method matches the
// body's method and Mcp-Name the name it acts on (header values compared
// exactly, after the surrounding whitespace HTTP allows); a request's
// _meta names a protocol version and the client's capabilities; that
// version is the header's; and it is one this server speaks. Eras before
// the revision check only the version header (CheckVersion), so Check
// lets everything through there.
func (c Caps) Check(w Wire) Answer {
	if !c.Discover {
		return Answer{}
	}
	version := strings.TrimSpace(w.Version)
	if !w.VersionSent || version == "" {
		return mismatch("missing " + HeaderVersion + " header")
	}
	if !w.MethodSent || strings.TrimSpace(w.MethodHead) != w.Method {
		return mismatch(HeaderMethod + " header " + quote(strings.TrimSpace(w.MethodHead)) + " does not match the method " + quote(w.Method))
	}
	if name, ok := NameOf(w.Method, w.Params); ok && (!w.NameSent || strings.TrimSpace(w.NameHead) != name) {
		return mismatch(HeaderName + " header " + quote(strings.TrimSpace(w.NameHead)) + " does not match " + quote(name))
	}
	if !w.Request {
		return Answer{}
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(w.Params, &p) //nolint:errcheck // a body that is no object has no _meta: refused below
	var missing []string
	for _, k := range []string{MetaVersion, MetaCapabilities} {
		if _, ok := p.Meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Answer{Status: 400, Code: CodeInvalidParams, Why: "invalid params: _meta lacks " + strings.Join(missing, ", ")}
	}
	var meta string
	if json.Unmarshal(p.Meta[MetaVersion], &meta) != nil || meta != version {
		return mismatch(HeaderVersion + " header " + quote(version) + " does not match _meta " + string(p.Meta[MetaVersion]))
	}
	if !c.speaks(version) {
		return Answer{Status: 400, Code: CodeUnsupportedVersion, Why: "unsupported protocol version " + quote(version),
			Data: map[string]any{"supported": c.SupportedVersions(), "requested": version}}
	}
	return Answer{}
}

func mismatch(why string) Answer { return Answer{Status: 400, Code: CodeHeaderMismatch, Why: why} }

// SupportedVersions are the protocol versions a server of c speaks, for
// server/discover and an unsupported-version error: its era alone, from
// 2026-07-28 on, as a client of an earlier one would open with the
// initialize this server does not have.
func (c Caps) SupportedVersions() []string { return []string{c.Era} }

func (c Caps) speaks(version string) bool {
	for _, v := range c.SupportedVersions() {
		if v == version {
			return true
		}
	}
	return false
}

// NameOf is the name a request acts on, which Mcp-Name must repeat: the
// tool of tools/call, the prompt of prompts/get, the uri of
// resources/read; false for every other method.
func NameOf(method string, params json.RawMessage) (string, bool) {
	key := ""
	switch method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	default:
		return "", false
	}
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p[key], &name) != nil {
		return "", false
	}
	return name, true
}

// Builtin is the result of a request every server of c answers the same
// way: ping's, before the revision removed it.
func (c Caps) Builtin(method string) (any, bool) {
	if c.Discover {
		return nil, false
	}
	return Builtin(method)
}

// cacheable are the methods whose results say how long a client may keep
// them (ttlMs) and whether a shared cache may (cacheScope).
var cacheable = map[string]bool{"server/discover": true, "tools/list": true, "prompts/list": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true}

// Result is the result of method as a server of c sends it: under the
// revision it says it is complete, names the server in its _meta, and a
// cacheable one is to be fetched again each time (ttlMs 0) by this client
// alone (cacheScope "private"). Before the revision it is result as it is.
func (c Caps) Result(method string, result map[string]any, server map[string]any) map[string]any {
	if !c.Discover {
		return result
	}
	result["resultType"] = "complete"
	result["_meta"] = map[string]any{MetaServerInfo: server}
	if cacheable[method] {
		result["ttlMs"], result["cacheScope"] = 0, "private"
	}
	return result
}

// DiscoverResult answers server/discover: the versions the server speaks
// and its capabilities.
func (c Caps) DiscoverResult(capabilities map[string]any, server map[string]any) map[string]any {
	return c.Result("server/discover", map[string]any{"supportedVersions": c.SupportedVersions(), "capabilities": capabilities}, server)
}
