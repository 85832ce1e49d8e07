package protocol_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// writers are the functions that write a served response's status (the
// 200 of an SSE stream, and the 500 of a writer that cannot stream), and
// the replica process's own endpoints, which are no MCP answers (/healthz
// for the load balancer, the store's size): the only places in the server
// models allowed to name a status.
var writers = map[string]bool{"live/replica.openSSE": true, "live/replica.ownRoutes": true}

// statuses are the HTTP statuses a replica answers.
var statuses = map[string]bool{"200": true, "202": true, "400": true, "403": true, "404": true, "405": true, "409": true, "429": true, "500": true, "503": true}

// TestStatusDecisionsInProtocol parses the simulator's and the live
// replica's code and fails on any HTTP status chosen outside package
// protocol: an http.Status… constant, or a status number given as a value
// (a Status field, an assignment, a return, a response written), outside
// the code that writes a served response. Reading a status (a comparison,
// a case that counts it) is not a decision.
func TestStatusDecisionsInProtocol(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"sim", "live/replica"} {
		eachFile(t, filepath.Join("..", dir), func(path string, f *ast.File, fset *token.FileSet) {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || writers[dir+"."+fn.Name.Name] {
					continue
				}
				for _, pos := range statusDecisions(fn.Body) {
					t.Errorf("%s: %s decides an HTTP status outside package protocol", fset.Position(pos), fn.Name.Name)
				}
			}
		})
	}
}

// statusDecisions lists where body names an http.Status… constant or
// gives a status number as a value.
func statusDecisions(body ast.Node) []token.Pos {
	var out []token.Pos
	isStatus := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.BasicLit:
			return x.Kind == token.INT && statuses[x.Value]
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			return ok && id.Name == "http" && strings.HasPrefix(x.Sel.Name, "Status") && x.Sel.Name != "StatusText"
		}
		return false
	}
	named := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return strings.Contains(strings.ToLower(x.Name), "status")
		case *ast.SelectorExpr:
			return strings.Contains(strings.ToLower(x.Sel.Name), "status")
		}
		return false
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if isStatus(x) {
				out = append(out, x.Pos())
			}
		case *ast.KeyValueExpr:
			if named(x.Key) && isStatus(x.Value) {
				out = append(out, x.Value.Pos())
			}
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if i < len(x.Rhs) && named(l) && isStatus(x.Rhs[i]) {
					out = append(out, x.Rhs[i].Pos())
				}
			}
		case *ast.ReturnStmt:
			for _, r := range x.Results {
				if lit, ok := r.(*ast.BasicLit); ok && isStatus(lit) {
					out = append(out, r.Pos())
				}
			}
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "WriteHeader" || sel.Sel.Name == "Error") {
				for _, a := range x.Args {
					if lit, ok := a.(*ast.BasicLit); ok && isStatus(lit) {
						out = append(out, a.Pos())
					}
				}
			}
		}
		return true
	})
	return out
}

// era is how an era's name looks.
var era = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// TestNoEraComparedOutsideProtocol fails on any comparison with an era's
// name (==, != or a case) in the module's code outside package protocol
// and the scenario loader: what an era offers is protocol.Caps.
func TestNoEraComparedOutsideProtocol(t *testing.T) {
	t.Parallel()
	eachFile(t, "..", func(path string, f *ast.File, fset *token.FileSet) {
		rel, _ := filepath.Rel("..", path)
		if strings.HasPrefix(rel, "protocol/") || rel == "scenario/load.go" {
			return
		}
		isEra := func(e ast.Expr) bool {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return false
			}
			s, err := strconv.Unquote(lit.Value)
			return err == nil && era.MatchString(s)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if (x.Op == token.EQL || x.Op == token.NEQ) && (isEra(x.X) || isEra(x.Y)) {
					t.Errorf("%s: an era compared as a string: use protocol.CapsOf", fset.Position(x.Pos()))
				}
			case *ast.CaseClause:
				for _, e := range x.List {
					if isEra(e) {
						t.Errorf("%s: an era compared as a string (case): use protocol.CapsOf", fset.Position(e.Pos()))
					}
				}
			}
			return true
		})
	})
}

// eachFile parses every non-test Go file under root, outside testdata
// and node_modules.
func eachFile(t *testing.T, root string, fn func(string, *ast.File, *token.FileSet)) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		n++
		fn(path, f, fset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no Go files under %s", root)
	}
}
