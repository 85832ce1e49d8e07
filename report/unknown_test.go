package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUnknownIsNull: every key Design.Unknown names, a totals key or a
// nested one, is null in report.json with the keys in their order; a
// design with nothing unknown encodes as before; a report read back reads
// the unknowns as n/a through Metric, never 0.
func TestUnknownIsNull(t *testing.T) {
	known := Design{Name: "a", Totals: Totals{EventsReplayed: 195, EventsLost: 3, LostByCause: Causes{Unproduced: 2, Other: 1}}}
	unknown := known
	unknown.Name = "b"
	unknown.Unknown = []string{"events_replayed", "lost_by_cause.unproduced", "lost_fraction", "no_such_key"}
	r := &Report{Schema: Schema, Designs: []Design{known, unknown}}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Designs []struct {
			Totals map[string]any `json:"totals"`
		} `json:"designs"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	a, b := back.Designs[0].Totals, back.Designs[1].Totals
	if a["events_replayed"] != 195.0 || a["lost_by_cause"].(map[string]any)["unproduced"] != 2.0 {
		t.Errorf("a design with nothing unknown: %v", a)
	}
	if v, ok := b["events_replayed"]; !ok || v != nil {
		t.Errorf("events_replayed = %v (present %v), want null", v, ok)
	}
	if v, ok := b["lost_by_cause"].(map[string]any)["unproduced"]; !ok || v != nil {
		t.Errorf("lost_by_cause.unproduced = %v, want null", v)
	}
	if b["events_lost"] != 3.0 || b["lost_by_cause"].(map[string]any)["other"] != 1.0 {
		t.Errorf("known totals of b: %v", b)
	}
	// The order of the keys is the struct's: events_replayed between
	// events_delivered and events_lost, as in a.
	s := string(js)
	second := s[strings.Index(s, `"name": "b"`):]
	if i, j, k := strings.Index(second, `"events_delivered"`), strings.Index(second, `"events_replayed": null`), strings.Index(second, `"events_lost"`); !(i >= 0 && i < j && j < k) {
		t.Errorf("key order changed: %d %d %d\n%s", i, j, k, second)
	}
	got, err := Parse("report.json", js)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"events_replayed", "lost_unproduced", "lost_fraction"} {
		if v, ok := got.Designs[1].Metric(m); !ok || v != nil {
			t.Errorf("read back, %s = %v, want n/a", m, v)
		}
	}
	if v, _ := got.Designs[0].Metric("events_replayed"); v == nil || *v != 195 {
		t.Errorf("read back, a's events_replayed = %v", v)
	}
	if n := got.Designs[1].UnknownNote(); !strings.HasPrefix(n, UnknownNotePrefix+"events_replayed, lost_by_cause.unproduced") {
		t.Errorf("note %q", n)
	}
}
