// Package testbin builds the stormsim binary that the live tests start
// replicas from, once per test binary, in a temporary folder it removes
// when the tests end:
//
//	var bin string
//	func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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

var (
	builtMu sync.Mutex
	built   = map[string]*builtBin{}
)

// builtBin is one program Build made, or why it could not.
type builtBin struct {
	once sync.Once
	path string
	err  error
}

// Build builds the main package pkg (a path like ./examples/leaky-server,
// from the module root root) once per test binary into Dir(), and returns
// the program's path; a build failure fails the test with the compiler's
// output. Tests may call it concurrently.
func Build(t testing.TB, root, pkg string) string {
	t.Helper()
	builtMu.Lock()
	b := built[pkg]
	if b == nil {
		b = &builtBin{}
		built[pkg] = b
	}
	builtMu.Unlock()
	b.once.Do(func() {
		b.path = filepath.Join(dir, filepath.Base(pkg))
		build := exec.Command("go", "build", "-o", b.path, pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
