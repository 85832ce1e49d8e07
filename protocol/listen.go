package protocol

import (
	"encoding/json"
	"time"
)

// The rules of this file are subscriptions/listen's (Caps.Listen; SEP-2575,
// 2026-07-28; docs/domain.md, "The 2026-07-28 revision"). The revision
// removes the standalone GET stream and resources/subscribe: a client that
// wants notifications POSTs subscriptions/listen naming the ones it wants,
// and the server answers with an SSE stream that stays open. Its first
// message is notifications/subscriptions/acknowledged with the subset the
// server agreed to honour; every message on it carries the listen
// request's id in _meta (MetaSubscriptionID); the result comes only when
// the server ends the subscription gracefully. The stream has no event ids
// and no replay: what the server sends while it is down is lost.

// The listen stream's methods and _meta keys.
const (
	MethodListen       = "subscriptions/listen"
	MethodListenAck    = "notifications/subscriptions/acknowledged"
	MethodToolsChanged = "notifications/tools/list_changed"
	MethodResChanged   = "notifications/resources/list_changed"
	MethodResUpdated   = "notifications/resources/updated"
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
	// MetaNotifySeq numbers a notification on its listener's schedule
	// (NotifyDue): stormsim's own key, so that a client can tell which
	// ones it missed and the counters can be reconciled.
	MetaNotifySeq = "io.stormsim/seq"
	// MetaListener names a listener and the start of its schedule in a
	// listen request's _meta: {"id": ..., "anchor": Unix ns}.
	MetaListener = "io.stormsim/listener"
)

// Subscriptions are the notifications a listen request asks for, and the
// subset an acknowledgement says the server will send (go-sdk v1.8.0's
// NotificationSubscriptions).
type Subscriptions struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Any reports whether s names at least one notification.
func (s Subscriptions) Any() bool {
	return s.ToolsListChanged || s.PromptsListChanged || s.ResourcesListChanged || len(s.ResourceSubscriptions) > 0
}

func (c Caps) serveListen(r Request) Answer {
	switch {
	case !c.Listen:
		return c.NotFound(MethodListen)
	case r.Draining:
		return draining
	}
	return Answer{Status: 200}
}

// ListenParams reads a listen request's params: what it asks for, or a
// 400 with -32602 when it names no notifications object (the field is
// required, as go-sdk's server says).
func ListenParams(params json.RawMessage) (Subscriptions, Answer) {
	var p struct {
		Notifications *Subscriptions `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil || p.Notifications == nil {
		return Subscriptions{}, Answer{Status: 400, Code: CodeInvalidParams, Why: "invalid params: " + MethodListen + " lacks notifications"}
	}
	return *p.Notifications, Answer{}
}

// Honour is the subset of want a server agrees to send: the list changes
// of its tools and resources and the updates of any resource, when it
// sends notifications at all (notifies: the replica's notification rate
// is above 0); never prompts, which it does not have. A server must not
// send what the client did not ask for.
func Honour(want Subscriptions, notifies bool) Subscriptions {
	if !notifies {
		return Subscriptions{}
	}
	return Subscriptions{ToolsListChanged: want.ToolsListChanged, ResourcesListChanged: want.ResourcesListChanged,
		ResourceSubscriptions: want.ResourceSubscriptions}
}

// ListenCapabilities are the capabilities a server declares in
// server/discover for what its listen streams deliver: none unless it
// serves listen streams and sends notifications on them.
func (c Caps) ListenCapabilities(notifies bool) map[string]any {
	if !c.Listen || !notifies {
		return map[string]any{}
	}
	return map[string]any{"tools": map[string]any{"listChanged": true},
		"resources": map[string]any{"subscribe": true, "listChanged": true}}
}

// ListenAck is the first message of a listen stream whose request had id.
func ListenAck(id json.RawMessage, agreed Subscriptions) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "method": MethodListenAck,
		"params": map[string]any{"_meta": map[string]any{MetaSubscriptionID: id}, "notifications": agreed}}
}

// ListenNotification is notification seq (1, 2, ...) of a listen stream:
// the kinds agreed take turns (a resource update, a tools list change, a
// resources list change), each tagged with the subscription and its seq.
// ok is false when nothing was agreed.
func ListenNotification(id json.RawMessage, seq int64, agreed Subscriptions) (map[string]any, bool) {
	var kinds []string
	for _, u := range agreed.ResourceSubscriptions {
		kinds = append(kinds, "uri:"+u)
	}
	if agreed.ToolsListChanged {
		kinds = append(kinds, MethodToolsChanged)
	}
	if agreed.ResourcesListChanged {
		kinds = append(kinds, MethodResChanged)
	}
	if len(kinds) == 0 {
		return nil, false
	}
	params := map[string]any{"_meta": map[string]any{MetaSubscriptionID: id, MetaNotifySeq: seq}}
	method := kinds[int((seq-1)%int64(len(kinds)))]
	if len(method) > 4 && method[:4] == "uri:" {
		params["uri"], method = method[4:], MethodResUpdated
	}
	return map[string]any{"jsonrpc": "2.0", "method": method, "params": params}, true
}

// ListenResult ends a listen stream gracefully (a server that shuts down
// the subscription); an abrupt close sends none.
func (c Caps) ListenResult(id json.RawMessage, server map[string]any) map[string]any {
	r := c.Result(MethodListen, map[string]any{}, server)
	if m, ok := r["_meta"].(map[string]any); ok {
		m[MetaSubscriptionID] = id
	}
	return r
}

// NotifyInterval is the time between two notifications of one listener
// at rate per second (0: none).
func NotifyInterval(rate float64) int64 {
	if rate <= 0 {
		return 0
	}
	return max(int64(float64(time.Second)/rate), 1)
}

// NotifyDue counts the notifications of a listener's schedule that fall
// in [from, to): notification k (k ≥ 1) of a listener anchored at anchor
// is due at anchor + k·iv, whether or not its stream is open then. The
// simulator and the replica both number notifications so; one sent while
// the listener has no open stream reaches nobody.
func NotifyDue(anchor, from, to, iv int64) int64 {
	if iv <= 0 || to <= from {
		return 0
	}
	return notifyBefore(anchor, to, iv) - notifyBefore(anchor, from, iv)
}

// notifyBefore counts k ≥ 1 with anchor + k·iv < t.
func notifyBefore(anchor, t, iv int64) int64 {
	if t <= anchor {
		return 0
	}
	return (t - anchor - 1) / iv
}

// NotifySeq is the seq of the last notification due at or before t.
func NotifySeq(anchor, t, iv int64) int64 {
	if iv <= 0 || t < anchor {
		return 0
	}
	return (t - anchor) / iv
}
