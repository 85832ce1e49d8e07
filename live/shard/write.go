package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// maxRuns bounds the .runK folders Write tries: a Job whose pods fail
// this often for one index has a problem no further folder will solve.
const maxRuns = 100

// Write leaves one shard's output under out and returns its folder. It
// claims Name(meta.Index, meta.Count) with os.Mkdir, so that a rescheduled
// pod running the same index again, finding the name taken, claims
// <name>.run2, <name>.run3, … and never overwrites another run's output;
// stormsim merge --allow-rerun picks one of them. Each of files (plain
// names, no folders) is written through a temporary file and a rename,
// then shard.json, then DoneFile, last, holding meta.Finished: a folder
// with a done marker is complete. A Write that fails removes the folder it
// claimed; a process killed while writing leaves it without a done marker,
// which merge reports as a shard that did not finish.
func Write(out string, meta *Meta, files map[string][]byte) (dir string, err error) {
	if err := meta.check(); err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if name == "" || name == "." || name == ".." || filepath.Base(name) != name || name[0] == '.' {
			return "", fmt.Errorf("shard: write: file name %q: want a plain name, not a path or a hidden name", name)
		}
		if name == MetaFile || name == DoneFile {
			return "", fmt.Errorf("shard: write: file name %q: Write writes %s itself", name, name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return "", fmt.Errorf("shard: write: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("shard: write: %w", err)
	}
	dir, err = claim(out, Name(meta.Index, meta.Count))
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			dir = ""
		}
	}()
	for _, name := range names {
		if err := writeFile(dir, name, files[name]); err != nil {
			return dir, err
		}
	}
	if err := writeFile(dir, MetaFile, append(data, '\n')); err != nil {
		return dir, err
	}
	if err := writeFile(dir, DoneFile, []byte(meta.Finished.UTC().Format(time.RFC3339Nano)+"\n")); err != nil {
		return dir, err
	}
	return dir, nil
}

// check is what Write requires of a Meta before it claims a folder.
func (m *Meta) check() error {
	switch {
	case m == nil:
		return errors.New("shard: write: no meta")
	case m.Count < 1:
		return fmt.Errorf("shard: write: count %d: want at least 1", m.Count)
	case m.Index < 0 || m.Index >= m.Count:
		return fmt.Errorf("shard: write: index %d is outside 0..%d", m.Index, m.Count-1)
	case m.Finished.IsZero():
		return fmt.Errorf("shard: write: shard %d of %d: its finish time is not set (the done marker holds it)", m.Index, m.Count)
	}
	return nil
}

// claim creates out/base, or the first free out/base.runK, and returns it.
func claim(out, base string) (string, error) {
	for k := 1; k <= maxRuns; k++ {
		name := base
		if k > 1 {
			name = fmt.Sprintf("%s.run%d", base, k)
		}
		dir := filepath.Join(out, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("shard: write: %w", err)
		}
	}
	return "", fmt.Errorf("shard: write: %s: %s and %d reruns of it are already there", out, base, maxRuns-1)
}

// writeFile writes dir/name through a temporary file in dir, synced and
// then renamed, so that a reader on a shared volume sees all of it or none.
func writeFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("shard: write: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("shard: write: %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
