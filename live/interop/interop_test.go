package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/tsdk"
)

var bin string

func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }

// checkMatrix runs the matrix and checks what it wrote: a cell for each
// client × server × design it ran, calls in every cell, the files.
func checkMatrix(t *testing.T, o Options) *Matrix {
	t.Helper()
	if _, _, err := tsdk.Program("clients.mjs"); err != nil {
		t.Fatalf("%v (make test runs make node first)", err)
	}
	o.Bin, o.Base, o.Dir = bin, "../../scenarios.toml", t.TempDir()
	m, err := Run(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	faults, designs := Faults, Designs
	if o.Reduced {
		faults, designs = Faults[:1], Designs[:1]
	}
	for range faults {
		for range Clients {
			for _, s := range Servers {
				for _, d := range designs {
					if supported(s, d) {
						want++
					}
				}
			}
		}
	}
	if len(m.Cells) != want {
		t.Fatalf("%d cells, want %d", len(m.Cells), want)
	}
	for _, c := range m.Cells {
		t.Logf("%s %s %s %s: %d calls, %d done, %d failed, %d 404s, %d lost, %d resumes; first error: %s",
			c.Fault, c.Design, c.Client, c.Server, c.Calls, c.Completed, c.FailedCalls, c.HTTP404, c.EventsLost, c.Resumes, c.FirstError)
		if c.Completed == 0 {
			t.Errorf("%s × %s on %s, %s: no call completed", c.Client, c.Server, c.Design, c.Fault)
		}
		if c.Fault == "hard-restart" && c.Design == "memory-sticky" && c.HTTP404 == 0 {
			t.Errorf("%s × %s on memory-sticky: no 404 after the hard restart, which loses every session of the replica", c.Client, c.Server)
		}
	}
	var back Matrix
	js, err := os.ReadFile(filepath.Join(o.Dir, "matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &back); err != nil || len(back.Cells) != want {
		t.Errorf("matrix.json: %v, %d cells", err, len(back.Cells))
	}
	md, err := os.ReadFile(filepath.Join(o.Dir, "matrix.md"))
	if err != nil || strings.Count(string(md), "\n| ") != want+len(faults)*len(designs) {
		t.Errorf("matrix.md: %v\n%s", err, md)
	}
	return m
}

// TestInteropReduced runs the reduced matrix, as make test does: every
// client against every server on memory-sticky, through a hard restart.
func TestInteropReduced(t *testing.T) {
	checkMatrix(t, Options{Reduced: true})
}

// TestInteropFull runs the whole matrix (make test-long).
func TestInteropFull(t *testing.T) {
	checkMatrix(t, Options{})
}
