package shard

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Found is one shard folder Discover found.
type Found struct {
	Dir string
	// Meta is its shard.json; nil when the folder, named like a shard's,
	// holds none: its writer stopped before writing it.
	Meta *Meta
	// Done says the done marker is there: the shard finished writing.
	Done bool
}

// nameRE matches a shard folder's name: Name(i, n), and .runK for the
// K-th run of the same index.
var nameRE = regexp.MustCompile(`^shard-([0-9]+)-of-([0-9]+)(?:\.run([0-9]+))?$`)

// parseName reads index, count and run (1 for the first) from a shard
// folder's name.
func parseName(name string) (index, count, run int, ok bool) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, 0, 0, false
	}
	var err error
	if index, err = strconv.Atoi(m[1]); err != nil {
		return 0, 0, 0, false
	}
	if count, err = strconv.Atoi(m[2]); err != nil {
		return 0, 0, 0, false
	}
	run = 1
	if m[3] != "" {
		if run, err = strconv.Atoi(m[3]); err != nil {
			return 0, 0, 0, false
		}
	}
	return index, count, run, true
}

// Discover finds the shard folders in paths: each path is a shard folder
// (it holds shard.json) or a folder holding shard folders (shard-<i>-of-<N>
// and their .runK siblings; other entries are left alone). A folder given
// twice, directly or through its parent, is found once. A path that is
// neither, or a shard.json that cannot be read or decoded, is an error
// naming it. The result is sorted by count, index and run.
func Discover(paths []string) ([]*Found, error) {
	found, err := scan(paths, false)
	if err != nil {
		return nil, err
	}
	return found, nil
}

// scan is Discover; lenient, it skips paths that do not exist (yet) and
// holds no shard, as Wait needs while the shards are still running.
func scan(paths []string, lenient bool) ([]*Found, error) {
	var found []*Found
	seen := map[string]bool{}
	add := func(dir string) error {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("shard: %s: %w", dir, err)
		}
		if seen[abs] {
			return nil
		}
		seen[abs] = true
		f, err := readFound(dir)
		if err != nil {
			return err
		}
		found = append(found, f)
		return nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			if lenient && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("shard: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("shard: %s is not a folder: give a shard folder or the folder that holds them", p)
		}
		if _, err := os.Stat(filepath.Join(p, MetaFile)); err == nil {
			if err := add(p); err != nil {
				return nil, err
			}
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("shard: %w", err)
		}
		n := 0
		for _, e := range entries {
			if _, _, _, ok := parseName(e.Name()); !ok || !e.IsDir() {
				continue
			}
			n++
			if err := add(filepath.Join(p, e.Name())); err != nil {
				return nil, err
			}
		}
		if n == 0 && !lenient {
			return nil, fmt.Errorf("shard: %s is not a shard folder (it has no %s) and holds none (shard-<i>-of-<N>/)", p, MetaFile)
		}
	}
	slices.SortFunc(found, func(a, b *Found) int {
		ai, an, ar := a.key()
		bi, bn, br := b.key()
		return cmp.Or(cmp.Compare(an, bn), cmp.Compare(ai, bi), cmp.Compare(ar, br), strings.Compare(a.Dir, b.Dir))
	})
	return found, nil
}

// readFound reads one shard folder.
func readFound(dir string) (*Found, error) {
	f := &Found{Dir: dir}
	if st, err := os.Stat(filepath.Join(dir, DoneFile)); err == nil && st.Mode().IsRegular() {
		f.Done = true
	}
	path := filepath.Join(dir, MetaFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Meta
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("shard: %s: not a shard's %s: %w", path, MetaFile, err)
	}
	switch {
	case m.Count < 1:
		return nil, fmt.Errorf("shard: %s: count %d: want at least 1", path, m.Count)
	case m.Index < 0 || m.Index >= m.Count:
		return nil, fmt.Errorf("shard: %s: index %d is outside 0..%d (count %d)", path, m.Index, m.Count-1, m.Count)
	}
	f.Meta = &m
	return f, nil
}

// key is what Found sorts by: index, count and run, from shard.json, else
// from the folder's name.
func (f *Found) key() (index, count, run int) {
	_, _, run, ok := parseName(filepath.Base(f.Dir))
	if !ok {
		run = 1
	}
	if f.Meta != nil {
		return f.Meta.Index, f.Meta.Count, run
	}
	index, count, _, _ = parseName(filepath.Base(f.Dir))
	return index, count, run
}

// SetError is a set of shards that cannot be merged into one run: every
// problem found, each naming the folders and the values.
type SetError struct {
	Problems []string
}

func (e *SetError) Error() string {
	var b strings.Builder
	b.WriteString("shard: the shards are not one complete run:")
	for _, p := range e.Problems {
		b.WriteString("\n  " + p)
	}
	return b.String()
}

