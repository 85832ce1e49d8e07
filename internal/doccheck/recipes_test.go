package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/topology"
)

// quantile is the suffix of a latency's quantile, which the metric's
// block documents once.
var quantile = regexp.MustCompile(`_(p50|p90|p99|max)$`)

// recipePath is a path in backticks in a recipe: a folder and a file, or
// a folder alone ending in /.
var recipePath = regexp.MustCompile("`((?:[a-z]+/)+(?:[A-Za-z0-9_.-]+\\.(?:go|md|toml))?)`")

// The recipes of docs/architecture.md hold to the code: every file they
// name exists; every registered fault kind has a file of its own in faults/
// that registers it and a row in docs/reference.md's fault-kind table;
// every LB policy is registered in a file of topology/ and named in the
// lb row; every client profile has a row in the client-profile table; every
// events value (an event-store backend) is named in the Designs section;
// every metric is named in docs/reference.md.
func TestRecipes(t *testing.T) {
	t.Parallel()
	arch := read(t, "docs/architecture.md")
	_, recipes, ok := strings.Cut(arch, "\n## Recipes\n")
	if !ok {
		t.Fatal("docs/architecture.md: no Recipes section")
	}
	recipes, _, _ = strings.Cut(recipes, "\n## ")
	for _, m := range recipePath.FindAllStringSubmatch(recipes, -1) {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("docs/architecture.md, Recipes: %s: %v", m[1], err)
		}
	}
	ref := read(t, "docs/reference.md")
	kinds := section(t, ref, "### Fault kinds")
	files := registrations(t, "faults")
	for _, k := range faults.Kinds() {
		if !strings.Contains(kinds, "| `"+k+"` |") {
			t.Errorf("docs/reference.md, Fault kinds: no row for kind %s", k)
		}
		if files[k] == "" {
			t.Errorf("faults: no file registers kind %s with Register(%q, ...)", k, k)
		}
	}
	lb := row(t, ref, "| `lb` |")
	pfiles := registrations(t, "topology")
	for _, p := range topology.PolicyNames() {
		if !strings.Contains(lb, "`"+p+"`") {
			t.Errorf("docs/reference.md: the lb row does not name policy %s", p)
		}
		if pfiles[p] == "" {
			t.Errorf("topology: no file registers policy %s with Register(%q, ...)", p, p)
		}
	}
	profiles := section(t, ref, "### Client profiles")
	for _, p := range clients.ProfileNames() {
		if !regexp.MustCompile("\\| `" + regexp.QuoteMeta(p) + "`[ |]").MatchString(profiles) {
			t.Errorf("docs/reference.md, Client profiles: no row for profile %s", p)
		}
	}
	designs := section(t, ref, "### Designs")
	for _, e := range topology.Events {
		if !strings.Contains(designs, "`"+e+"`") {
			t.Errorf("docs/reference.md, Designs: the events key's values do not name %s", e)
		}
	}
	for _, m := range report.MetricNames() {
		base := quantile.ReplaceAllString(m, "")
		if !regexp.MustCompile(`\b` + base + `\b`).MatchString(ref) {
			t.Errorf("docs/reference.md: metric %s is named nowhere", m)
		}
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text under heading up to the next heading.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	_, s, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/reference.md: no %q", heading)
	}
	s, _, _ = strings.Cut(s, "\n#")
	return s
}

// row is the table row that begins with prefix.
func row(t *testing.T, doc, prefix string) string {
	t.Helper()
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("docs/reference.md: no row %q", prefix)
	return ""
}

// registrations maps each name a non-test file of package dir passes to
// Register("name", ...) to that file.
func registrations(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	paths, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "Register" {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					name, _ := strconv.Unquote(lit.Value)
					out[name] = filepath.Base(p)
				}
			}
			return true
		})
	}
	return out
}
