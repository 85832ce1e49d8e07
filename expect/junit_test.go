package expect

import (
	"strings"
	"testing"
)

// A scenario that gave no verdict is skipped, case by case, with the
// reason, and counts as neither a pass nor a failure.
func TestJUnitNoVerdict(t *testing.T) {
	var j JUnit
	j.AddScenario("a", []string{"d"}, []Result{{Design: "d", Metric: "http_404", Op: "max", Pass: true}}, nil, nil)
	j.AddNoVerdict("b", []string{"d", "e"}, "host saturated: producers emitted 700 ms late at p99")
	if j.Tests != 4 || j.Skipped != 2 || j.Failures != 0 {
		t.Errorf("tests %d, skipped %d, failures %d", j.Tests, j.Skipped, j.Failures)
	}
	x, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `<testcase classname="b.e" name="no_verdict">`) ||
		!strings.Contains(string(x), `<skipped message="no verdict: host saturated: producers emitted 700 ms late at p99">`) {
		t.Errorf("junit.xml:\n%s", x)
	}
}
