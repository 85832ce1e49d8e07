package plan

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// File names of a tipping search's folder.
const (
	TippingJSONName     = "tipping.json"
	TippingCSVName      = "tipping.csv"
	TippingMarkdownName = "tipping.md"
)

// TippingSchema is the version of tipping.json.
const TippingSchema = 1

// TippingDoc is tipping.json.
type TippingDoc struct {
	Schema          int                `json:"schema"`
	StormsimVersion string             `json:"stormsim_version"`
	Scenario        string             `json:"scenario"`
	Description     string             `json:"description"`
	Engine          string             `json:"engine"`
	Set             []string           `json:"set"`
	Key             string             `json:"key"`
	Unit            string             `json:"unit"`
	Lo              float64            `json:"lo"`
	Hi              float64            `json:"hi"`
	Resolution      float64            `json:"resolution"`
	Seeds           []uint64           `json:"seeds"`
	Frequency       float64            `json:"recover_frequency"`
	Goal            scenario.Check     `json:"goal"`
	Reference       string             `json:"reference"`
	Furthest        []string           `json:"furthest"`
	FurthestText    string             `json:"furthest_text"`
	Designs         []TippingDocDesign `json:"designs"`
	Notes           []string           `json:"notes"`
}

// TippingDocDesign is one design's search in tipping.json.
type TippingDocDesign struct {
	Design  string  `json:"design"`
	Outcome Outcome `json:"outcome"`
	// TippingLoad is the highest recovered load, null when below LO;
	// StuckLoad the lowest not recovered, null when past HI.
	TippingLoad *float64          `json:"tipping_load"`
	StuckLoad   *float64          `json:"stuck_load"`
	Probes      []TippingDocProbe `json:"probes"`
	Inversions  []string          `json:"inversions"`
}

// TippingDocProbe is one probe; a recovery time of +Inf (stuck) is
// written as null with stuck true, as JSON holds no infinity.
type TippingDocProbe struct {
	Load      float64       `json:"load"`
	Round     int           `json:"round"`
	Met       int           `json:"met"`
	Stuck     int           `json:"stuck"`
	Frequency float64       `json:"frequency"`
	Recovered bool          `json:"recovered"`
	MedianS   *float64      `json:"median_recovered_s"`
	Seeds     []TippingSeed `json:"seeds"`
}

// TippingSeed is one seed's run at a probe.
type TippingSeed struct {
	Seed       uint64   `json:"seed"`
	RecoveredS *float64 `json:"recovered_s"`
	Stuck      bool     `json:"stuck"`
}

func finiteOrNil(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// NewTippingDoc assembles tipping.json's content.
func NewTippingDoc(t *Tipping) *TippingDoc {
	sc := t.Scenario
	d := &TippingDoc{Schema: TippingSchema, StormsimVersion: report.Version, Scenario: sc.Name, Description: sc.Description,
		Engine: "sim", Set: nonNil(t.Base), Key: t.Range.Axis.Key, Unit: t.Range.Axis.Kind.Unit(), Lo: t.Range.Lo, Hi: t.Range.Hi,
		Resolution: t.Resolution, Seeds: t.Seeds, Frequency: t.Frequency, Goal: t.Goal, Reference: t.Reference().Design,
		Furthest: []string{}, FurthestText: t.FurthestText(), Notes: nonNil(t.Notes)}
	for _, f := range t.Furthest() {
		d.Furthest = append(d.Furthest, f.Design)
	}
	for i := range t.Designs {
		td := &t.Designs[i]
		dd := TippingDocDesign{Design: td.Design, Outcome: td.Outcome, Inversions: nonNil(td.Inversions)}
		if td.Recovered >= 0 {
			dd.TippingLoad = &td.Probes[td.Recovered].Load
		}
		if td.Stuck >= 0 {
			dd.StuckLoad = &td.Probes[td.Stuck].Load
		}
		for pi := range td.Probes {
			p := &td.Probes[pi]
			dp := TippingDocProbe{Load: p.Load, Round: p.Round, Met: p.Met, Stuck: p.Stuck, Frequency: p.Frequency,
				Recovered: p.Recovered, MedianS: finiteOrNil(p.MedianS())}
			for k, v := range p.RecoveredS {
				s := TippingSeed{Seed: t.Seeds[k]}
				if v != nil {
					s.RecoveredS, s.Stuck = finiteOrNil(*v), math.IsInf(*v, 1)
				}
				dp.Seeds = append(dp.Seeds, s)
			}
			dd.Probes = append(dd.Probes, dp)
		}
		d.Designs = append(d.Designs, dd)
	}
	return d
}

// TippingFiles renders tipping.json, tipping.csv and tipping.md. The
// same search gives the same bytes.
func TippingFiles(t *Tipping) (map[string][]byte, error) {
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetIndent("", " ")
	if err := enc.Encode(NewTippingDoc(t)); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	c, err := TippingCSV(t)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{TippingJSONName: j.Bytes(), TippingCSVName: c, TippingMarkdownName: TippingMarkdown(t)}, nil
}

// TippingCSVHeader is the header of tipping.csv after the design and the
// load key.
var TippingCSVHeader = []string{"round", "seeds", "met", "frequency", "recovered", "stuck", "median_recovered_s", "recovered_s_by_seed"}

// SecondsText is a recovery time as tipping.csv and tipping.md print it:
// whole seconds as the report holds them, "inf" when stuck, "" for none.
func SecondsText(v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case math.IsInf(v, 1):
		return "inf"
	}
	return num(v)
}

