package runner

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/scenario"
)

// sessionBytes measures the session ids of h's requests: how many requests
// carry one of at least min bytes, how many distinct ids there are, the
// bytes the records hold (each backing array once) and the bytes they
// would hold with a copy per request.
func sessionBytes(h *history.History, min int) (carried, distinct int, held, copied int64) {
	arrays := map[*byte]bool{}
	values := map[string]bool{}
	for i := range h.Requests {
		s := h.Requests[i].SessionID
		if len(s) < min {
			continue
		}
		carried++
		copied += int64(len(s))
		values[s] = true
		if p := unsafe.StringData(s); !arrays[p] {
			arrays[p] = true
			held += int64(len(s))
		}
	}
	return carried, len(values), held, copied
}

// distinctBytes is the length of h's distinct session ids of min bytes or
// more, summed: what the records hold when each id is kept once.
func distinctBytes(h *history.History, min int) int64 {
	values := map[string]bool{}
	var n int64
	for i := range h.Requests {
		if s := h.Requests[i].SessionID; len(s) >= min && !values[s] {
			values[s] = true
			n += int64(len(s))
		}
	}
	return n
}

// TestSessionIDsInterned: against testdata/hostile's huge-session mode
// with limits.session_id_bytes raised to let its id through, the requests
// of the go-sdk and ts-sdk clients' histories hold each session id once,
// however many requests carry it: the bytes held are the distinct ids'
// bytes, each once (and so at most the distinct ids times the limit), during the run and once the history is read back
// from its file (whose format is unchanged: every request still names its
// session id in full). The go-sdk clients get a 100 KiB id; the ts-sdk
// clients 12 KiB, as Node refuses a response header over 16 KiB (and the
// recording proxy reads every request's id afresh).
func TestSessionIDsInterned(t *testing.T) {
	t.Parallel()
	exe := hostileBin(t)
	abs, _ := filepath.Abs("testdata/hostile.toml")
	const limit = 200000
	for _, impl := range []string{clients.ImplGoSDK, clients.ImplTSSDK} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			idBytes := 100 << 10
			if impl == clients.ImplTSSDK {
				needTS(t)
				idBytes = 12 << 10
			}
			endpoint, kill, err := startHostile(exe, "huge-session", "http://127.0.0.2:9/mcp", "-session-bytes", fmt.Sprint(idBytes))
			if err != nil {
				t.Fatal(err)
			}
			defer kill()
			sets := []string{fmt.Sprintf("server.url=%q", endpoint), "client.impl=" + impl, "client.profile=" + impl, fmt.Sprintf("limits.session_id_bytes=%d", limit),
				"duration=2s", "drain=1s"}
			f, err := scenario.Load(abs, &scenario.Options{Set: sets, Target: "hostile"})
			if err != nil {
				t.Fatal(err)
			}
			sc, err := f.Scenario("hostile")
			if err != nil {
				t.Fatal(err)
			}
			out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Set: sets})
			if err != nil {
				t.Fatal(err)
			}
			h := out.Histories["memory-sticky"]
			carried, distinct, held, copied := sessionBytes(h, idBytes)
			t.Logf("%s: %d requests carry one of %d session ids of %d KiB: %d bytes held, %d with a copy each", impl, carried, distinct, idBytes>>10, held, copied)
			// With more requests than ids, records that copied an id into
			// each request would hold more than the distinct ids' bytes.
			if carried <= distinct || distinct == 0 {
				t.Fatalf("%d requests carry %d distinct session ids: want an id carried more than once", carried, distinct)
			}
			once := distinctBytes(h, idBytes)
			if held > once || held > int64(distinct)*limit {
				t.Errorf("the records hold %d bytes of session ids: want each id once, %d bytes (at most %d distinct × %d)", held, once, distinct, limit)
			}
			file, err := history.EncodeHistories(out.Histories)
			if err != nil {
				t.Fatal(err)
			}
			back, err := history.ReadHistories(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			c2, d2, held2, _ := sessionBytes(back["memory-sticky"], idBytes)
			if c2 != carried || d2 != distinct || held2 > once {
				t.Errorf("read back: %d requests, %d ids, %d bytes held: want %d, %d, at most %d", c2, d2, held2, carried, distinct, once)
			}
		})
	}
}