// Check checks that found is one complete run: every index 0..N-1 once,
// the same count, scenario, scenario hash, seed, design, target and start
// time in every shard, and every shard done. Every problem goes into a
// *SetError. A rescheduled pod leaves two folders for one index: an error,
// unless allowRerun, which picks the done run that finished last and says
// in notes what it left out. picked is one shard per index, in index order.
func Check(found []*Found, allowRerun bool) (picked []*Found, notes []string, err error) {
	if len(found) == 0 {
		return nil, nil, &SetError{Problems: []string{"no shard folder was found"}}
	}
	found = slices.Clone(found)
	slices.SortFunc(found, func(a, b *Found) int {
		ai, an, ar := a.key()
		bi, bn, br := b.key()
		return cmp.Or(cmp.Compare(ai, bi), cmp.Compare(an, bn), cmp.Compare(ar, br), strings.Compare(a.Dir, b.Dir))
	})
	var problems []string
	var ref *Found // the others are compared with it: the lowest index
	for _, f := range found {
		if f.Meta != nil {
			ref = f
			break
		}
	}
	if ref == nil {
		for _, f := range found {
			problems = append(problems, notDone(f))
		}
		return nil, nil, &SetError{Problems: problems}
	}
	n := ref.Meta.Count
	runs := map[int][]*Found{}
	for _, f := range found {
		if f.Meta == nil {
			i, count, _, ok := parseName(filepath.Base(f.Dir))
			if !ok || count != n {
				problems = append(problems, notDone(f))
				continue
			}
			runs[i] = append(runs[i], f)
			continue
		}
		if f != ref {
			problems = append(problems, differs(f, ref)...)
		}
		if f.Meta.Count == n {
			runs[f.Meta.Index] = append(runs[f.Meta.Index], f)
		}
	}
	var missing []int
	for i := range n {
		rs := runs[i]
		switch {
		case len(rs) == 0:
			missing = append(missing, i)
		case len(rs) == 1:
			if !rs[0].Done {
				problems = append(problems, notDone(rs[0]))
				continue
			}
			picked = append(picked, rs[0])
		case !allowRerun:
			problems = append(problems, fmt.Sprintf("index %d appears %s: %s (a rescheduled pod; --allow-rerun merges the one that finished last)",
				i, times(len(rs)), and(dirs(rs))))
		default:
			var best *Found
			for _, f := range rs {
				if f.Meta != nil && f.Done && (best == nil || !f.Meta.Finished.Before(best.Meta.Finished)) {
					best = f
				}
			}
			if best == nil {
				problems = append(problems, fmt.Sprintf("index %d ran %s and none finished: %s have no done marker", i, times(len(rs)), and(dirs(rs))))
				continue
			}
			picked = append(picked, best)
			var left []string
			for _, f := range rs {
				switch {
				case f == best:
				case f.Meta == nil || !f.Done:
					left = append(left, f.Dir+" (no done marker)")
				default:
					left = append(left, fmt.Sprintf("%s (finished %s)", f.Dir, stamp(f.Meta.Finished)))
				}
			}
			notes = append(notes, fmt.Sprintf("index %d ran %s: merged %s, which finished last (%s); left out %s",
				i, times(len(rs)), best.Dir, stamp(best.Meta.Finished), and(left)))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, missingText(missing, n))
	}
	if len(problems) > 0 {
		return nil, notes, &SetError{Problems: problems}
	}
	return picked, notes, nil
}

// differs lists how f's identity differs from ref's.
func differs(f, ref *Found) []string {
	a, b := f.Meta, ref.Meta
	var out []string
	diff := func(what, av, bv string) {
		out = append(out, fmt.Sprintf("%s differs: %s has %s, %s has %s", what, f.Dir, av, ref.Dir, bv))
	}
	if a.Count != b.Count {
		diff("shard count", strconv.Itoa(a.Count), strconv.Itoa(b.Count))
	}
	if a.Scenario != b.Scenario {
		diff("scenario", strconv.Quote(a.Scenario), strconv.Quote(b.Scenario))
	}
	if a.ScenarioHash != b.ScenarioHash {
		diff("scenario hash", a.ScenarioHash, b.ScenarioHash)
	}
	if a.Seed != b.Seed {
		diff("seed", strconv.FormatUint(a.Seed, 10), strconv.FormatUint(b.Seed, 10))
	}
	if a.Design != b.Design {
		diff("design", strconv.Quote(a.Design), strconv.Quote(b.Design))
	}
	if a.Target != b.Target {
		diff("target", strconv.Quote(a.Target), strconv.Quote(b.Target))
	}
	if !a.StartAt.Equal(b.StartAt) {
		diff("start time", stamp(a.StartAt), stamp(b.StartAt))
	}
	return out
}

// notDone says why f cannot be merged: its writer did not finish.
func notDone(f *Found) string {
	if f.Meta == nil && f.Done {
		return fmt.Sprintf("%s has a done marker but no %s", f.Dir, MetaFile)
	}
	if f.Meta == nil {
		return fmt.Sprintf("%s has no %s and no done marker: it did not finish", f.Dir, MetaFile)
	}
	return fmt.Sprintf("%s has no done marker: it did not finish", f.Dir)
}

// missingText names the missing indices, runs of them as ranges.
func missingText(missing []int, n int) string {
	if len(missing) == 1 {
		return fmt.Sprintf("shard %d of %d is missing", missing[0], n)
	}
	return fmt.Sprintf("shards %s of %d are missing", ranges(missing), n)
}

// ranges writes sorted ints as "1, 4..7, 9".
func ranges(xs []int) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(xs[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(xs[i]), strconv.Itoa(xs[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d..%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func dirs(fs []*Found) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Dir)
	}
	return out
}

// and joins "a", "a and b", "a, b and c".
func and(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
