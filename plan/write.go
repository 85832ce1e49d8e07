package plan

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// Schema is the version of plan.json.
const Schema = 1

// File names of a plan folder.
const (
	JSONName     = "plan.json"
	CSVName      = "plan.csv"
	MarkdownName = "plan.md"
)

// Doc is plan.json: the grid, every row, and the recommendation.
type Doc struct {
	Schema          int              `json:"schema"`
	StormsimVersion string           `json:"stormsim_version"`
	Scenario        string           `json:"scenario"`
	Description     string           `json:"description"`
	Engine          string           `json:"engine"`
	Seed            uint64           `json:"seed"`
	Set             []string         `json:"set"`
	Axes            []DocAxis        `json:"axes"`
	Designs         []string         `json:"designs"`
	Thresholds      []scenario.Check `json:"thresholds"`
	HeadroomPercent int              `json:"headroom_percent"`
	Rows            []DocRow         `json:"rows"`
	Recommendation  DocRecommend     `json:"recommendation"`
	Notes           []string         `json:"notes"`
}

// DocAxis is one swept key; the first is the load axis.
type DocAxis struct {
	Key    string    `json:"key"`
	Unit   string    `json:"unit"`
	Log    bool      `json:"log"`
	Spec   string    `json:"spec"`
	Values []float64 `json:"values"`
}

// DocRow is one design at one grid point.
type DocRow struct {
	Values           []float64 `json:"values"`
	Set              []string  `json:"set"`
	Design           string    `json:"design"`
	Replicas         int       `json:"replicas"`
	StorePeakBytes   int64     `json:"store_peak_bytes"`
	StorePeakOpsPerS float64   `json:"store_peak_ops_per_s"`
	ReplayP99MS      *float64  `json:"replay_p99_ms"`
	LostFraction     float64   `json:"lost_fraction"`
	Rate404          float64   `json:"rate_404"`
	EventsExpected   int64     `json:"events_expected"`
	EventsLost       int64     `json:"events_lost"`
	LostPurged       int64     `json:"lost_purged"`
	Pass             bool      `json:"pass"`
	Meets            bool      `json:"meets"`
	FirstFailed      string    `json:"first_failed"`
}

// DocRecommend is the recommendation in plan.json.
type DocRecommend struct {
	Target       DocTarget   `json:"target"`
	Candidates   []Candidate `json:"candidates"`
	Cheapest     *Candidate  `json:"cheapest"`
	FirstFailure *Failure    `json:"first_failure"`
}

// DocTarget is the load planned for.
type DocTarget struct {
	Key   string  `json:"key"`
	Value float64 `json:"value"`
}

// LostFraction is events_lost / events_expected, 0 when nothing was expected.
func LostFraction(t *report.Totals) float64 {
	if t.EventsExpected == 0 {
		return 0
	}
	return float64(t.EventsLost) / float64(t.EventsExpected)
}

