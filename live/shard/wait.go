package shard

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Wait returns once every index 0..n-1 of a run split n ways has a done
// shard folder under paths, looking every poll. It is the merge Job's
// wait: Kubernetes has no Job-to-Job dependency, and the image has no
// shell to loop in. n < 1 waits for the count most shard.json files
// found say. Paths that do not exist yet hold no shard; a shard.json that
// cannot be read is an error at once. After timeout (at once when it is
// 0 or less) the error names how many are done and which indices are
// missing; a second run of an index counts once.
func Wait(ctx context.Context, paths []string, n int, timeout, poll time.Duration) error {
	if poll <= 0 {
		poll = time.Second
	}
	start := time.Now()
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		count, done, err := doneIndices(paths, n)
		if err != nil {
			return err
		}
		if count > 0 && len(done) == count {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			// One last look: a shard that finished at the deadline counts.
			if count, done, err = doneIndices(paths, n); err != nil {
				return err
			}
			if count > 0 && len(done) == count {
				return nil
			}
			where := strings.Join(paths, ", ")
			waited := time.Since(start).Round(time.Millisecond)
			if count < 1 {
				return fmt.Errorf("shard: waited %s: no shard folder under %s", waited, where)
			}
			var missing []int
			for i := range count {
				if !done[i] {
					missing = append(missing, i)
				}
			}
			return fmt.Errorf("shard: waited %s for %d shards under %s: %d done, %s not done",
				waited, count, where, len(done), indices(missing))
		case <-tick.C:
		}
	}
}

// doneIndices looks once: the count waited for (n, or the one most
// shards say when n < 1; 0 while none is there) and the indices of that count with a
// done folder.
func doneIndices(paths []string, n int) (count int, done map[int]bool, err error) {
	found, err := scan(paths, true)
	if err != nil {
		return 0, nil, err
	}
	count = n
	if count < 1 {
		// The count most shard folders say: a folder left from an earlier
		// run split another way is outvoted, and merge's check names it.
		votes := map[int]int{}
		for _, f := range found {
			if f.Meta != nil {
				votes[f.Meta.Count]++
				if v, c := votes[f.Meta.Count], f.Meta.Count; v > votes[count] || v == votes[count] && c > count {
					count = c
				}
			}
		}
	}
	done = map[int]bool{}
	for _, f := range found {
		if f.Done && f.Meta != nil && f.Meta.Count == count {
			done[f.Meta.Index] = true
		}
	}
	return count, done, nil
}

// indices names missing indices: "index 2", "indices 0, 3..5".
func indices(xs []int) string {
	if len(xs) == 1 {
		return fmt.Sprintf("index %d", xs[0])
	}
	return "indices " + ranges(xs)
}
