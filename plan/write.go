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
const Schema = 2

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
	Goals           []scenario.Check `json:"goals"`
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
		Engine: "sim", Seed: sc.Seed, Set: nonNil(g.Base), Designs: g.Designs, Goals: rec.Goals,
		HeadroomPercent: HeadroomPercent, Notes: nonNil(res.Notes()),
	}
	if d.Goals == nil {
		d.Goals = []scenario.Check{}
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
// candidate, the goals and the arithmetic.
func Markdown(res *Result, rec *Recommendation) []byte {
	var b bytes.Buffer
	mdHeader(&b, res, rec)
	mdRecommendation(&b, res, rec)
	mdDesigns(&b, res, rec)
	mdGoals(&b, rec)
	sc := res.Grid.Scenario()
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

func mdHeader(b *bytes.Buffer, res *Result, rec *Recommendation) {
	g := res.Grid
	sc := g.Scenario()
	load := &g.Axes[0]
	fmt.Fprintf(b, "# Capacity plan: %s\n\n", sc.Name)
	if sc.Description != "" {
		fmt.Fprintf(b, "%s\n\n", sc.Description)
	}
	fmt.Fprintf(b, "Simulator, seed %d, stormsim %s. ", sc.Seed, report.Version)
	fmt.Fprintf(b, "Load axis: `%s` = %s. ", load.Key, valueList(load))
	for _, a := range g.Axes[1:] {
		fmt.Fprintf(b, "Also swept: `%s` = %s. ", a.Key, valueList(&a))
	}
	if len(g.Base) > 0 {
		fmt.Fprintf(b, "Overrides at every point: `--set %s`. ", strings.Join(g.Base, "` `--set "))
	}
	fmt.Fprintf(b, "Designs: %s. %d grid point(s) × %d design(s) = %d runs.\n\n", strings.Join(g.Designs, ", "), len(g.Points), len(g.Designs), len(res.Rows))
	fmt.Fprintf(b, "Target load: `%s`. Headroom: **+%d%%** over the simulated peak: provision = ceil(peak × %s).\n\n",
		load.Label(rec.Target), HeadroomPercent, trim(float64(100+HeadroomPercent)/100))
	fmt.Fprintf(b, "Judged by service goals, not the scenario's `expect` facts: %s.\n\n", GoalsText(rec.Goals))
}

// GoalsText lists goals for people: "lost_fraction ≤ 0.1%, rate_404 ≤ 0.01".
func GoalsText(goals []scenario.Check) string {
	if len(goals) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range goals {
		parts = append(parts, fmt.Sprintf("%s %s %s", c.Metric, relation(c.Op), Figure(c.Metric, c.Bound)))
	}
	return strings.Join(parts, ", ")
}

func mdRecommendation(b *bytes.Buffer, res *Result, rec *Recommendation) {
	load := &res.Grid.Axes[0]
	b.WriteString("## Recommendation\n\n")
	best := rec.Best()
	if best == nil {
		fmt.Fprintf(b, "**No design meets every goal at `%s`.** What binds each design there (the goal missed by most, or the first goal failed at a smaller load):\n\n", load.Label(rec.Target))
		for _, c := range rec.Candidates {
			fmt.Fprintf(b, "- %s%s: %s\n", c.Design, groupSuffix(c.Group), c.Binding(load.Text))
		}
		b.WriteString("\n")
		return
	}
	fmt.Fprintf(b, "**%s**%s is the cheapest design that meets every goal at `%s`", best.Design, groupSuffix(best.Group), load.Label(rec.Target))
	if best.AtTarget.PeakBytes == 0 && best.AtTarget.PeakOpsPerS == 0 {
		fmt.Fprintf(b, ": it keeps no events, so there is no store to provision; %d replicas.\n\n", best.Replicas)
	} else {
		fmt.Fprintf(b, ": %s.\n\n", provisionText(best))
	}
	b.WriteString("Cheapest means the least store memory to provision at the target, then the fewest replicas, then the fewest store ops/s; a tie goes to the lower recovery latency at p99.")
	// The cheapest design with a store, for a reader who needs resumes.
	if i := cheapestWithStore(rec); best.AtTarget.PeakBytes == 0 && i >= 0 {
		c := &rec.Candidates[i]
		fmt.Fprintf(b, " The cheapest design that keeps events (and so can resume a stream) is **%s**%s: %s.", c.Design, groupSuffix(c.Group), provisionText(c))
	}
	b.WriteString("\n\n")
}

func mdDesigns(b *bytes.Buffer, res *Result, rec *Recommendation) {
	g := res.Grid
	load := &g.Axes[0]
	b.WriteString("## Designs\n\n")
	fmt.Fprintf(b, "Max load is the largest `%s` on the grid such that the design meets every goal at every grid load up to it: a design that fails at a load is counted failing at every larger load.\n\n", load.Key)
	head := []string{"design"}
	if len(g.Axes) > 1 {
		head = append(head, "at")
	}
	hr := "(+" + strconv.Itoa(HeadroomPercent) + "%)"
	head = append(head, "replicas", "max load", "store memory at max load "+hr, "store ops/s at max load "+hr,
		"meets target", "store memory at target "+hr, "store ops/s at target "+hr, "recovery p99 at target (ms)", "binds at target", "first failure")
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
		row = append(row, yesNo(c.MeetsTarget))
		if c.AtTarget == nil {
			row = append(row, "-", "-")
		} else {
			row = append(row, Bytes(c.AtTarget.Bytes), trim(c.AtTarget.OpsPerS))
		}
		row = append(row, RecoveryText(c.RecoveryP99MS), orNone(c.Binding(load.Text)), orNone(c.FirstFailureText(load.Text)))
		for i := range row {
			row[i] = strings.ReplaceAll(row[i], "|", "\\|")
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
}

func mdGoals(b *bytes.Buffer, rec *Recommendation) {
	b.WriteString("\n## Goals\n\n")
	if len(rec.Goals) == 0 {
		b.WriteString("None: every design meets them at every load, and the table above is a sizing table only.\n")
		return
	}
	b.WriteString("The defaults, under the scenario's `[scenario.NAME.goals]` table and `--goal` (docs/planning.md); a row passes when every one holds. A goal marked \"may be empty\" holds where the run has no value for it (nothing to recover).\n\n")
	for _, c := range rec.Goals {
		empty := ""
		if c.AllowEmpty {
			empty = " (may be empty)"
		}
		fmt.Fprintf(b, "- `%s_%s = %s` (%s %s %s)%s\n", c.Metric, c.Op, trim(c.Bound), c.Metric, relation(c.Op), Figure(c.Metric, c.Bound), empty)
	}
}

// FirstFailureText is "at LOAD: goal text", "" when the candidate never
// failed.
func (c *Candidate) FirstFailureText(load func(float64) string) string {
	if c.FirstFailure == nil {
		return ""
	}
	return "at " + load(c.FirstFailure.Load) + ": " + c.FirstFailure.Check
}

// RecoveryText is a recovery latency in whole ms, "n/a" without samples.
func RecoveryText(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return Figure("recovery_latency_ms_p99", *v)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
