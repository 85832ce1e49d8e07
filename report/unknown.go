package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// One rule for unknowns: a metric a design's judgement could not know (named
// in Design.Unknown) is null in report.json, n/a in the table and to
// thresholds, and named in the design's notes. MarshalJSON writes the nulls
// for any key of Unknown that is a totals key ("events_replayed") or a
// nested one ("lost_by_cause.unproduced"), so a new metric only has to be
// listed in Unknown. Reading a report back, a null leaves the Go value at 0;
// readers go through Metric or IsUnknown, which say unknown.

// designJSON is Design without its methods, for the default encoding.
type designJSON Design

// MarshalJSON encodes the design with every unknown totals key as null.
func (d Design) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(designJSON(d))
	if err != nil || len(d.Unknown) == 0 {
		return b, err
	}
	paths := make([][]string, 0, len(d.Unknown))
	for _, k := range d.Unknown {
		paths = append(paths, append([]string{"totals"}, strings.Split(k, ".")...))
	}
	return nullPaths(b, paths)
}

// nullPaths rewrites the JSON object data with the value at each path (a
// key, then the keys of the objects inside it) set to null, keeping the
// keys' order. A path that names no key changes nothing.
func nullPaths(data []byte, paths [][]string) ([]byte, error) {
	if len(paths) == 0 {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return data, nil // not an object: no key to null
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("report: object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		var sub [][]string
		null := false
		for _, p := range paths {
			if p[0] != key {
				continue
			}
			if len(p) == 1 {
				null = true
			} else {
				sub = append(sub, p[1:])
			}
		}
		switch {
		case null:
			v = json.RawMessage("null")
		case sub != nil:
			if v, err = nullPaths(v, sub); err != nil {
				return nil, err
			}
		}
		if !first {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// UnknownNote is the note that names a design's unknown metrics, the same
// list report.json writes as null and the table as n/a; "" when none.
func (d *Design) UnknownNote() string {
	if len(d.Unknown) == 0 {
		return ""
	}
	return UnknownNotePrefix + strings.Join(d.Unknown, ", ") + " (null in report.json, n/a in the table and to thresholds)"
}

// UnknownNotePrefix starts the note UnknownNote writes.
const UnknownNotePrefix = "unknown to this run: "