// TippingCSV renders tipping.csv: one row per design and probe, in load
// order: the recovery time against load.
func TippingCSV(t *Tipping) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	ax := &t.Range.Axis
	if err := w.Write(append([]string{"design", ax.Key}, TippingCSVHeader...)); err != nil {
		return nil, err
	}
	for _, d := range t.Designs {
		for _, p := range d.Probes {
			var by []string
			for _, v := range p.RecoveredS {
				s := ""
				if v != nil {
					s = SecondsText(*v)
				}
				by = append(by, s)
			}
			row := []string{d.Design, ax.Text(p.Load), strconv.Itoa(p.Round), strconv.Itoa(len(p.RecoveredS)), strconv.Itoa(p.Met),
				num(p.Frequency), strconv.FormatBool(p.Recovered), strconv.Itoa(p.Stuck), SecondsText(p.MedianS()), strings.Join(by, ";")}
			if err := w.Write(row); err != nil {
				return nil, err
			}
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// TippingMarkdown renders tipping.md: each design's tipping load, the
// mitigation that moves it furthest, the curve, and what the search
// assumed.
func TippingMarkdown(t *Tipping) []byte {
	var b bytes.Buffer
	sc := t.Scenario
	ax := &t.Range.Axis
	fmt.Fprintf(&b, "# Tipping load: %s\n\n", sc.Name)
	if sc.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", sc.Description)
	}
	fmt.Fprintf(&b, "Simulator, stormsim %s. The tipping load is the largest `%s` in %s..%s at which the scenario's trigger leaves the design recovered: at least %s of its %d seeds (%s) meet the goal %s. Bisection to a resolution of %s.",
		report.Version, ax.Key, ax.Text(t.Range.Lo), ax.Text(t.Range.Hi), num(t.Frequency), len(t.Seeds), seedsText(t.Seeds), GoalsText([]scenario.Check{t.Goal}), ax.Text(t.Resolution))
	if len(t.Base) > 0 {
		fmt.Fprintf(&b, " Overrides at every probe: `--set %s`.", strings.Join(t.Base, "` `--set "))
	}
	b.WriteString("\n\n## Tipping loads\n\n| design | tipping load | stuck at | probes |\n|---|---|---|---|\n")
	for i := range t.Designs {
		d := &t.Designs[i]
		stuck := "-"
		if d.Stuck >= 0 {
			p := &d.Probes[d.Stuck]
			stuck = ax.Text(p.Load) + " (" + p.FrequencyText() + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", d.Design, t.TippingText(d), stuck, len(d.Probes))
	}
	if f := t.FurthestText(); f != "" {
		fmt.Fprintf(&b, "\nMoves the boundary furthest above the reference (the first design, %s): %s.\n", t.Reference().Design, f)
	}
	b.WriteString("\n## Recovery time against load\n\nEvery probe: the seeds that met the goal, those that never recovered (stuck), and the median recovery time over the seeds (∞ when at least half stuck).\n\n")
	fmt.Fprintf(&b, "| design | %s | met | recovered | stuck | median recovery (s) |\n|---|---|---|---|---|---|\n", ax.Key)
	for _, d := range t.Designs {
		for _, p := range d.Probes {
			med := SecondsText(p.MedianS())
			if med == "inf" {
				med = "∞"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", d.Design, ax.Text(p.Load), p.FrequencyText(), yesNo(p.Recovered), p.Stuck, orNone(med))
		}
	}
	b.WriteString("\n## Monotonicity\n\nBisection assumes that a design which recovers at a load recovers at every smaller one.")
	var inv []string
	for _, d := range t.Designs {
		inv = append(inv, d.Inversions...)
	}
	if len(inv) == 0 {
		b.WriteString(" No probe contradicted it.\n")
	} else {
		b.WriteString(" These probes contradict it, so a boundary near them is less certain than the resolution says:\n\n")
		for _, s := range inv {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString("\n## Charts\n\n`tipping` (`.png`, `.svg`): the median recovery time and the share of seeds that met the goal, against the load, one line per design.\n")
	return b.Bytes()
}

// seedsText is "42-46", or the list when not consecutive.
func seedsText(seeds []uint64) string {
	if len(seeds) == 1 {
		return "seed " + strconv.FormatUint(seeds[0], 10)
	}
	return "seeds " + strconv.FormatUint(seeds[0], 10) + "-" + strconv.FormatUint(seeds[len(seeds)-1], 10)
}
