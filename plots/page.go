package plots

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"strconv"

	"github.com/stormsim/stormsim/report"
)

// pageData is what the page template shows.
type pageData struct {
	R        *report.Report
	Duration string
	Faults   []faultRow
	Head     []string
	Rows     []designRow
	Recovery []recoveryRow
	FaultIDs []int
	// RecoveryTitle and RecoveryDefinition head and define the recovery
	// table, as summary.md does.
	RecoveryTitle, RecoveryDefinition string
	Charts                            []figure
}

type faultRow struct {
	Index                  int
	Kind, Label, At, Until string
}

type designRow struct {
	Color string // the design's colour, for the swatch
	Cells []string
}

type recoveryRow struct {
	Design string
	Cells  []string
}

type figure struct {
	Name, Title string
	Img         template.HTML
}

// page renders report.html: the run, its fault schedule, the design table
// of summary.md and every PNG chart embedded as a data: URI, so the page
// needs no other file and no network.
func page(r *report.Report, charts []Chart, files map[string][]byte) ([]byte, error) {
	head, rows := r.TableRows() // the same cells as summary.md, by construction
	d := pageData{R: r, Duration: strconv.FormatFloat(r.DurationS, 'g', -1, 64), Head: head,
		RecoveryTitle: report.RecoveryTitle, RecoveryDefinition: report.RecoveryDefinition}
	for i, f := range r.Faults {
		d.Faults = append(d.Faults, faultRow{i, f.Kind, f.Label, g(f.AtS), g(f.UntilS)})
	}
	d.FaultIDs = report.RecoveryFaults(r.Faults)
	for i := range r.Designs {
		des := &r.Designs[i]
		d.Rows = append(d.Rows, designRow{Color: StyleOf(des.Name).Hex(), Cells: rows[i]})
		if len(d.FaultIDs) > 0 {
			d.Recovery = append(d.Recovery, recoveryRow{Design: des.Name, Cells: recoveryCells(des)})
		}
	}
	for _, ch := range charts {
		d.Charts = append(d.Charts, figure{Name: ch.Name, Title: ch.Title, Img: img(ch, files[ch.Name+".png"])})
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("plots: %s: %w", PageName, err)
	}
	// The page links nowhere: a URL in the scenario's description is shown
	// as text, with its colon written as a character reference.
	return bytes.ReplaceAll(b.Bytes(), []byte("://"), []byte("&#58;//")), nil
}

// img is the <img> element of a chart with its PNG inline. It is built
// here rather than in the template because html/template would escape every
// "+" of the base64 text as "&#43;", a third more bytes; the base64 alphabet
// needs no escaping, and the title is escaped here.
func img(ch Chart, png []byte) template.HTML {
	return template.HTML(fmt.Sprintf(`<img src="data:image/png;base64,%s" alt="%s" width="%d" height="%d">`,
		base64.StdEncoding.EncodeToString(png), html.EscapeString(ch.Title), Width, Height))
}

func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// recoveryCells is the time to recover after each fault, as summary.md
// shows it.
func recoveryCells(d *report.Design) []string {
	cells := make([]string, len(d.RecoveryAfterFaultS))
	for i, fr := range d.RecoveryAfterFaultS {
		cells[i] = "never"
		if fr.Seconds != nil {
			cells[i] = g(*fr.Seconds)
		}
	}
	return cells
}

var pageTemplate = template.Must(template.New(PageName).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.R.Scenario}} (seed {{.R.Seed}}) · stormsim</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1240px; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; }
th { background: #f3f3f3; }
table.designs td { text-align: right; font-variant-numeric: tabular-nums; }
table.designs td:nth-child(-n+3) { text-align: left; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.4em; vertical-align: baseline; }
.meta { color: #555; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9rem; }
</style>
</head>
<body>
<h1>{{.R.Scenario}}</h1>
{{with .R.SaturationBanner}}<p class="saturated" style="border: 2px solid #b00; background: #fee; padding: 0.5rem 1rem; font-weight: bold;">{{.}}</p>
{{end}}<p class="description">{{.R.Description}}</p>
<p class="meta">Engine <code>{{.R.Engine}}</code>, seed {{.R.Seed}}, {{.Duration}} s, scenario hash <code>{{.R.ScenarioHash}}</code>, stormsim {{.R.StormsimVersion}}.</p>

<h2>Faults</h2>
{{if .Faults -}}
<table class="faults">
<thead><tr><th>#</th><th>kind</th><th>what</th><th>at (s)</th><th>until (s)</th></tr></thead>
<tbody>
{{range .Faults}}<tr><td>{{.Index}}</td><td>{{.Kind}}</td><td>{{.Label}}</td><td>{{.At}}</td><td>{{.Until}}</td></tr>
{{end}}</tbody>
</table>
{{- else -}}
<p>No faults.</p>
{{- end}}

<h2>Designs</h2>
<table class="designs">
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range $row := .Rows}}<tr>{{range $i, $c := $row.Cells}}<td>{{if eq $i 0}}<span class="swatch" style="background: {{$row.Color}}"></span>{{end}}{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{if .Recovery}}
<h2>{{.RecoveryTitle}}</h2>
<p>{{.RecoveryDefinition}}</p>
<table class="recovery">
<thead><tr><th>design</th>{{range .FaultIDs}}<th>fault {{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Recovery}}<tr><td>{{.Design}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}
<h2>Charts</h2>
<p>Each design keeps its colour and dash pattern on every chart. Shaded bands are faults that last; dashed grey vertical lines are instant faults.</p>
{{range .Charts}}<figure id="{{.Name}}">
{{.Img}}
<figcaption>{{.Title}} ({{.Name}}.png, {{.Name}}.svg)</figcaption>
</figure>
{{end}}</body>
</html>
`))
