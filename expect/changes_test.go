package expect

import (
	"slices"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/report"
)

// Changes in both directions: a fall in events_lost is a change for the
// better, a move of resumes or drops either way is a change, and a null
// (unknown) value is never compared as 0.
func TestCompareBothDirections(t *testing.T) {
	t.Parallel()
	base := FromReport(fixture())
	cur := fixture()
	cur.Designs[0].Totals.EventsLost = 1  // 3 -> 1: better, beyond the exact tolerance
	cur.Designs[1].Totals.Resumes = 40    // 0 -> 40: neither better nor worse
	cur.Designs[1].Totals.HTTP404 = 7     // unchanged
	cur.Designs[0].Totals.Requests = 1000 // load: never compared
	cb := FromReport(cur)
	unknown := 0.0
	base.Designs[0].Metrics["events_leaked"] = nil // null in the baseline: not compared
	cb.Designs[0].Metrics["events_leaked"] = &unknown
	c, err := Compare(base, cb, DefaultTolerances("sim"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Regressions) != 0 {
		t.Errorf("regressions %v, want none", c.Regressions)
	}
	got := map[string]string{}
	for _, ch := range c.Changed {
		got[ch.Design+"/"+ch.Metric] = ch.Kind
	}
	want := map[string]string{"a/events_lost": KindBetter, "a/lost_fraction": KindBetter, "b/resumes": KindChanged}
	for k, kind := range want {
		if got[k] != kind {
			t.Errorf("%s: kind %q, want %q (changes %v)", k, got[k], kind, got)
		}
	}
	for _, k := range []string{"a/requests", "a/events_leaked"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s compared: %v", k, got)
		}
	}
	if f := c.Failing(false); len(f) != len(c.Changed) {
		t.Errorf("without --accept-better %d failing, want every change (%d)", len(f), len(c.Changed))
	}
	if f := c.Failing(true); len(f) != 0 {
		t.Errorf("with --accept-better: %v failing, want none", f)
	}
	for _, ch := range c.Changed {
		if !strings.Contains(ch.String(), "changed: refresh the baseline") {
			t.Errorf("%q does not say to refresh the baseline", ch)
		}
	}
}

// Over several seeds a change must clear its tolerance by more than the
// 95% interval of the difference of the means: the same spread is no
// change, a shift far beyond it is.
func TestCompareOverSeeds(t *testing.T) {
	t.Parallel()
	mk := func(lost ...float64) *Baseline {
		var reps []*report.Report
		for i, l := range lost {
			r := fixture()
			r.Engine = "live"
			r.Seed = uint64(42 + i)
			r.Designs[0].Totals.EventsLost = int64(l)
			reps = append(reps, r)
		}
		return FromReport(report.WithOverSeeds(reps))
	}
	base := mk(100, 140, 120)
	if len(base.Seeds) != 3 || len(base.Designs[0].Values["events_lost"]) != 3 || *base.Designs[0].Metrics["events_lost"] != 120 {
		t.Fatalf("live baseline over seeds: seeds %v, values %v, mean %v", base.Seeds, base.Designs[0].Values["events_lost"], *base.Designs[0].Metrics["events_lost"])
	}
	tol := DefaultTolerances("live")
	// 120 -> 140 mean: 17% > 10%, but within the interval of the difference.
	c, _ := Compare(base, mk(120, 160, 140), tol)
	for _, ch := range append(c.Regressions, c.Changed...) {
		if ch.Design == "a" && ch.Metric == "events_lost" {
			t.Errorf("a shift within the spread over seeds was flagged: %v", ch)
		}
	}
	// 120 -> 400: far beyond.
	c, _ = Compare(base, mk(390, 410, 400), tol)
	found := false
	for _, ch := range c.Regressions {
		if ch.Design == "a" && ch.Metric == "events_lost" {
			found = ch.Half > 0
		}
	}
	if !found {
		t.Errorf("events_lost 120 -> 400 over 3 seeds is no regression with an interval: %v", c.Regressions)
	}
	// 120 -> 10: far beyond, for the better.
	c, _ = Compare(base, mk(8, 12, 10), tol)
	found = false
	for _, ch := range c.Changed {
		if ch.Design == "a" && ch.Metric == "events_lost" && ch.Kind == KindBetter {
			found = true
		}
	}
	if !found {
		t.Errorf("events_lost 120 -> 10 is no change for the better: %v", c.Changed)
	}
}

// Diff lists every value a refresh changes, nulls included, and nothing
// else.
func TestDiff(t *testing.T) {
	t.Parallel()
	old := FromReport(fixture())
	cur := fixture()
	cur.Designs[1].Totals.HTTP404 = 9
	nb := FromReport(cur)
	old.Designs[0].Metrics["events_leaked"] = nil
	var lines []string
	for _, m := range Diff(old, nb) {
		lines = append(lines, m.String())
	}
	if want := []string{"s/a/events_leaked: null -> 0", "s/b/http_404: 7 -> 9"}; !slices.Equal(lines, want) {
		t.Errorf("diff %q", lines)
	}
	if d := Diff(nb, nb); len(d) != 0 {
		t.Errorf("no change listed %v", d)
	}
	md := string(ChangesMarkdown([]string{"s", "t"}, map[string][]Moved{"s": Diff(old, nb)}))
	for _, w := range []string{"## s", "- s/b/http_404: 7 -> 9", "## t", "No value changed."} {
		if !strings.Contains(md, w) {
			t.Errorf("CHANGES.md lacks %q:\n%s", w, md)
		}
	}
}
