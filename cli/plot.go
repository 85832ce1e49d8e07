package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
)

func init() {
	register(command{name: "plot", summary: "redraw a run's charts and report.html, or overlay two runs", run: plotCmd})
}

func plotCmd(ctx context.Context, env *Env, args []string) error {
	var out string
	fset := newFlags(env, "plot", "RESULT_DIR | DIR_A DIR_B [--out DIR]",
		"With one run folder, re-read RESULT_DIR/report.json and rewrite its charts (PNG and SVG)\n"+
			"and report.html in that folder. With two, draw the time charts and replay latency of\n"+
			"both runs on the same axes (run A solid, run B dashed) into --out.")
	fset.StringVar(&out, "out", "", "`dir` for the overlay of two runs (default DIR_B/overlay-<name of DIR_A>)")
	pos, err := parse(fset, args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 1:
		if out != "" {
			return usagef("plot: --out is for two runs; the charts of one run go into its own folder")
		}
		return plotRun(ctx, env, pos[0])
	case 2:
		return plotOverlay(ctx, env, pos[0], pos[1], out)
	}
	return usagef("plot: want RESULT_DIR or DIR_A DIR_B, got %d arguments", len(pos))
}

// plotRun redraws the charts and page of one run into its folder.
func plotRun(ctx context.Context, env *Env, dir string) error {
	r, file, err := readRun(dir)
	if err != nil {
		return err
	}
	files, err := plots.Render(r)
	if err != nil {
		return usageError{fmt.Errorf("plot: %s: %w", file, err)}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %d charts and %s to %s\n", len(files)-1, plots.PageName, dir)
	return nil
}

// plotOverlay draws two runs on the same charts into out.
func plotOverlay(ctx context.Context, env *Env, dirA, dirB, out string) error {
	a, fileA, err := readRun(dirA)
	if err != nil {
		return err
	}
	b, fileB, err := readRun(dirB)
	if err != nil {
		return err
	}
	files, err := plots.Overlay(a, b)
	if err != nil {
		return usageError{fmt.Errorf("plot: %s and %s: %w", fileA, fileB, err)}
	}
	if out == "" {
		out = filepath.Join(dirB, "overlay-"+runName(dirA))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := writeFiles(out, files); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %d overlay charts of %s (A) and %s (B) to %s\n", len(files), dirA, dirB, out)
	return nil
}

// readRun reads dir/report.json; report.Read checks its schema and series.
// Every error is a usage error naming the folder or file.
func readRun(dir string) (*report.Report, string, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", usagef("plot: %s: no such folder", dir)
	case err != nil:
		return nil, "", usageError{fmt.Errorf("plot: %w", err)}
	case !st.IsDir():
		return nil, "", usagef("plot: %s is not a folder (want a run folder holding report.json)", dir)
	}
	file := filepath.Join(dir, "report.json")
	r, err := report.Read(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", usagef("plot: %s: no such file; is %s a run folder?", file, dir)
	}
	if err != nil {
		return nil, "", usageError{err}
	}
	return r, file, nil
}

// runName is the name of a run folder, following a "latest" link to the
// run it points at.
func runName(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Base(filepath.Clean(dir))
}

// writeFiles writes each file into dir atomically, in name order.
func writeFiles(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeAtomic(dir, n, files[n]); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data to a temporary file in dir and renames it to
// name, so a reader sees the old file or the new one, never half of one.
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
