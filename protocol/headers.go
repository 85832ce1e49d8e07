package protocol

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The answers of this file are the Streamable HTTP transport's rules
// (MCP 2025-11-25, basic/transports and basic/utilities) that a server
// decides from a request's headers and the shape of its JSON-RPC message,
// before any tool runs: which Host and Origin it serves (DNS rebinding),
// which MCP-Protocol-Version it speaks, what a message without an answer
// gets, what ping answers, and whether a call asked for progress.

// Versions are the protocol versions, oldest first.
var Versions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// VersionSupported reports whether a server of era speaks the version an
// MCP-Protocol-Version header names: a known version no newer than the
// era. An absent header is supported: the server then assumes 2025-03-26,
// as the specification says for clients that predate the header. An
// unsupported one gets 400 Bad Request.
func VersionSupported(header, era string) bool {
	if header == "" {
		return true
	}
	for _, v := range Versions {
		if v == header {
			return true
		}
		if v == era {
			return false
		}
	}
	return false
}

// CheckVersion is the answer to a request's MCP-Protocol-Version header at
// a server of era: 0 when the request may go on, else 400 and why.
func CheckVersion(header, era string) (int, string) {
	if VersionSupported(header, era) {
		return 0, ""
	}
	return http.StatusBadRequest, "unsupported MCP-Protocol-Version " + strconv.Quote(header)
}

// Allow is the set of host names a server answers to: what a Host header
// may name and an Origin header may point at. Loopback names are always in
// it. The zero Allow holds the loopback names alone.
type Allow struct {
	any   bool
	hosts map[string]bool
}

// AnyHost is the name that turns the check off: every Host and Origin pass.
const AnyHost = "*"

// NewAllow returns the loopback names and names, each a host name, an IP
// address or a host:port (the port is ignored), compared without case.
// AnyHost among names allows every host.
func NewAllow(names ...string) Allow {
	a := Allow{hosts: map[string]bool{}}
	for _, n := range names {
		if n == AnyHost {
			a.any = true
			continue
		}
		if h := hostname(n); h != "" {
			a.hosts[h] = true
		}
	}
	return a
}

// hostname is name without its port and brackets, lower case.
func hostname(name string) string {
	name = strings.TrimSpace(name)
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
}

// loopback reports whether h names this machine's loopback interface.
func loopback(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (a Allow) allowed(h string) bool {
	return a.any || loopback(h) || a.hosts[h]
}

// Check decides a request's Host and Origin headers: 0 when the server
// answers it, else 403 Forbidden and why. A request with no Origin (no
// browser sent it) is judged on its Host alone; one whose Origin is
// present and names another host is refused, as the specification
// requires against DNS rebinding.
func (a Allow) Check(host, origin string) (int, string) {
	if a.any {
		return 0, ""
	}
	if !a.allowed(hostname(host)) {
		return http.StatusForbidden, "Host " + quote(host) + " is not one this server answers to"
	}
	if origin == "" {
		return 0, ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !a.allowed(hostname(u.Host)) {
		return http.StatusForbidden, "Origin " + quote(origin) + " is not allowed"
	}
	return 0, ""
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// MsgKind is what a POSTed JSON-RPC message is.
type MsgKind int

const (
	MsgInvalid      MsgKind = iota // none of the below: 400
	MsgRequest                     // a method and an id: it gets an answer
	MsgNotification                // a method and no id
	MsgResponse                    // an id and a result or an error: the client answering the server
)

// KindOf classifies a JSON-RPC message by its fields, as raw JSON (empty
// when absent).
func KindOf(id json.RawMessage, method string, result, rpcErr json.RawMessage) MsgKind {
	hasID := len(id) > 0 && string(id) != "null"
	switch {
	case method != "" && hasID:
		return MsgRequest
	case method != "":
		return MsgNotification
	case hasID && (len(result) > 0) != (len(rpcErr) > 0):
		return MsgResponse
	}
	return MsgInvalid
}

// Accepted reports whether a POSTed message gets 202 Accepted with no body:
// a notification or a response, which nothing answers.
func Accepted(k MsgKind) bool { return k == MsgNotification || k == MsgResponse }

// Builtin is the result of a request every server answers the same way
// whatever it offers, and whether method is one: ping gets an empty
// result, promptly.
func Builtin(method string) (any, bool) {
	if method == "ping" {
		return struct{}{}, true
	}
	return nil, false
}

// ProgressToken is the progress token a request's _meta carries, as raw
// JSON, and whether it carries one: a string or an integer. A server sends
// progress notifications for a call only when it does, and with that
// token alone.
func ProgressToken(meta json.RawMessage) (json.RawMessage, bool) {
	var m struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || len(m.Token) == 0 {
		return nil, false
	}
	var v any
	if json.Unmarshal(m.Token, &v) != nil {
		return nil, false
	}
	switch t := v.(type) {
	case string:
		return m.Token, true
	case float64:
		if t == float64(int64(t)) {
			return m.Token, true
		}
	}
	return nil, false
}

// Codes are the JSON-RPC error codes these rules answer with.
const (
	CodeMethodNotFound = -32601 // a method the server does not have
	CodeInvalidParams  = -32602 // an unknown tool, or bad arguments
)
