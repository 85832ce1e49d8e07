package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deepInline is z = {a = {a = … 1 …}} nested n levels.
func deepInline(n int) string {
	return "[scenario.s]\nz = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n"
}

// deepHeader is a table header of n dotted parts.
func deepHeader(n int) string {
	return "[scenario.s]\n[" + strings.Repeat("a.", n-1) + "a]\nx = 1\n"
}

func TestShapeLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		refused   bool
	}{
		{"10,000 nested inline tables", deepInline(10_000), true},
		{"10,000-part dotted header", deepHeader(10_000), true},
		{"10,000-part dotted key", "[scenario.s]\n" + strings.Repeat("a.", 9_999) + "a = 1\n", true},
		{"10,000 nested arrays", "[scenario.s]\nz = " + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + "\n", true},
		{"65 nested inline tables", deepInline(MaxDepth + 1), true},
		{"64 nested inline tables: at the limit", deepInline(MaxDepth), false},
		{"64-part header: at the limit", deepHeader(MaxDepth), false},
		// Brackets, braces and dots inside strings and comments are not nesting.
		{"brackets in strings and comments", "[scenario.s]\ndescription = \"" + strings.Repeat("{[.", 200) + "\" # " + strings.Repeat("{[.", 200) + "\nx = '''\n" + strings.Repeat("{[.", 200) + "'''\n", false},
		// Dots in values (floats, versions) are not key parts.
		{"dots in values", "[scenario.s]\nx = [" + strings.Repeat("1.5, ", 500) + "]\n", false},
		// Arrays of inline tables spread over many lines close as they go.
		{"many sibling tables", "[scenario.s]\nx = [\n" + strings.Repeat("  {a = {b = [1, 2]}},\n", 2000) + "]\n", false},
	} {
		line, what := checkShape([]byte(tc.src))
		if refused := line > 0; refused != tc.refused {
			t.Errorf("%s: refused %v (line %d, %s), want %v", tc.name, refused, line, what, tc.refused)
		}
	}
}

func TestShippedFileWithinShape(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../scenarios.toml")
	if err != nil {
		t.Fatal(err)
	}
	if line, what := checkShape(data); line > 0 {
		t.Fatalf("scenarios.toml refused at line %d (%s)", line, what)
	}
}

func TestLoadRefusesDeepAndLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	deep := filepath.Join(dir, "deep.toml")
	if err := os.WriteFile(deep, []byte(deepInline(10_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(deep, nil)
	if err == nil || !strings.Contains(err.Error(), deep) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "64 levels") {
		t.Errorf("deep file: got %v, want an error naming the file, line 2 and the limit", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("[scenario.s]\n# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big, nil)
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "4 MiB") {
		t.Errorf("large file: got %v, want an error naming the file and the limit", err)
	}
	// --set goes through the same limit.
	_, err = Load("../scenarios.toml", &Options{Set: []string{"x=" + strings.Repeat("{a=", 100) + "1" + strings.Repeat("}", 100)}, Target: "deploy-restart"})
	if err == nil || !strings.Contains(err.Error(), "--set x") || !strings.Contains(err.Error(), "64 levels") {
		t.Errorf("deep --set: got %v, want an error naming --set x and the limit", err)
	}
}

// Loading gives up at once when its context ends (Ctrl-C while a file is
// read): the caller gets the context's error, not a result.
func TestLoadContextCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, err := LoadContext(ctx, "../scenarios.toml", nil)
	if f != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled load: %v, %v; want context.Canceled", f, err)
	}
	if f, err := LoadContext(context.Background(), "../scenarios.toml", nil); err != nil || len(f.Names()) == 0 {
		t.Errorf("load: %v", err)
	}
}
