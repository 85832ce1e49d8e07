package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// byteLines is the reader's line splitting as it was first written, a
// byte at a time: the reference the buffered line must agree with.
type byteLines struct {
	br       *bufio.Reader
	lim      int
	pendingR bool
}

func (r *byteLines) line() (string, error) {
	var buf bytes.Buffer
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			if err == io.EOF && buf.Len() > 0 {
				return buf.String(), io.ErrUnexpectedEOF
			}
			return "", err
		}
		if r.pendingR {
			r.pendingR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return buf.String(), nil
		case '\r':
			r.pendingR = true
			return buf.String(), nil
		}
		if r.lim > 0 && buf.Len() >= r.lim {
			return "", ErrLineTooLong
		}
		buf.WriteByte(b)
	}
}

// copied adapts the reader's line, whose bytes are valid until the next
// call, to lines: each line is copied before the next is read.
func copied(line func() ([]byte, error)) func() (string, error) {
	return func() (string, error) {
		b, err := line()
		return string(b), err
	}
}

// lines splits in with next until an error, as "line|" entries ending in
// the error.
func lines(next func() (string, error)) []string {
	var out []string
	for range 10000 {
		l, err := next()
		if err != nil {
			kind := err.Error()
			if errors.Is(err, ErrLineTooLong) {
				kind = "too long"
			}
			return append(out, fmt.Sprintf("%q error %s", l, kind))
		}
		out = append(out, fmt.Sprintf("%q", l))
	}
	return out
}

// TestLineSplitting: the buffered line splits every input as the byte at a
// time one does, whatever the reads deliver: all at once, one byte per
// read (a CR at the end of one read and its LF in the next), or through a
// buffer smaller than a line; and within a line limit.
func TestLineSplitting(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"", "a", "a\n", "a\r", "a\r\n", "\r\n\r\n", "\n\r", "\r\r\n\n",
		"id: s_0\ndata: \n\n", "data: a\r\ndata: b\r\n\r\n", ": c\nretry: 10\n\n",
		"data: " + strings.Repeat("x", 40000) + "\r\ndata: y\rlast",
		strings.Repeat("0123456789abcdef\r", 50), "exactly16bytes!!\nseventeen bytes!!\n",
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one-byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, in := range inputs {
		for name, mk := range readers {
			for _, lim := range []int{0, 16} {
				want := lines((&byteLines{br: bufio.NewReader(mk(in)), lim: lim}).line)
				r := NewReaderLimits(mk(in), Limits{Line: lim})
				if got := lines(copied(r.line)); !equal(got, want) {
					t.Errorf("%q read %s, line limit %d:\n got %q\nwant %q", trim(in), name, lim, got, want)
				}
				small := &Reader{br: bufio.NewReaderSize(mk(in), 16), lim: Limits{Line: lim}}
				if got := lines(copied(small.line)); !equal(got, want) {
					t.Errorf("%q read %s through a 16-byte buffer, line limit %d:\n got %q\nwant %q", trim(in), name, lim, got, want)
				}
			}
		}
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func trim(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// BenchmarkReaderEvents reads MCP progress notifications as the live
// clients do, one Reader per stream of 62 events: the per-event cost of
// the clients' parsing.
func BenchmarkReaderEvents(b *testing.B) {
	var s strings.Builder
	for i := range 62 {
		fmt.Fprintf(&s, "id: 0123456789abcdef_%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"message\":\"%s\",\"progress\":%d,\"progressToken\":\"c12.k1.a0\",\"total\":62}}\n\n", i, strings.Repeat("x", 200), i)
	}
	stream := s.String()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(strings.NewReader(stream))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*62), "ns/event")
}