// NewDoc assembles plan.json's content.
func NewDoc(res *Result, rec *Recommendation) *Doc {
	g := res.Grid
	sc := g.Scenario()
	d := &Doc{
		Schema: Schema, StormsimVersion: report.Version, Scenario: sc.Name, Description: sc.Description,
		Engine: "sim", Seed: sc.Seed, Set: nonNil(g.Base), Designs: g.Designs, Thresholds: g.Checks(),
		HeadroomPercent: HeadroomPercent, Notes: nonNil(res.Notes()),
	}
	if d.Thresholds == nil {
		d.Thresholds = []scenario.Check{}
	}
	for _, a := range g.Axes {
		d.Axes = append(d.Axes, DocAxis{Key: a.Key, Unit: a.Kind.Unit(), Log: a.Log, Spec: a.Spec, Values: a.Values})
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		t := &r.Report.Totals
		p := g.Points[r.Point]
		d.Rows = append(d.Rows, DocRow{
			Values: p.Values, Set: p.Set[len(g.Base):], Design: r.Design, Replicas: r.Replicas,
			StorePeakBytes: t.StorePeakBytes, StorePeakOpsPerS: t.StorePeakOpsPerS,
			ReplayP99MS: r.Report.ReplayLatencyMS.P99, LostFraction: LostFraction(t), Rate404: t.Rate404,
			EventsExpected: t.EventsExpected, EventsLost: t.EventsLost, LostPurged: t.LostByCause.Purged,
			Pass: rec.Verdicts[i].Pass, Meets: rec.Meets[i], FirstFailed: rec.Verdicts[i].FirstFailed(),
		})
	}
	d.Recommendation = DocRecommend{
		Target:     DocTarget{Key: rec.LoadKey, Value: rec.Target},
		Candidates: rec.Candidates, Cheapest: rec.Best(), FirstFailure: rec.FirstFailure,
	}
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Files renders plan.json, plan.csv and plan.md. The same rows give the
// same bytes.
func Files(res *Result, rec *Recommendation) (map[string][]byte, error) {
	doc := NewDoc(res, rec)
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	c, err := CSV(res, rec)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{JSONName: j.Bytes(), CSVName: c, MarkdownName: Markdown(res, rec)}, nil
}

// CSVHeader is the header of plan.csv after the swept keys.
var CSVHeader = []string{"design", "replicas", "store_peak_bytes", "store_peak_ops_per_s", "replay_p99_ms", "lost_fraction", "rate_404", "pass", "meets", "first_failed", "events_expected", "events_lost", "lost_purged"}

// CSV renders plan.csv: one row per grid point and design, the swept
// values first (durations as 60s), an empty replay_p99_ms when there were
// no replays. pass says the row met every threshold; meets that its design
// (at the same values of the other axes) passed at this load and every
// smaller one, which is what the recommendation counts.
func CSV(res *Result, rec *Recommendation) ([]byte, error) {
	g := res.Grid
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	var head []string
	for _, a := range g.Axes {
		head = append(head, a.Key)
	}
	if err := w.Write(append(head, CSVHeader...)); err != nil {
		return nil, err
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		t := &r.Report.Totals
		p := g.Points[r.Point]
		var row []string
		for ai := range g.Axes {
			row = append(row, g.Axes[ai].Text(p.Values[ai]))
		}
		p99 := ""
		if q := r.Report.ReplayLatencyMS.P99; q != nil {
			p99 = num(*q)
		}
		row = append(row, r.Design, strconv.Itoa(r.Replicas),
			strconv.FormatInt(t.StorePeakBytes, 10), num(t.StorePeakOpsPerS), p99,
			num(LostFraction(t)), num(t.Rate404), strconv.FormatBool(rec.Verdicts[i].Pass), strconv.FormatBool(rec.Meets[i]), rec.Verdicts[i].FirstFailed(),
			strconv.FormatInt(t.EventsExpected, 10), strconv.FormatInt(t.EventsLost, 10), strconv.FormatInt(t.LostByCause.Purged, 10))
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Bytes prints a size in binary units: 1.5 MiB.
func Bytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// Markdown renders plan.md: the recommendation first, then every
// candidate, the thresholds and the arithmetic.
func Markdown(res *Result, rec *Recommendation) []byte {
	g := res.Grid
	sc := g.Scenario()
	load := &g.Axes[0]
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Capacity plan: %s\n\n", sc.Name)
	if sc.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", sc.Description)
	}
	fmt.Fprintf(&b, "Simulator, seed %d, stormsim %s. ", sc.Seed, report.Version)
	fmt.Fprintf(&b, "Load axis: `%s` = %s. ", load.Key, valueList(load))
	for _, a := range g.Axes[1:] {
		fmt.Fprintf(&b, "Also swept: `%s` = %s. ", a.Key, valueList(&a))
	}
	if len(g.Base) > 0 {
		fmt.Fprintf(&b, "Overrides at every point: `--set %s`. ", strings.Join(g.Base, "` `--set "))
	}
	fmt.Fprintf(&b, "Designs: %s. %d grid point(s) × %d design(s) = %d runs.\n\n", strings.Join(g.Designs, ", "), len(g.Points), len(g.Designs), len(res.Rows))
	fmt.Fprintf(&b, "Target load: `%s`. Headroom: **+%d%%** over the simulated peak: provision = ceil(peak × %s).\n\n",
		load.Label(rec.Target), HeadroomPercent, trim(float64(100+HeadroomPercent)/100))

	b.WriteString("## Recommendation\n\n")
	if best := rec.Best(); best != nil {
		fmt.Fprintf(&b, "**%s**%s is the cheapest design that meets every threshold at `%s`", best.Design, groupSuffix(best.Group), load.Label(rec.Target))
		if best.AtTarget.PeakBytes == 0 && best.AtTarget.PeakOpsPerS == 0 {
			fmt.Fprintf(&b, ": it keeps no events, so there is no store to provision; %d replicas.\n\n", best.Replicas)
		} else {
			fmt.Fprintf(&b, ": %s.\n\n", provisionText(best))
		}
		b.WriteString("Cheapest means the least store memory to provision at the target, then the fewest replicas, then the fewest store ops/s.")
		// The cheapest design with a store, for a reader who needs resumes.
		if i := cheapestWithStore(rec); best.AtTarget.PeakBytes == 0 && i >= 0 {
			c := &rec.Candidates[i]
			fmt.Fprintf(&b, " The cheapest design that keeps events (and so can resume a stream) is **%s**%s: %s.", c.Design, groupSuffix(c.Group), provisionText(c))
		}
		b.WriteString("\n\n")
	} else {
		fmt.Fprintf(&b, "**No design meets the thresholds at `%s`.**", load.Label(rec.Target))
		if f := rec.FirstFailure; f != nil {
			fmt.Fprintf(&b, " The first threshold to fail: at `%s`, %s%s failed `%s`.", load.Label(f.Load), f.Design, groupSuffix(f.Group), f.Check)
		}
		b.WriteString("\n\n")
	}
	if len(g.Checks()) == 0 {
		b.WriteString("The scenario has no thresholds (no `expect` table), so every design meets them at every load: the table below is a sizing table only.\n\n")
	}

	b.WriteString("## Designs\n\n")
	fmt.Fprintf(&b, "Max load is the largest `%s` on the grid such that the design meets every threshold at every grid load up to it: a design that fails at a load is counted failing at every larger load.\n\n", load.Key)
	head := []string{"design"}
	if len(g.Axes) > 1 {
		head = append(head, "at")
	}
	head = append(head, "replicas", "max load", "store memory at max load (+"+strconv.Itoa(HeadroomPercent)+"%)", "store ops/s at max load (+"+strconv.Itoa(HeadroomPercent)+"%)",
		"meets target", "store memory at target (+"+strconv.Itoa(HeadroomPercent)+"%)", "store ops/s at target (+"+strconv.Itoa(HeadroomPercent)+"%)", "first failure")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range rec.Candidates {
		row := []string{c.Design}
		if len(g.Axes) > 1 {
			row = append(row, c.Group)
		}
		row = append(row, strconv.Itoa(c.Replicas))
		if c.MaxLoad == nil {
			row = append(row, "none", "-", "-")
		} else {
			row = append(row, load.Text(*c.MaxLoad), Bytes(c.AtMax.Bytes), trim(c.AtMax.OpsPerS))
		}
		meets := "no"
		if c.MeetsTarget {
			meets = "yes"
		}
		row = append(row, meets)
		if c.AtTarget == nil {
			row = append(row, "-", "-")
		} else {
			row = append(row, Bytes(c.AtTarget.Bytes), trim(c.AtTarget.OpsPerS))
		}
		if f := c.FirstFailure; f != nil {
			row = append(row, fmt.Sprintf("at %s: %s", load.Text(f.Load), strings.ReplaceAll(f.Check, "|", "\\|")))
		} else {
			row = append(row, "none")
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n## Thresholds\n\n")
	if len(g.Checks()) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("From the scenario's `expect` table; a row passes when every one that applies to its design holds.\n\n")
		for _, c := range g.Checks() {
			who := "every design"
			if c.Design != "" {
				who = c.Design
			}
			rel := "≤"
			if c.Op == "min" {
				rel = "≥"
			}
			empty := ""
			if c.AllowEmpty {
				empty = " (may be empty)"
			}
			fmt.Fprintf(&b, "- %s: `%s_%s` (%s %s %s)%s\n", who, c.Metric, c.Op, c.Metric, rel, trim(c.Bound), empty)
		}
	}
	b.WriteString("\n## How the sizes are made\n\n")
	fmt.Fprintf(&b, "Every size comes from the simulated store, never from a formula: `store_peak_bytes` is the most the design's event store held at the end of any %gs step of the run (summed over every replica process for the in-memory store), and `store_peak_ops_per_s` the most appends, replay reads and session reads it served in one step, per second. The plan adds %d%% and rounds up: provision bytes = ceil(store_peak_bytes × %d / 100), ops/s = ceil(store_peak_ops_per_s × %d / 100). `plan.csv` and `plan.json` hold every row; `stormsim run %s` with the plan's overrides and a row's `set` (in plan.json) as `--set` reproduces it.\n",
		stepS(sc), HeadroomPercent, 100+HeadroomPercent, 100+HeadroomPercent, sc.Name)
	if notes := res.Notes(); len(notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString("\n## Charts\n\n`store-memory`, `store-ops`, `replay-p99` and `lost-fraction` (`.png`, `.svg`): each against the load axis, one line per design.\n")
	return b.Bytes()
}

func stepS(sc *scenario.Scenario) float64 { return sc.Step.Seconds() }

// provisionText says what to provision for a candidate at the target.
func provisionText(c *Candidate) string {
	return fmt.Sprintf("provision **%s** of store memory (peak %s, %d bytes) and **%s** store ops/s (peak %s), with %d replicas",
		Bytes(c.AtTarget.Bytes), Bytes(c.AtTarget.PeakBytes), c.AtTarget.PeakBytes, trim(c.AtTarget.OpsPerS), trim(c.AtTarget.PeakOpsPerS), c.Replicas)
}

// cheapestWithStore is the index of the cheapest candidate that meets the
// target and keeps a store, -1 when none does.
func cheapestWithStore(rec *Recommendation) int {
	best := -1
	for i := range rec.Candidates {
		c := &rec.Candidates[i]
		if c.MeetsTarget && c.AtTarget.PeakBytes > 0 && (best < 0 || cheaper(c, &rec.Candidates[best])) {
			best = i
		}
	}
	return best
}

func groupSuffix(g string) string {
	if g == "" {
		return ""
	}
	return " (at " + g + ")"
}

func valueList(a *Axis) string {
	var vs []string
	for _, v := range a.Values {
		vs = append(vs, a.Text(v))
	}
	s := strings.Join(vs, ", ")
	if a.Log {
		s += " (log-spaced)"
	}
	return s
}
