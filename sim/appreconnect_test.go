package sim

import (
	"testing"

	"github.com/stormsim/stormsim/scenario"
)

const fiveCallsFile = "testdata/five-calls.toml"

// loadFile resolves a scenario of a test file with --set overrides.
func loadFile(t *testing.T, file, name string, set ...string) *scenario.Scenario {
	t.Helper()
	f, err := scenario.Load(file, &scenario.Options{Set: set, Target: name})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	sc, err := f.Scenario(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestFiveCallsOneSession: ten clients make five calls 3 s apart on one
// session, and the only replica crashes between calls 2 and 3. What the
// real SDKs do with the calls after it (docs/domain.md §3) decides the count
// of failed calls: go-sdk's ClientSession is closed by the 404, so calls 3,
// 4 and 5 fail, and 4 and 5 send nothing; an application that reconnects
// after a failure loses call 3 alone; ts-sdk keeps the dead id and each of
// calls 3, 4 and 5 gets its 404.
func TestFiveCallsOneSession(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		set      []string
		failed   int64 // of 50 calls
		http404  int64
		requests int64 // every request sent
	}{
		// initialize, initialized, two calls; call 3 gets 404 and the
		// session is closed: nothing more is sent, not even a DELETE.
		{"go-sdk never", []string{"client.app_reconnect=never"}, 30, 10, 10 * 5},
		// the same, then initialize (a reconnect), initialized, calls 4 and
		// 5 and the DELETE at the end.
		{"go-sdk on_failure", []string{"client.app_reconnect=on_failure"}, 10, 10, 10 * 10},
		// a reconnect 4 s after the failure comes after call 4 (3 s later),
		// which fails at once: call 5 runs on a new session.
		{"go-sdk 4s", []string{"client.app_reconnect=4s"}, 20, 10, 10 * 9},
		// calls 3, 4 and 5 are sent with the dead id, and each gets 404; no
		// DELETE for a session the server said is gone.
		{"ts-sdk never", []string{"client.profile=ts-sdk"}, 30, 30, 10 * 7},
		// call 3 gets 404; call 4 connects a new session first, with no
		// DELETE of the one the server said is gone: initialize (a
		// reconnect), initialized, calls 4 and 5, the DELETE at the end.
		{"ts-sdk on_failure", []string{"client.profile=ts-sdk", "client.app_reconnect=on_failure"}, 10, 10, 10 * 10},
		// a reconnect 4 s after the failure: call 4 (3 s later) is still
		// sent with the dead id and gets 404; call 5 runs on a new session
		// (no DELETE of the old one): ten requests, as under on_failure.
		{"ts-sdk 4s", []string{"client.profile=ts-sdk", "client.app_reconnect=4s"}, 20, 20, 10 * 10},
		// compliant re-initialises on the 404 itself and re-issues call 3.
		{"compliant", []string{"client.profile=compliant"}, 0, 10, 10 * 11},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc := loadFile(t, fiveCallsFile, "five-calls", c.set...)
			tt := design(t, run(t, sc), "memory-sticky").Totals
			if tt.Calls != 50 || tt.CallsFailed != c.failed || tt.HTTP404 != c.http404 || tt.Requests != c.requests {
				t.Errorf("calls %d, failed %d, 404s %d, requests %d; want 50, %d, %d, %d",
					tt.Calls, tt.CallsFailed, tt.HTTP404, tt.Requests, c.failed, c.http404, c.requests)
			}
			if tt.CallsCompleted+tt.CallsFailed != tt.Calls || tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
				t.Errorf("the counts do not add up: %+v", tt)
			}
		})
	}
}
