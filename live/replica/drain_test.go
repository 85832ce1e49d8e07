package replica

import (
	"strings"
	"testing"

	"github.com/stormsim/stormsim/topology"
)

// A drain that waits for a call (drain_close = exit) ends its stream with
// the call's result, and the counters frozen right after Drain returns
// count it sent: the call's last event and the drain's closing of the
// stream come at the same moment, and the event must win. Twenty calls,
// since a lost race dropped the result about one time in two.
func TestDrainSendsTheLastResult(t *testing.T) {
	t.Parallel()
	for i := 0; i < 20; i++ {
		cfg := memoryDesign()
		cfg.Replica.DrainClose = topology.DrainCloseExit
		srv, c := newServer(t, cfg)
		c.initialize()
		resp := c.call(5, 10)
		readSSE(t, resp, 2) // priming and the first progress event
		srv.Drain()         // returns once the call has ended
		counts := srv.Freeze(0)
		rest := readSSE(t, resp, 0)
		resp.Body.Close()
		if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].Data, `"result"`) {
			t.Fatalf("call %d: the drained stream ended with %+v, want the result", i, rest)
		}
		if counts.ResultsSent != 1 {
			t.Fatalf("call %d: %d results counted sent, want 1", i, counts.ResultsSent)
		}
	}
}
