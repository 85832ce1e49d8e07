package plots

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stormsim/stormsim/report"
)

// runB is a second run of the fixture: another seed, twice the losses,
// without redis-shared and with a design run A does not have.
func runB(t *testing.T) *report.Report {
	t.Helper()
	b := fixture(t)
	b.Seed = 43
	for i := range b.Designs {
		for j := range b.Designs[i].Series.EventsLost {
			b.Designs[i].Series.EventsLost[j] *= 2
		}
	}
	extra := b.Designs[2]
	extra.Name = "custom"
	b.Designs = append(b.Designs[:5], extra)
	return b
}

func overlayOf(t *testing.T, a, b *report.Report) map[string]Chart {
	t.Helper()
	cs, err := OverlayCharts(a, b)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Chart{}
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

// Each design of each run has its line, labelled with its run, in the
// design's colour: run A solid, run B dashed.
func TestOverlayLines(t *testing.T) {
	t.Parallel()
	a, b := fixture(t), runB(t)
	charts := overlayOf(t, a, b)
	var got []string
	for _, c := range charts {
		got = append(got, c.Name)
	}
	sort.Strings(got)
	want := append([]string(nil), OverlayChartNames...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("overlay charts (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		run    *report.Report
		suffix string
		dashed bool
	}{
		{a, " (A)", false}, // run A: solid
		{b, " (B)", true},  // run B: dashed
	} {
		p := charts["lost-events"].Panels[0]
		for _, d := range tc.run.Designs {
			label := d.Name + tc.suffix
			var l *Line
			for i := range p.Lines {
				if p.Lines[i].Label == label {
					l = &p.Lines[i]
				}
			}
			if l == nil {
				t.Errorf("lost-events: no line %q", label)
				continue
			}
			if diff := cmp.Diff(cumulative(d.Series.EventsLost, d.Series.StepS), l.Points); diff != "" {
				t.Errorf("%s: points (-want +got):\n%s", label, diff)
			}
			if l.Pen.Color != StyleOf(d.Name).Color || (l.Pen.Dashes != nil) != tc.dashed {
				t.Errorf("%s: pen %+v, want colour %s, dashed %v", label, l.Pen, StyleOf(d.Name).Hex(), tc.dashed)
			}
		}
	}
	var legend []string
	for _, k := range charts["replay-latency"].Legend {
		legend = append(legend, k.Label)
	}
	wantLegend := []string{
		"stateless (A) (no replays)", "stateless (B) (no replays)",
		"nostore (A) (no replays)", "nostore (B) (no replays)",
		"memory-sticky (A)", "memory-sticky (B)",
		"memory-roundrobin (A)", "memory-roundrobin (B)",
		"redis-events (A)", "redis-events (B)",
		"redis-shared (A)",
		"custom (B)",
	}
	if diff := cmp.Diff(wantLegend, legend); diff != "" {
		t.Errorf("replay-latency legend (-want +got):\n%s", diff)
	}
}

// Faults shared by both runs are marked once; different schedules are
// marked per run.
func TestOverlayFaults(t *testing.T) {
	t.Parallel()
	a, b := fixture(t), runB(t)
	if got := overlayOf(t, a, b)["rate-404"].Panels[0].Faults; len(got) != 2 {
		t.Errorf("same schedule: %d markers, want 2", len(got))
	}
	b.Faults = b.Faults[:1]
	got := overlayOf(t, a, b)["rate-404"].Panels[0].Faults
	want := []Marker{
		{Label: "kill replica-1 (A)", At: 20, Until: 20},
		{Label: "partition replica-2 (A)", At: 30, Until: 45},
		{Label: "kill replica-1 (B)", At: 20, Until: 20},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("markers (-want +got):\n%s", diff)
	}
}

func TestOverlayFiles(t *testing.T) {
	t.Parallel()
	files, err := Overlay(fixture(t), runB(t))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range OverlayChartNames {
		want = append(want, n+".png", n+".svg")
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names(files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	checkImages(t, files)
	bad := fixture(t)
	bad.Designs[0].Series.StepS = 0
	if _, err := Overlay(fixture(t), bad); err == nil {
		t.Error("Overlay accepted a run B with a zero step")
	}
}
