package runner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
)

// reqNames names the requests of the history by what they were for.
var reqNames = [...]string{clients.ReqInitialize: "initialize", clients.ReqInitialized: "notifications/initialized",
	clients.ReqCall: "tools/call", clients.ReqResume: "resume GET", clients.ReqStandalone: "standalone GET", clients.ReqDelete: "DELETE", clients.ReqDiscover: "server/discover"}

// unansweredNote is the note of h's requests that got no answer (no HTTP
// status: the connection failed, the server never sent response headers,
// or the run ended first), by kind, with their most frequent errors; ""
// when every request was answered. They are in the requests and errors of
// the http block too, as "no response" where no error was recorded.
func unansweredNote(h *history.History) string {
	kinds, errs := map[string]int{}, map[string]int{}
	n := 0
	for i := range h.Requests {
		r := &h.Requests[i]
		if r.Status != 0 {
			continue
		}
		n++
		name := "other"
		if int(r.Kind) < len(reqNames) && reqNames[r.Kind] != "" {
			name = reqNames[r.Kind]
		}
		kinds[name]++
		why := r.Err
		if why == "" {
			why = "no response"
		}
		errs[cut(why, 120)]++
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("requests that got no answer: %d (%s); top errors: %s", n, counted(kinds, len(kinds)), counted(errs, 3))
}

// counted lists up to k keys of m with their counts, the largest first.
func counted(m map[string]int, k int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(m[b]-m[a], strings.Compare(a, b)) })
	var parts []string
	for _, key := range keys[:min(len(keys), k)] {
		parts = append(parts, fmt.Sprintf("%d %s", m[key], key))
	}
	return strings.Join(parts, ", ")
}
