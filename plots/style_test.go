package plots

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// styleNames are the shipped designs, then names stormsim does not know,
// which get a hashed style.
var styleNames = []string{
	"stateless", "nostore", "memory-sticky", "memory-roundrobin", "redis-events", "redis-shared",
	"memory-random", "memory-hash", "redis-events-random", "redis-shared-sticky",
	"custom", "my-design", "redis-cluster",
}

// The style of each design is fixed: a change to a colour or dash pattern
// shows up here, and is accepted with -update.
func TestStylesGolden(t *testing.T) {
	var b strings.Builder
	for _, name := range styleNames {
		s := StyleOf(name)
		fmt.Fprintf(&b, "%-20s %s %-18s %v\n", name, s.Hex(), s.Dash, s.Dashes)
	}
	golden := filepath.Join("testdata", "styles.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("styles (-golden +got):\n%s", diff)
	}
}

// The colours come from the Okabe–Ito palette, each shipped design has its
// own dash pattern, and the designs drawn together have distinct colours.
func TestStyleRules(t *testing.T) {
	t.Parallel()
	okabeIto := map[string]bool{"#E69F00": true, "#56B4E9": true, "#009E73": true, "#F0E442": true, "#0072B2": true, "#D55E00": true, "#CC79A7": true, "#000000": true}
	dash := map[string]string{}
	for _, name := range styleNames {
		s := StyleOf(name)
		if !okabeIto[s.Hex()] {
			t.Errorf("%s: colour %s is not Okabe–Ito", name, s.Hex())
		}
		if _, ok := known[name]; ok {
			if other, dup := dash[s.Dash]; dup {
				t.Errorf("%s and %s share the dash pattern %s", name, other, s.Dash)
			}
			dash[s.Dash] = name
		}
		if again := StyleOf(name); !cmp.Equal(s, again) {
			t.Errorf("%s: StyleOf is not stable: %+v then %+v", name, s, again)
		}
	}
	for _, set := range [][]string{
		{"stateless", "nostore", "memory-sticky", "memory-roundrobin", "redis-events", "redis-shared"},
		{"memory-sticky", "memory-random", "redis-events", "redis-events-random", "redis-shared", "redis-shared-sticky"},
	} {
		seen := map[string]string{}
		for _, name := range set {
			c := StyleOf(name).Hex()
			if other, dup := seen[c]; dup {
				t.Errorf("%s and %s are drawn together and share colour %s", name, other, c)
			}
			seen[c] = name
		}
	}
}
