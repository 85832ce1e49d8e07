package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/sse"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// A server the user brings (scenario.OwnServer) is run by the topology
// (server.command) or reached directly (server.url); either way the clients
// call its tool, found here when the scenario does not name it, and the run
// is judged from the client side alone.

// rpc sends one JSON-RPC message and returns the response's status, its
// session header and the JSON-RPC messages of its body, read as JSON or as
// an SSE stream.
func rpc(ctx context.Context, hc *http.Client, endpoint, era, session string, msg map[string]any) (int, string, []json.RawMessage, error) {
	b, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if msg["method"] != "initialize" {
		req.Header.Set("MCP-Protocol-Version", era)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	var out []json.RawMessage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		rd := sse.NewReader(io.LimitReader(resp.Body, 4<<20))
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			if ev.HasData && json.Valid([]byte(ev.Data)) {
				out = append(out, json.RawMessage(ev.Data))
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal([]byte(ev.Data), &m) == nil && m.ID != nil {
					break // the response: the stream has nothing more for us
				}
			}
		}
	} else {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		if json.Valid(data) && len(bytes.TrimSpace(data)) > 0 {
			out = append(out, data)
		}
	}
	return resp.StatusCode, sid, out, nil
}

// discoverTool opens a session with the server, lists its tools and
// returns the first whose input schema takes events and interval_ms.
func discoverTool(ctx context.Context, hc *http.Client, endpoint, era string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	status, sid, _, err := rpc(ctx, hc, endpoint, era, "", map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": era, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "stormsim", "version": "0.1.0"}}})
	if err != nil {
		return "", fmt.Errorf("initialize at %s: %w", endpoint, err)
	}
	if status/100 != 2 {
		return "", fmt.Errorf("initialize at %s answered %d", endpoint, status)
	}
	rpc(ctx, hc, endpoint, era, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}) //nolint:errcheck // tools/list says whether it mattered
	defer func() {
		if sid != "" {
			req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil)
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", era)
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	status, _, msgs, err := rpc(ctx, hc, endpoint, era, sid, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{}})
	if err != nil {
		return "", fmt.Errorf("tools/list at %s: %w", endpoint, err)
	}
	var names []string
	for _, m := range msgs {
		var res struct {
			Result struct {
				Tools []struct {
					Name        string `json:"name"`
					InputSchema struct {
						Properties map[string]json.RawMessage `json:"properties"`
					} `json:"inputSchema"`
				} `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(m, &res) != nil {
			continue
		}
		for _, tl := range res.Result.Tools {
			names = append(names, tl.Name)
			_, ev := tl.InputSchema.Properties["events"]
			_, iv := tl.InputSchema.Properties["interval_ms"]
			if ev && iv {
				return tl.Name, nil
			}
		}
	}
	if names == nil {
		return "", fmt.Errorf("tools/list at %s answered %d with no tools", endpoint, status)
	}
	return "", fmt.Errorf("no tool at %s takes events and interval_ms (its tools: %s): name one in [server.tool] name, with an arguments template",
		endpoint, strings.Join(names, ", "))
}

// ownNotes says how a design with a server the user brings was judged,
// and what the clients saw that the report should flag.
func ownNotes(o *scenario.OwnServer, tool string, h *history.History) (notes []string, noProgress bool) {
	how := "server.command: stormsim ran the replicas and its LB"
	if o.URL != "" {
		how = "server.url: the clients talked to " + o.URL + " directly"
	}
	notes = []string{
		"a server you bring (" + how + "; tool " + tool + ")",
		"judged from the client side alone: events are told apart by their SSE event ids and progress values (server.tool.progress = " +
			strconv.Quote(o.Tool.Progress) + "), the result ends the call, and a call is as long as what the server sent before its result; " +
			"the server's production log is unknown, so " + strings.Join(report.ClientSideUnknown, ", ") + " are not known, " +
			"and events_redone counts the events delivered again on a later stream",
	}
	if !o.HonoursEvents() {
		notes = append(notes, "server.tool.arguments do not pass {events}: a call's expected length is unknown until its result, so "+
			strings.Join(report.LengthUnknown, ", ")+" are not known; events_delivered is")
	}
	// A server that sends no progress notifications leaves only the
	// calls' completion and latency to judge.
	long, progress := false, false
	e := map[[2]int32]int32{}
	for _, c := range h.Calls {
		e[[2]int32{c.Client, c.Seq}] = c.E
		long = long || c.E > 1
	}
	for _, r := range h.Receipts {
		if r.Index >= 1 && r.Index < e[[2]int32{r.Client, r.Seq}] {
			progress = true
			break
		}
	}
	if long && !progress {
		notes = append(notes, "the server sent no progress notifications (with the call's progressToken): only completion and latency can be judged; "+
			"the event counts ("+strings.Join(report.NoProgressUnknown, ", ")+") are not known")
	}
	return notes, long && !progress
}

// hookEnv is the environment a fault hook runs with.
func hookEnv(kind string, s int, replica int, at time.Duration) []string {
	return []string{"STORMSIM_FAULT=" + kind, fmt.Sprintf("STORMSIM_FAULT_INDEX=%d", s),
		fmt.Sprintf("STORMSIM_REPLICA=%d", replica), "STORMSIM_AT=" + at.String()}
}

// hookedKinds lists the fault kinds any of the designs runs a hook for.
func hookedKinds(designs []*scenario.Design) []string {
	var k []string
	for _, d := range designs {
		if d.Own == nil {
			continue
		}
		for kind := range d.Own.FaultHook {
			if !slices.Contains(k, kind) {
				k = append(k, kind)
			}
		}
	}
	return k
}
