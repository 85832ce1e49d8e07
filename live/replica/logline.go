package replica

import (
	"bytes"
	"strconv"
)

// EventLine is what a production log line of one event (logEvent) says.
type EventLine struct {
	Index                  int64
	Session, Stream, Token string
	TNS                    int64
}

// ParseEventLine reads a line as logEvent writes it, without reflection:
// the runner reads one line per event produced. ok is false for any other
// line (a call's start, a cancellation, go-redis's messages, a string with
// an escape in it), which the caller reads with encoding/json.
func ParseEventLine(line []byte) (e EventLine, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"index":`))
	if !ok {
		return e, false
	}
	if e.Index, rest, ok = cutInt(rest, `,"session":"`); !ok {
		return e, false
	}
	if e.Session, rest, ok = cutString(rest, `,"stream":"`); !ok {
		return e, false
	}
	if e.Stream, rest, ok = cutString(rest, `,"t_ns":`); !ok {
		return e, false
	}
	if e.TNS, rest, ok = cutInt(rest, `,"token":"`); !ok {
		return e, false
	}
	if e.Token, rest, ok = cutString(rest, `}`); !ok || len(rest) != 0 {
		return e, false
	}
	return e, true
}

// cutInt reads a JSON integer up to sep, which must follow it.
func cutInt(b []byte, sep string) (int64, []byte, bool) {
	i := bytes.Index(b, []byte(sep))
	if i < 0 {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil || (i > 1 && b[0] == '0') || (i > 2 && b[0] == '-' && b[1] == '0') || b[0] == '+' {
		return 0, nil, false
	}
	return n, b[i+len(sep):], true
}

// cutString reads the rest of a JSON string, its opening quote already
// read, and sep after its closing quote. A string with an escape or a byte
// JSON does not allow raw is refused.
func cutString(b []byte, sep string) (string, []byte, bool) {
	i := bytes.IndexByte(b, '"')
	if i < 0 {
		return "", nil, false
	}
	for _, c := range b[:i] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return "", nil, false
		}
	}
	rest, ok := bytes.CutPrefix(b[i+1:], []byte(sep))
	if !ok {
		return "", nil, false
	}
	return string(b[:i]), rest, true
}
