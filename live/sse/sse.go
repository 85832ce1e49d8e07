// Package sse parses a text/event-stream as the HTML Living Standard
// describes it: lines end in CRLF, LF or CR; "data" lines join with "\n";
// "id" sets the last event id (ignored when it holds NUL); "retry" sets the
// reconnection time when it is all ASCII digits, clamped to MaxRetry (see
// ParseRetry); lines starting with ":" are comments; a blank line
// dispatches the event.
//
// Unlike a browser, Next also returns an event that carries only an id: for
// MCP resumption the id is what matters (a priming event may have no data).
//
//	r := sse.NewReader(resp.Body)
//	for {
//		ev, err := r.Next()
//		if err != nil { break }
//		fmt.Println(ev.ID, ev.Data)
//	}
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// Event is one dispatched event.
type Event struct {
	ID       string        // the last event id after this event ("" when none was ever set)
	HasID    bool          // this event's own lines set the id
	Type     string        // the "event" field; "" means "message"
	Data     string        // data lines joined with "\n"
	HasData  bool          // at least one data line
	Retry    time.Duration // the reconnection time, when HasRetry
	HasRetry bool
	// RetryClamped: the server's retry value was above MaxRetry and Retry
	// is MaxRetry.
	RetryClamped bool
}

// MaxRetry is the longest reconnection time a server's hint can ask for,
// as a "retry" field or a Retry-After header: a longer one is clamped to
// it. Ten minutes is longer than any client profile's backoff, so a real
// hint is kept, while a huge or overflowing one cannot stall a call for
// years or wrap around to a negative (or tiny) delay.
const MaxRetry = 10 * time.Minute

// ParseRetry reads a server's retry hint: value is ASCII digits counting
// units (time.Millisecond for an SSE "retry" field, time.Second for a
// Retry-After header). It never overflows: a value above MaxRetry, however
// many digits it has, gives MaxRetry and clamped true. ok is false when
// value is not all digits.
func ParseRetry(value string, unit time.Duration) (d time.Duration, clamped, ok bool) {
	if value == "" || !isDigits(value) {
		return 0, false, false
	}
	limit := uint64(MaxRetry / unit)
	var n uint64
	for i := 0; i < len(value); i++ {
		n = n*10 + uint64(value[i]-'0')
		if n > limit {
			return MaxRetry, true, true
		}
	}
	return time.Duration(n) * unit, false, true
}

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	br       *bufio.Reader
	lastID   string
	started  bool
	lim      Limits
	pendingR bool   // the previous line ended in CR: skip an LF that follows
	long     []byte // a line longer than the buffer, put together
	data     []byte // the event's data lines so far, each ending in "\n"
}

// Limits bound what a Reader holds, whatever the stream sends: the reader
// fails with ErrLineTooLong, ErrEventTooLarge or ErrIDTooLong (wrapped,
// with the limit) rather than buffer more. A zero field is no limit.
type Limits struct {
	Line  int // bytes of one line
	Event int // bytes of one event's data, its lines joined
	ID    int // bytes of an event id
}

// Errors for a stream over the reader's limits.
var (
	ErrLineTooLong   = errors.New("sse: line too long")
	ErrEventTooLarge = errors.New("sse: event too large")
	ErrIDTooLong     = errors.New("sse: event id too long")
)

// NewReader reads from r; lines may be up to 4 MiB, events and ids any
// size up to that.
func NewReader(r io.Reader) *Reader {
	return NewReaderLimits(r, Limits{Line: 4 << 20})
}

// NewReaderLimits reads from r within lim.
func NewReaderLimits(r io.Reader, lim Limits) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 16<<10), lim: lim}
}

// LastID is the last event id seen so far.
func (r *Reader) LastID() string { return r.lastID }

// line reads one line without its terminator (CRLF, LF or CR). It scans
// what the buffer holds for the terminator and returns the line in place,
// rather than a byte at a time or as a copy: it runs for every line of
// every stream. The bytes are valid until the next call.
func (r *Reader) line() ([]byte, error) {
	if r.pendingR {
		r.pendingR = false
		if b, err := r.br.Peek(1); err == nil && b[0] == '\n' {
			r.br.Discard(1) //nolint:errcheck // the byte is buffered
		}
	}
	r.long = r.long[:0] // what came before, for a line longer than one buffer's worth
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF && len(r.long) > 0 {
					return r.long, io.ErrUnexpectedEOF // a last line without its end
				}
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if r.lim.Line > 0 && len(r.long)+n > r.lim.Line {
			return nil, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, r.lim.Line)
		}
		if i < 0 {
			r.long = append(r.long, buf...)
			r.br.Discard(len(buf)) //nolint:errcheck // the bytes are buffered
			continue
		}
		line := buf[:i]
		if len(r.long) > 0 {
			r.long = append(r.long, line...)
			line = r.long
		}
		r.pendingR = buf[i] == '\r'
		// The bytes stay in the buffer until the next read fills it:
		// Discard only moves the read position.
		r.br.Discard(i + 1) //nolint:errcheck // the bytes are buffered
		return line, nil
	}
}

// bom is the byte order mark that may start a stream.
var bom = []byte("\ufeff")

// Next returns the next event. It returns io.EOF at the end of the stream;
// an event cut off by the end of the stream is not dispatched.
func (r *Reader) Next() (Event, error) {
	ev, data, err := r.NextBytes()
	if ev.HasData {
		ev.Data = string(data)
	}
	return ev, err
}

// NextBytes is Next without the copy of the data into Event.Data, which it
// leaves empty: the data is the returned slice, which stays valid only
// until the next call. A reader of every event of many streams spares an
// allocation an event.
func (r *Reader) NextBytes() (Event, []byte, error) {
	var ev Event
	r.data = r.data[:0]
	seen := false
	for {
		line, err := r.line()
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return Event{}, nil, io.EOF
			}
			return Event{}, nil, err
		}
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			ev.ID = r.lastID
			var data []byte
			if ev.HasData {
				data = r.data[:len(r.data)-1] // without the last "\n"
			}
			if ev.HasData || ev.HasID || ev.HasRetry {
				return ev, data, nil
			}
			ev, seen = Event{}, false
			r.data = r.data[:0]
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		seen = true
		if err := r.field(&ev, line); err != nil {
			return Event{}, nil, err
		}
	}
}

// field applies one field line to ev and the reader's state.
func (r *Reader) field(ev *Event, line []byte) error {
	field, value, found := bytes.Cut(line, []byte(":"))
	if found {
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(field) {
	case "data":
		if r.lim.Event > 0 && len(r.data)+len(value) > r.lim.Event {
			return fmt.Errorf("%w: over %d bytes", ErrEventTooLarge, r.lim.Event)
		}
		r.data = append(append(r.data, value...), '\n')
		ev.HasData = true
	case "event":
		ev.Type = string(value)
	case "id":
		if r.lim.ID > 0 && len(value) > r.lim.ID {
			return fmt.Errorf("%w: over %d bytes", ErrIDTooLong, r.lim.ID)
		}
		if bytes.IndexByte(value, 0) < 0 {
			r.lastID, ev.HasID = string(value), true
		}
	case "retry":
		if d, clamped, ok := ParseRetry(string(value), time.Millisecond); ok {
			ev.Retry, ev.HasRetry, ev.RetryClamped = d, true, clamped
		}
	}
	return nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
