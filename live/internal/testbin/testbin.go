// Package testbin builds the stormsim binary that the live tests start
// replicas from, once per test binary, in a temporary folder it removes
// when the tests end:
//
//	var bin string
//	func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stormsim/stormsim/live/internal/tmpdir"
)

// dir is the folder Main made; Dir hands it to the tests.
var dir string

// Main builds ./cmd/stormsim of the module at root into a temporary
// folder, sets *bin to it, runs the tests and removes the folder (a test
// binary killed first, by go test's timeout say, leaves it to the next
// one's tmpdir.Make). A build failure prints the compiler's output and
// exits 2.
func Main(m *testing.M, root string, bin *string) {
	var err error
	dir, err = tmpdir.Make("stormsim-test-")
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	*bin = filepath.Join(dir, "stormsim")
	build := exec.Command("go", "build", "-o", *bin, "./cmd/stormsim")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Dir is the temporary folder Main made: what a test builds there for
// the whole test binary (another server, say) is removed with it.
func Dir() string { return dir }
