package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Longest lines a function may span: a function that passes a screen has
// steps that want names. A CLI command is flags, one library call and an
// exit code, so cli's limit is lower.
const (
	maxLines    = 100
	maxCLILines = 60
)

// longAllowed are the functions off a run's path that may still pass
// maxLines (the scenario loader), with their length when they were
// allowed. The list can only shrink: a function on it that has come under
// the limit fails the test until its line goes. Nothing of the live run,
// the judge, merge or the CLI may be on it.
var longAllowed = map[string]int{}

// TestFunctionLength parses every non-test Go file of the module and fails
// on a function longer than maxLines (maxCLILines in cli) that is not on
// longAllowed, on one that grew past its allowed length, and on an entry of
// longAllowed that is no longer needed.
func TestFunctionLength(t *testing.T) {
	t.Parallel()
	got := functionLengths(t, filepath.Join("..", ".."))
	for name, n := range got {
		limit := maxLines
		if strings.HasPrefix(name, "cli/") {
			limit = maxCLILines
		}
		allowed, ok := longAllowed[name]
		switch {
		case n <= limit:
		case !ok:
			t.Errorf("%s is %d lines, over %d: split it into named steps", name, n, limit)
		case n > allowed:
			t.Errorf("%s is %d lines, longer than the %d it was allowed: split it", name, n, allowed)
		}
	}
	names := make([]string, 0, len(longAllowed))
	for name := range longAllowed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n, ok := got[name]
		switch {
		case strings.HasPrefix(name, "cli/") || strings.HasPrefix(name, "live/") || strings.HasPrefix(name, "history/") || strings.HasPrefix(name, "orchestrate/"):
			t.Errorf("longAllowed: %s is on a run's path (the CLI, the live run, the judge, merge): it may not be allowed", name)
		case !ok:
			t.Errorf("longAllowed: %s is gone: remove its line", name)
		case n <= maxLines:
			t.Errorf("longAllowed: %s is %d lines now, within %d: remove its line", name, n, maxLines)
		}
	}
}

// functionLengths maps "dir/file.go: Recv.Name" to the lines each
// function of root's non-test Go files spans, from func to its closing
// brace.
func functionLengths(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "node_modules" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := filepath.ToSlash(rel) + ": " + funcName(fn)
			out[name] = fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d functions under %s: not the module's root", len(out), root)
	}
	return out
}

// funcName is Name, or Recv.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
