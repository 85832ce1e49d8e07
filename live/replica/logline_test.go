package replica

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// jsonEventLine is what encoding/json reads from a line, as the runner
// reads the lines ParseEventLine refuses.
func jsonEventLine(line []byte) (EventLine, bool) {
	var rec struct {
		Index   int64  `json:"index"`
		Session string `json:"session"`
		Stream  string `json:"stream"`
		TNS     int64  `json:"t_ns"`
		Token   string `json:"token"`
	}
	err := json.Unmarshal(line, &rec)
	return EventLine{Index: rec.Index, Session: rec.Session, Stream: rec.Stream, Token: rec.Token, TNS: rec.TNS}, err == nil
}

// ParseEventLine reads every line logEvent writes with plain strings, and
// whatever it reads, of those lines or of random mutations of them, is
// what encoding/json reads.
func TestParseEventLine(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 2))
	plain := func() string { // what the replica's ids and tokens look like
		const abc = "0123456789abcdef.ck"
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = abc[r.IntN(len(abc))]
		}
		return string(b)
	}
	read := 0
	for n := range 4000 {
		c := &call{session: plain(), stream: plain(), token: plain()}
		if n%2 == 1 {
			c.session, c.token = randString(r), randString(r)
		}
		c.logHead = logHead(c)
		index, tNS := r.Int64N(1<<40)-1<<20, r.Int64()
		line := logEvent(c, index, tNS)
		line = line[:len(line)-1] // the scanner drops the line end
		if n%4 == 2 {             // a mutation: one byte changed, or the line cut short
			line = append([]byte(nil), line...)
			if i := r.IntN(len(line)); r.IntN(2) == 0 {
				line[i] = "0-\"\\,:{}x9 "[r.IntN(11)]
			} else {
				line = line[:i]
			}
		}
		got, ok := ParseEventLine(line)
		want, jsonOK := jsonEventLine(line)
		if n%4 == 0 && !ok {
			t.Fatalf("ParseEventLine refused a plain line %s", line)
		}
		if ok && (!jsonOK || got != want) {
			t.Fatalf("line %s: ParseEventLine read %+v, encoding/json %+v (ok %v)", line, got, want, jsonOK)
		}
		if ok {
			read++
		}
	}
	if read < 1000 {
		t.Errorf("ParseEventLine read %d of 4000 lines; want at least the 1000 plain ones", read)
	}
}

// The lines at the edges of JSON's grammar go to encoding/json, or read
// the same.
func TestParseEventLineEdges(t *testing.T) {
	for _, line := range []string{
		`{"index":5,"session":"s","stream":"t","t_ns":7,"token":"c1.k2.a3"}`,             // plain: read
		`{"index":-0,"session":"s","stream":"t","t_ns":7,"token":"k"}`,                   // minus zero is JSON
		`{"index":05,"session":"s","stream":"t","t_ns":7,"token":"k"}`,                   // a leading zero is not
		`{"index":+5,"session":"s","stream":"t","t_ns":7,"token":"k"}`,                   // nor a plus
		`{"index":-05,"session":"s","stream":"t","t_ns":7,"token":"k"}`,                  // nor a leading zero after a minus
		`{"index":5,"session":"s\"x","stream":"t","t_ns":7,"token":"k"}`,                 // an escape
		`{"index":5,"session":"é","stream":"t","t_ns":7,"token":"k"}`,                    // not ASCII
		`{"index":5,"session":"s","stream":"t","t_ns":7,"token":"k"}x`,                   // trailing bytes
		`{"index":5,"session":"s","stream":"t","t_ns":99999999999999999999,"token":"k"}`, // overflow
		`{"index":5,"session":"s","stream":"t","t_ns":7,"token":"k"`,                     // cut short
		`{"index":1e3,"session":"s","stream":"t","t_ns":7,"token":"k"}`,                  // an exponent
	} {
		got, ok := ParseEventLine([]byte(line))
		want, jsonOK := jsonEventLine([]byte(line))
		if ok && (!jsonOK || got != want) {
			t.Errorf("line %s: ParseEventLine read %+v, encoding/json %+v (ok %v)", line, got, want, jsonOK)
		}
	}
	if _, ok := ParseEventLine([]byte(`{"index":5,"session":"s","stream":"t","t_ns":7,"token":"c1.k2.a3"}`)); !ok {
		t.Error("ParseEventLine refused a plain line")
	}
}
