package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// expiring is a context whose Err turns to DeadlineExceeded after its
// first left calls: a deadline that passes in the middle of a write, at a
// point the test chooses rather than one the clock does.
type expiring struct {
	context.Context
	left atomic.Int64
}

func (e *expiring) Err() error {
	if e.left.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// TestWriteRunContextStops: a write whose context ends before the folder is
// renamed into place, at every point of it (before the first file, within
// a file of several MiB, between the files, before the rename), leaves
// nothing in the results folder, hidden or not; one whose context lasts
// writes the folder whole.
func TestWriteRunContextStops(t *testing.T) {
	files := map[string][]byte{"report.json": []byte("{}"), "history.json.gz": make([]byte, 3<<20+5), "summary.md": []byte("# s\n")}
	for left := int64(0); ; left++ {
		dir := t.TempDir()
		ctx := &expiring{Context: context.Background()}
		ctx.left.Store(left)
		got, err := WriteRunContext(ctx, dir, RunDir(time.Unix(0, 0), 1), files)
		entries, _ := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stopped after %d checks: %v, want the deadline", left, err)
			}
			if len(entries) != 0 {
				t.Fatalf("stopped after %d checks: %d entries left (%s): want none", left, len(entries), entries[0].Name())
			}
			continue
		}
		if left < 7 { // 1 check for each small file, 4 for the large one (a MiB each), 1 before the rename
			t.Fatalf("a write that %d checks end finished: want it stopped", left)
		}
		b, err := os.ReadFile(filepath.Join(got, "history.json.gz"))
		if err != nil || len(b) != len(files["history.json.gz"]) {
			t.Fatalf("the folder written: %d bytes of history, %v", len(b), err)
		}
		return
	}
}
