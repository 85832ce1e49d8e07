// Package ci holds the test that runs storm.sh, the script a team runs in
// its own CI against its own server, against the example server: so the
// script and the workflow that calls it (ci.yml) cannot rot unseen.
package ci

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type junit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			ClassName string    `xml:"classname,attr"`
			Name      string    `xml:"name,attr"`
			Failure   *struct{} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// storm runs storm.sh with env and args; it returns the exit code, the
// output and junit.xml's cases by name with whether each failed.
func storm(t *testing.T, env []string, args ...string) (int, string, map[string]bool) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("./storm.sh", args...)
	cmd.Env = append(append(os.Environ(), "OUT="+out), env...)
	b, _ := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	data, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil {
		t.Fatalf("storm.sh exited %d and wrote no junit.xml: %v\n%s", code, err, b)
	}
	var j junit
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	cases := map[string]bool{}
	for _, s := range j.Suites {
		for _, c := range s.Cases {
			cases[c.ClassName+"/"+c.Name] = c.Failure != nil
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Errorf("no report.html: %v", err)
	}
	return code, string(b), cases
}

// The thresholds storm.toml holds every server to, as junit.xml names them.
var thresholds = []string{
	"own-server.memory-sticky/lost_fraction_max", "own-server.memory-sticky/rate_404_max",
	"own-server.memory-sticky/events_duplicated_max", "own-server.memory-sticky/events_leaked_max",
	"own-server.memory-sticky/baseline",
}

// TestStormScript runs storm.sh as CI does (building stormsim and the
// example server, storming it live, comparing with the committed baseline)
// and it passes with junit.xml holding every threshold; then against the
// same server broken on purpose (it forgets every session after each
// request), where it must fail on the 404s.
func TestStormScript(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("storm.sh builds with go, which is not on PATH")
	}
	// Two seeds of the baseline's three keep make test short; the
	// comparison is over the seeds either way.
	code, out, cases := storm(t, nil, "--seeds", "2")
	if code == 97 {
		t.Skipf("host saturated: no verdict (exit 97), as designed\n%s", out)
	}
	if code != 0 {
		t.Fatalf("storm.sh against the example server: exit %d, want 0\n%s", code, out)
	}
	for _, c := range thresholds {
		failed, ok := cases[c]
		if !ok || failed {
			t.Errorf("junit.xml: %s present %v, failed %v; cases %v", c, ok, failed, cases)
		}
	}

	bin, _ := filepath.Abs("bin/stormsim") // built by the run above
	code, out, cases = storm(t, []string{"BYO_SERVER_LOSE_SESSIONS=1", "STORMSIM=" + bin}, "--seeds", "1")
	if code == 97 {
		t.Skipf("host saturated: no verdict (exit 97), as designed\n%s", out)
	}
	if code != 99 || !cases["own-server.memory-sticky/rate_404_max"] || !strings.Contains(out, "own-server/memory-sticky/rate_404: got ") {
		t.Errorf("storm.sh against a server that loses its sessions: exit %d, want 99 with rate_404_max failed; cases %v\n%s", code, cases, out)
	}

	// A saturated host (made so by the test hook that adds lateness to
	// every sample) gives no verdict: exit 97, the cases skipped.
	code, out, cases = storm(t, []string{"STORMSIM_INJECT_LATENESS=2s", "STORMSIM=" + bin}, "--seeds", "1")
	if _, ok := cases["own-server.memory-sticky/no_verdict"]; code != 97 || !ok || !strings.Contains(out, "no verdict") {
		t.Errorf("storm.sh on a saturated host: exit %d, want 97 and a no_verdict case; cases %v\n%s", code, cases, out)
	}
}
