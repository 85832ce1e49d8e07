package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// racedHome are the packages make test's race stage runs RACED in.
var racedHome = map[string]bool{"sim": true, "cli": true, "plan": true}

// testFunc is a top-level test function's declaration.
var testFunc = regexp.MustCompile(`(?m)^func (Test\w*)\(t \*testing\.T\)`)

// The Makefile's RACED tests run once, under the race detector, and the
// stage outside live/ skips them: so each name must be a test of sim, cli
// or plan, and no test of another package outside live/ may match it (it
// would be skipped there and run by no stage).
func TestRacedRunOnce(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var expr string
	for line := range strings.Lines(string(mk)) {
		if v, ok := strings.CutPrefix(line, "RACED := "); ok {
			expr = strings.ReplaceAll(strings.TrimSpace(v), "$$", "$")
		}
	}
	re, err := regexp.Compile(expr)
	if expr == "" || err != nil {
		t.Fatalf("Makefile: no RACED := line with a regular expression (%q: %v)", expr, err)
	}
	found := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "live", "deploy", "node", "results", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			if !re.MatchString(m[1]) {
				continue
			}
			if !racedHome[filepath.Dir(rel)] {
				t.Errorf("%s: %s matches the Makefile's RACED, which only sim, cli and plan run: rename it", rel, m[1])
			}
			found[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(strings.TrimPrefix(expr, "^("), ")$"), "|")
	for _, n := range names {
		if !found[n] {
			t.Errorf("Makefile: RACED names %s, which is no test of sim, cli or plan", n)
		}
	}
	if len(names) < 10 {
		t.Errorf("Makefile: RACED names %d tests: %q", len(names), expr)
	}
}
