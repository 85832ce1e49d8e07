package expect

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Moved is one value a refreshed baseline changes: Old or New is nil where
// that side has no value (null, or no such design or metric).
type Moved struct {
	Scenario, Design, Metric string
	Old, New                 *float64
	// Note is set for a whole design that appears or goes, and for a new
	// baseline with nothing before it.
	Note string
}

func (m Moved) String() string {
	if m.Note != "" {
		return m.Scenario + "/" + m.Design + ": " + m.Note
	}
	f := func(v *float64) string {
		if v == nil {
			return "null"
		}
		return strconv.FormatFloat(*v, 'f', -1, 64) // exact, as the JSON holds it
	}
	return fmt.Sprintf("%s/%s/%s: %s -> %s", m.Scenario, m.Design, m.Metric, f(m.Old), f(m.New))
}

// Diff lists every value that differs between an old baseline (nil: none
// was recorded) and a new one, design by design in the new one's order,
// metric by metric in name order, exactly: no tolerance, every metric,
// the load included. A null on one side and a number on the other is a
// change; null on both is not.
func Diff(old, cur *Baseline) []Moved {
	if old == nil {
		return []Moved{{Scenario: cur.Scenario, Design: "*", Note: "new baseline, nothing before it"}}
	}
	var out []Moved
	if old.Seed != cur.Seed {
		out = append(out, Moved{Scenario: cur.Scenario, Design: "*", Note: fmt.Sprintf("seed %d -> %d", old.Seed, cur.Seed)})
	}
	if old.ScenarioHash != cur.ScenarioHash {
		out = append(out, Moved{Scenario: cur.Scenario, Design: "*", Note: "the scenario's settings changed (scenario_hash " + short(old.ScenarioHash) + " -> " + short(cur.ScenarioHash) + ")"})
	}
	prev := map[string]DesignBase{}
	for _, d := range old.Designs {
		prev[d.Name] = d
	}
	for _, d := range cur.Designs {
		od, ok := prev[d.Name]
		if !ok {
			out = append(out, Moved{Scenario: cur.Scenario, Design: d.Name, Note: "new design, not in the old baseline"})
			continue
		}
		delete(prev, d.Name)
		names := map[string]bool{}
		for m := range d.Metrics {
			names[m] = true
		}
		for m := range od.Metrics {
			names[m] = true
		}
		var ms []string
		for m := range names {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		for _, m := range ms {
			o, n := od.Metrics[m], d.Metrics[m]
			if (o == nil) != (n == nil) || (o != nil && *o != *n) {
				out = append(out, Moved{Scenario: cur.Scenario, Design: d.Name, Metric: m, Old: o, New: n})
			}
		}
	}
	var gone []string
	for name := range prev {
		gone = append(gone, name)
	}
	sort.Strings(gone)
	for _, name := range gone {
		out = append(out, Moved{Scenario: cur.Scenario, Design: name, Note: "design removed: in the old baseline, not in the new one"})
	}
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ChangesMarkdown is CHANGES.md: per scenario, every value a refresh
// changed, old and new, or that none changed.
func ChangesMarkdown(scenarios []string, moved map[string][]Moved) []byte {
	var b strings.Builder
	b.WriteString("# Baseline changes\n\nWhat the last `stormsim baseline` changed, per scenario and design: every metric whose value moved, old -> new (null: no value).\n")
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "\n## %s\n\n", sc)
		if len(moved[sc]) == 0 {
			b.WriteString("No value changed.\n")
			continue
		}
		for _, m := range moved[sc] {
			b.WriteString("- " + m.String() + "\n")
		}
	}
	return []byte(b.String())
}
