package sse

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func readAll(t testing.TB, s string) []Event {
	t.Helper()
	r := NewReader(strings.NewReader(s))
	var out []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want []Event
	}{
		// An MCP stream: the priming event (an id, empty data), then events.
		{"mcp", "id: s_0\ndata: \n\nid: s_1\ndata: {\"a\":1}\n\n",
			[]Event{{ID: "s_0", HasID: true, HasData: true}, {ID: "s_1", HasID: true, Data: `{"a":1}`, HasData: true}}},
		// Multi-line data joins with \n; event types; comments are skipped.
		{"multi", ": keepalive\nevent: message\ndata: a\ndata: b\n\n",
			[]Event{{Type: "message", Data: "a\nb", HasData: true}}},
		// CRLF and CR line ends, and a byte order mark.
		{"line ends", "\ufeffdata: x\r\n\r\ndata: y\r\rdata: z\n\n",
			[]Event{{Data: "x", HasData: true}, {Data: "y", HasData: true}, {Data: "z", HasData: true}}},
		// retry in ms; a non-numeric retry is ignored; an id-only event is returned.
		{"retry", "retry: 1500\n\nretry: 1s\nid: k\n\n",
			[]Event{{Retry: 1500 * time.Millisecond, HasRetry: true}, {ID: "k", HasID: true}}},
		// A retry above MaxRetry is clamped, however many digits: one that
		// wraps time.Duration around, one past uint64, one just within.
		{"huge retry", "retry: 9223372036855\n\nretry: 184467440737095516170\n\nretry: 600000\n\n",
			[]Event{{Retry: MaxRetry, HasRetry: true, RetryClamped: true}, {Retry: MaxRetry, HasRetry: true, RetryClamped: true},
				{Retry: MaxRetry, HasRetry: true}}},
		// The last id carries over to later events; an id with NUL is ignored.
		{"last id", "id: a\ndata: 1\n\ndata: 2\n\nid: b\x00c\ndata: 3\n\n",
			[]Event{{ID: "a", HasID: true, Data: "1", HasData: true}, {ID: "a", Data: "2", HasData: true}, {ID: "a", Data: "3", HasData: true}}},
		// A field without a colon has an empty value; no space is stripped twice.
		{"fields", "data\ndata:  two spaces\n\n", []Event{{Data: "\n two spaces", HasData: true}}},
		// An event cut off by the end of the stream is not dispatched.
		{"cut", "data: whole\n\ndata: cut", []Event{{Data: "whole", HasData: true}}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, readAll(t, c.in)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestLimits: a stream over a limit fails with the limit's error, never
// buffering more; within the limits it reads as without them.
func TestLimits(t *testing.T) {
	t.Parallel()
	lim := Limits{Line: 16, Event: 20, ID: 8}
	cases := []struct {
		name, in string
		want     error
	}{
		{"within", "id: 12345678\ndata: 0123456789\ndata: 012345678\n\n", io.EOF},    // 10 + 9 bytes of data, an 8-byte id
		{"line", "data: 0123456789abcdef\n\n", ErrLineTooLong},                       // one line of 22 bytes
		{"event", "data: 0123456789\ndata: 0123456789\ndata: x\n", ErrEventTooLarge}, // short lines, no blank line: 21 bytes of data
		{"id", "id: 123456789\ndata: x\n\n", ErrIDTooLong},                           // a 9-byte id
		{"endless", strings.Repeat("data: 0123456789\n", 1000), ErrEventTooLarge},    // an event that never ends
	}
	for _, c := range cases {
		r := NewReaderLimits(strings.NewReader(c.in), lim)
		var err error
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestParseRetry: hints in ms and in s, within MaxRetry, above it, and not
// numbers at all.
func TestParseRetry(t *testing.T) {
	t.Parallel()
	type got struct {
		D           time.Duration
		Clamped, OK bool
	}
	cases := []struct {
		value string
		unit  time.Duration
		want  got
	}{
		{"1500", time.Millisecond, got{1500 * time.Millisecond, false, true}}, // an ordinary retry field
		{"0", time.Millisecond, got{0, false, true}},                          // zero is a hint of no wait
		{"600", time.Second, got{MaxRetry, false, true}},                      // a Retry-After of exactly MaxRetry
		{"601", time.Second, got{MaxRetry, true, true}},                       // one second over
		{"99999999999999999999999", time.Second, got{MaxRetry, true, true}},   // past uint64
		{"9223372036855", time.Millisecond, got{MaxRetry, true, true}},        // would wrap time.Duration
		{"-5", time.Second, got{0, false, false}},                             // not digits
		{"", time.Second, got{0, false, false}},                               // empty
	}
	for _, c := range cases {
		d, cl, ok := ParseRetry(c.value, c.unit)
		if diff := cmp.Diff(c.want, got{d, cl, ok}); diff != "" {
			t.Errorf("ParseRetry(%q, %v) (-want +got):\n%s", c.value, c.unit, diff)
		}
	}
}

// FuzzSSEParser: any input parses without panicking, and what the writer
// side of the protocol writes comes back intact.
func FuzzSSEParser(f *testing.F) {
	f.Add("id: s_0\ndata: \n\n", "payload", "s_1")
	f.Add("data: a\r\ndata: b\r\n\r\n", "x\ny", "")
	f.Add(": c\nretry: 10\n\n", "", "id")
	f.Fuzz(func(t *testing.T, raw, data, id string) {
		r := NewReader(strings.NewReader(raw))
		for i := 0; i < 10000; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if ev.HasRetry && (ev.Retry < 0 || ev.Retry > MaxRetry) {
				t.Fatalf("retry %v outside 0..%v", ev.Retry, MaxRetry)
			}
			if strings.ContainsAny(ev.Data, "\r") && !strings.Contains(raw, "\r") {
				t.Fatalf("data %q has a CR the input did not", ev.Data)
			}
		}
		// Round trip: a well-formed event written as MCP servers write it.
		if strings.ContainsAny(id, "\r\n\x00") || strings.ContainsRune(data, '\r') {
			return
		}
		var b strings.Builder
		b.WriteString("id: " + id + "\n")
		for _, l := range strings.Split(data, "\n") {
			b.WriteString("data: " + l + "\n")
		}
		b.WriteString("\n")
		got := readAll(t, b.String())
		if len(got) != 1 || got[0].Data != data || got[0].ID != id {
			t.Fatalf("round trip of id %q data %q gave %+v", id, data, got)
		}
	})
}

// BenchmarkNext reads events shaped like a replica's progress events: an
// id and one data line each. It reports the allocations per event.
func BenchmarkNext(b *testing.B) {
	var s strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&s, "id: 3f2a9c1e-7d4b-4e0a-9a61-5c2e8b0d4f17/%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t-17\",\"progress\":%d,\"total\":62,\"message\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}\n\n", i, i)
	}
	in := s.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r := NewReader(strings.NewReader(in))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
