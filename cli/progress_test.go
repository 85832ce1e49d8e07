package cli

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A long command whose stderr is not a terminal (a live run with its
// output redirected) writes a line of progress every ProgressEvery instead
// of the bar, and none once done or when quiet.
func TestProgressLinesWhenNotATerminal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b bytes.Buffer
		env := &Env{Stderr: &b, ProgressEvery: 10 * time.Second}
		add, done := newProgress(env, false, 4*time.Minute, "s (live): 1 designs")
		if add == nil {
			t.Fatal("no progress without a terminal")
		}
		add(30 * time.Second)
		time.Sleep(15 * time.Second)
		add(30 * time.Second)
		time.Sleep(10 * time.Second)
		done()
		time.Sleep(time.Minute) // nothing after done
		want := "stormsim: s (live): 1 designs: 30s of 4m0s done (12%), 10s elapsed\n" +
			"stormsim: s (live): 1 designs: 1m0s of 4m0s done (25%), 20s elapsed\n"
		if got := b.String(); got != want {
			t.Errorf("progress lines:\n%s\nwant:\n%s", got, want)
		}
		quiet, _ := newProgress(env, true, time.Minute, "q")
		if quiet != nil || strings.Contains(b.String(), "q:") {
			t.Error("a quiet command reports progress")
		}
	})
}
