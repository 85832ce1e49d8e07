package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stormsim/stormsim/scenario"
)

// TestProgressIndex reads progress values of each shape as event indices,
// and a call's result one past what the server sent or what it was asked.
func TestProgressIndex(t *testing.T) {
	t.Parallel()
	type note struct {
		v       float64
		attempt int32
	}
	for _, tc := range []struct {
		name   string
		mode   string
		notes  []note
		e      int32 // the length the arguments asked for
		want   []int32
		result int32
	}{
		// 1..N of N: N progress events, then the result, N+1 in all
		{"1..N", scenario.ProgressIncreasing, []note{{1, 0}, {2, 0}, {3, 0}, {4, 0}}, 4, []int32{1, 2, 3, 4}, 5},
		// 0-based, no total
		{"0..N-1", scenario.ProgressIncreasing, []note{{0, 0}, {1, 0}, {2, 0}}, 4, []int32{1, 2, 3}, 4},
		// fractional values are events, not all index 0
		{"fraction", scenario.ProgressIncreasing, []note{{0.25, 0}, {0.5, 0}, {0.75, 0}}, 4, []int32{1, 2, 3}, 4},
		// a re-issued attempt repeats the values: the same indices (redone)
		{"reissue", scenario.ProgressIncreasing, []note{{0.5, 0}, {1, 0}, {0.5, 1}, {1, 1}, {1.5, 1}}, 4, []int32{1, 2, 1, 2, 3}, 4},
		// not told the length: the result follows what was sent
		{"unknown length", scenario.ProgressIncreasing, []note{{10, 0}, {20, 0}}, 1, []int32{1, 2}, 3},
		// the value is the index
		{"index", scenario.ProgressIndex, []note{{1, 0}, {2, 0}, {2, 0}, {3, 0}}, 4, []int32{1, 2, 2, 3}, 4},
		// an absurd index is clamped to what was asked plus what was received
		{"absurd index", scenario.ProgressIndex, []note{{1, 0}, {2e9, 0}, {3, 0}}, 4, []int32{1, 6, 3}, 7},
		// every notification is the attempt's next event
		{"opaque", scenario.ProgressOpaque, []note{{0, 0}, {0, 0}, {0, 1}}, 4, []int32{1, 2, 1}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProgressIndex(tc.mode)
			p.index(99, 0) // a previous call's value, forgotten by reset
			p.reset(tc.e)
			var got []int32
			for _, n := range tc.notes {
				got = append(got, p.index(n.v, n.attempt))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("indices (-want +got):\n%s", diff)
			}
			if r := p.result(tc.e); r != tc.result {
				t.Errorf("result index %d, want %d", r, tc.result)
			}
		})
	}
}
