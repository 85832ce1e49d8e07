// Command hostile is an MCP Streamable HTTP server that misbehaves on
// purpose, one way per -mode, for the live runner's tests: stormsim aimed
// at it must neither trust it nor be turned against another host. It uses
// the standard library only.
//
//	hostile -listen 127.0.0.1:0 -mode wrong-id [-other http://127.0.0.2:PORT/mcp]
//
// It prints "listening on ADDR" once it accepts connections. Every mode
// answers initialize, notifications/initialized and DELETE as a server
// should; the tool "stream" is where the modes differ:
//
//	ok              progress 1..N, then the result with the call's id
//	wrong-id        the result carries id 0, initialize's
//	unsolicited     the result carries an id the client never sent
//	invalid-json    the result is not JSON
//	retry-overflow  a retry field that overflows a time.Duration in ms, one
//	                event with an id, then the stream ends; every resume
//	                gets the same
//	retry-fast      a retry field of 1 ms, one event with an id, then the
//	                stream ends; every resume gets the same: clients that
//	                honour the hint resume far faster than any backoff
//	redirect-cross  307 to -other, another host
//	redirect-same   307 to /mcp2 on the same origin, which answers as "ok"
//	huge-event      one event of short data lines that never ends (up to
//	                256 MiB)
//	huge-line       one data line of 256 MiB
//	huge-id         events with 100 KiB ids
//	huge-body       the result as one JSON body of 256 MiB
//	huge-session    a 100 KiB Mcp-Session-Id (-session-bytes sets its length)
//	endless         progress notifications without end (up to 10,000,000)
//	index-2e9       progress 1, then 2,000,000,000, then the result (for
//	                server.tool.progress = "index")
//	gzip-bomb       the result as one JSON body sent with Content-Encoding
//	                gzip, whatever the request accepted: about 320 KiB
//	                that decompress to 256 MiB
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	mode := flag.String("mode", "ok", "how to misbehave")
	other := flag.String("other", "", "mode redirect-cross: the URL to redirect to")
	sessionBytes := flag.Int("session-bytes", 100<<10, "mode huge-session: the bytes of x after the session's number")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	s := &server{mode: *mode, other: *other, sessionBytes: *sessionBytes}
	if s.mode == "gzip-bomb" {
		s.bomb = gz(strings.Repeat("x", 256<<20))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.handle)
	mux.HandleFunc("/mcp2", s.handle)
	fmt.Printf("listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

type server struct {
	mode, other  string
	sessionBytes int // huge-session: how long the session id is, past its number
	sessions     atomic.Int64
	bomb         []byte // gzip-bomb: the gzip member of the result's text
}

// gz is s as one gzip member: members written one after the other
// decompress to the concatenation of their texts.
func gz(s string) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	zw.Write([]byte(s)) //nolint:errcheck // a bytes.Buffer
	zw.Close()
	return b.Bytes()
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Arguments struct {
			Events int `json:"events"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		return
	case http.MethodGet:
		if s.mode == "retry-overflow" || s.mode == "retry-fast" {
			s.overflow(w)
			return
		}
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch req.Method {
	case "initialize":
		sid := "s" + strconv.FormatInt(s.sessions.Add(1), 10)
		if s.mode == "huge-session" {
			sid += strings.Repeat("x", s.sessionBytes)
		}
		w.Header().Set("Mcp-Session-Id", sid)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"0"}}}`, req.ID)
	case "tools/call":
		s.call(w, r, &req)
	default:
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
	}
}

func (s *server) call(w http.ResponseWriter, r *http.Request, req *request) {
	switch {
	case s.mode == "redirect-cross":
		http.Redirect(w, r, s.other, http.StatusTemporaryRedirect)
		return
	case s.mode == "redirect-same" && r.URL.Path == "/mcp":
		http.Redirect(w, r, "/mcp2", http.StatusTemporaryRedirect)
		return
	case s.mode == "retry-overflow" || s.mode == "retry-fast":
		s.overflow(w)
		return
	case s.mode == "gzip-bomb":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"`)) //nolint:errcheck // the client may be gone
		w.Write(s.bomb)                                                                                          //nolint:errcheck
		w.Write(gz(`"}]}}`))                                                                                     //nolint:errcheck
		return
	case s.mode == "huge-body":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
		repeat(w, "x", 256<<20)
		fmt.Fprint(w, `"}]}}`)
		return
	}
	if s.huge(w) {
		return
	}
	tok, _ := json.Marshal(req.Params.Meta.ProgressToken)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	n := max(req.Params.Arguments.Events-1, 0)
	values := make([]int, n)
	for i := range values {
		values[i] = i + 1
	}
	switch s.mode {
	case "endless":
		values = nil
		for i := 1; i <= 10_000_000; i++ {
			if _, err := fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d}}\n\n", tok, i); err != nil {
				return
			}
		}
	case "index-2e9":
		values = []int{1, 2_000_000_000}
	}
	for _, v := range values {
		id := ""
		if s.mode == "huge-id" {
			id = "id: " + strings.Repeat("i", 100<<10) + strconv.Itoa(v) + "\n"
		}
		fmt.Fprintf(w, "%sdata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d,\"total\":%d}}\n\n", id, tok, v, n)
	}
	id := string(req.ID)
	switch s.mode {
	case "wrong-id":
		id = "0"
	case "unsolicited":
		id = `"never-sent"`
	case "invalid-json":
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\n\n")
		return
	}
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
}

// huge sends the modes that are one endless event or line; false for the
// others.
func (s *server) huge(w http.ResponseWriter) bool {
	switch s.mode {
	case "huge-event":
		w.Header().Set("Content-Type", "text/event-stream")
		repeat(w, "data: 0123456789abcdef0123456789abcdef\n", 256<<20)
	case "huge-line":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: ")
		repeat(w, "x", 256<<20)
	default:
		return false
	}
	return true
}

// repeat writes s until n bytes are written or the client has gone.
func repeat(w http.ResponseWriter, s string, n int) {
	chunk := []byte(strings.Repeat(s, max(64<<10/len(s), 1)))
	for written := 0; written < n; written += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// overflow sends a retry hint of 18,446,744,073,710 ms, which multiplied
// out to nanoseconds wraps a time.Duration around to 0.45 ms, and one
// event with an id, and ends the stream: a client resumes after the hint.
// In mode retry-fast the hint is 1 ms.
func (s *server) overflow(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	retry := "18446744073710"
	if s.mode == "retry-fast" {
		retry = "1" // 1 ms: a valid hint, far below any backoff
	}
	fmt.Fprint(w, "retry: "+retry+"\nid: e1\ndata: \n\n")
}
