package report

import (
	"strings"
	"testing"
)

// summary.md says a note every design shares once for the run, not once per
// design (six identical "unknown to this run: events_leaked" lines before),
// and a note of some designs once, after their names.
func TestSummaryNotesOncePerRun(t *testing.T) {
	t.Parallel()
	unknown := (&Design{Unknown: []string{"events_leaked"}}).UnknownNote()
	r := &Report{Scenario: "s", Designs: []Design{
		{Name: "a", Notes: []string{unknown, "only a"}},
		{Name: "b", Notes: []string{unknown, "b and c"}},
		{Name: "c", Notes: []string{"b and c", unknown, unknown}},
	}}
	md := string(r.Markdown())
	if n := strings.Count(md, "events_leaked"); n != 1 {
		t.Errorf("summary.md names events_leaked %d times, want once:\n%s", n, md)
	}
	for _, want := range []string{"- every design: " + unknown + "\n", "- a: only a\n", "- b, c: b and c\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

// The table of each fault's time for the rates to settle is titled for
// what it measures and defined beside it, against the recovery latency
// columns it could be read to contradict.
func TestSummaryDefinesRecoveryTable(t *testing.T) {
	t.Parallel()
	secs := 218.0
	r := &Report{Scenario: "s", Faults: []Fault{{Kind: "restart", AtS: 90, UntilS: 100}},
		Designs: []Design{{Name: "a", RecoveryAfterFaultS: []FaultRecovery{{Fault: 0, Seconds: &secs}}}}}
	md := string(r.Markdown())
	if strings.Contains(md, "Time to recover") {
		t.Errorf("summary.md still heads the table \"Time to recover\":\n%s", md)
	}
	head := "\n## " + RecoveryTitle + "\n\n" + RecoveryDefinition + "\n\n| design | fault 0 |"
	if !strings.Contains(md, head) || !strings.Contains(RecoveryDefinition, "recovery latency") {
		t.Errorf("summary.md's recovery table is not titled and defined beside the latency columns:\n%s", md)
	}
	if !strings.Contains(md, "| a | 218 |") {
		t.Errorf("summary.md lacks a's row:\n%s", md)
	}
}
