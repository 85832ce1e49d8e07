package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/stormsim/stormsim"

// engine names the engine a package belongs to: "sim", "live", or "" for a
// package of neither.
func engine(pkg string) string {
	switch rel := strings.TrimPrefix(pkg, module+"/"); {
	case rel == "sim" || strings.HasPrefix(rel, "sim/"):
		return "sim"
	case rel == "live" || strings.HasPrefix(rel, "live/"):
		return "live"
	}
	return ""
}

// shared are the packages both engines stand on; they import no engine.
var shared = []string{"history", "scenario", "faults", "topology", "clients", "workload", "report", "fluid"}

// crossings lists what pkg must not import among deps, one line each: an
// engine's package importing the other engine, or a shared package
// importing either.
func crossings(pkg string, deps []string) []string {
	own := engine(pkg)
	neutral := slices.Contains(shared, strings.TrimPrefix(pkg, module+"/"))
	if own == "" && !neutral {
		return nil
	}
	var bad []string
	for _, d := range deps {
		if e := engine(d); e != "" && e != own {
			bad = append(bad, pkg+" imports "+d)
		}
	}
	return bad
}

// TestCrossings holds crossings to the rule on made-up import lists, so that
// TestEnginesApart cannot pass by finding nothing.
func TestCrossings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pkg  string
		deps []string
		want int
	}{
		// the simulator importing the live checker
		{module + "/sim", []string{module + "/history", module + "/live/check"}, 1},
		// the live runner importing the simulator
		{module + "/live/runner", []string{module + "/live/check", module + "/sim"}, 1},
		// a shared package importing both engines
		{module + "/history", []string{module + "/sim", module + "/live/lb"}, 2},
		// each engine's own packages and the shared ones
		{module + "/live/runner", []string{module + "/live/check", module + "/history", module + "/scenario"}, 0},
		{module + "/sim", []string{module + "/history", module + "/topology"}, 0},
		// a package downstream of both engines may import both
		{module + "/cli", []string{module + "/sim", module + "/live/runner"}, 0},
		// a name that only begins like an engine's
		{module + "/live/runner", []string{module + "/simple"}, 0},
	} {
		if got := crossings(tc.pkg, tc.deps); len(got) != tc.want {
			t.Errorf("crossings(%s, %v) = %v, want %d", tc.pkg, tc.deps, got, tc.want)
		}
	}
}

// TestEnginesApart reads every package's non-test imports, direct and
// indirect, from `go list -deps`: sim must not reach live/..., live/...
// must not reach sim, and the shared packages must reach neither.
func TestEnginesApart(t *testing.T) {
	t.Parallel()
	pkgs := []string{module + "/sim/...", module + "/live/..."}
	for _, s := range shared {
		pkgs = append(pkgs, module+"/"+s)
	}
	args := append([]string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		seen[engine(f[0])] = true
		for _, c := range crossings(f[0], f[1:]) {
			t.Error(c)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !seen["sim"] || !seen["live"] {
		t.Fatalf("go list named no package of one engine (%v): the patterns are wrong", seen)
	}
}
