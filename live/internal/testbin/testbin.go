// Package testbin builds the stormsim binary that the live tests start
// replicas from, once per test binary:
//
//	var bin string
//	func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds ./cmd/stormsim of the module at root into a temporary
// folder, sets *bin to it, runs the tests and removes the folder. A build
// failure prints the compiler's output and exits 2.
func Main(m *testing.M, root string, bin *string) {
	dir, err := os.MkdirTemp("", "stormsim-test-")
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
