package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/report"
)

// Figures extracts a section's figures from its command's standard output
// (and, for agree, from the agreement files the runs wrote).
func Figures(name string, out []byte, took time.Duration, agreementFiles []string) (string, error) {
	switch {
	case strings.HasPrefix(name, "bench"):
		return benchFigures(out)
	case name == "agree":
		return agreeFigures(agreementFiles)
	case name == "orderings":
		return orderingFigures(out)
	case name == "interop":
		return interopFigures(out), nil
	case name == "test-time":
		return fmt.Sprintf("`make test` passed in **%s** of wall time.\n", took.Round(time.Second)), nil
	case name == "nightly":
		return nightlyFigures(out, took), nil
	default:
		return verbatim(out), nil
	}
}

// orderingFigures keeps the orderings a run over seeds printed, one claim
// a line ("metric: a below b in K of N seeds").
func orderingFigures(out []byte) (string, error) {
	var b strings.Builder
	in := false
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "orderings over "):
			in = true
		case in && strings.HasPrefix(line, "  "):
			b.WriteString("- " + strings.TrimSpace(line) + "\n")
		case in:
			in = false
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("the run printed no orderings")
	}
	return b.String(), nil
}

// verbatim keeps a command's own summary as it printed it.
// interopFigures keeps the matrix's tables as make interop printed them,
// its headings one level down, without the title.
func interopFigures(out []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(out)) {
		switch {
		case strings.HasPrefix(line, "# "):
		case strings.HasPrefix(line, "## "):
			b.WriteString("#" + line)
		default:
			b.WriteString(line)
		}
	}
	return strings.TrimSpace(b.String()) + "\n"
}

func verbatim(out []byte) string {
	return "```\n" + strings.TrimRight(string(out), "\n") + "\n```\n"
}

// metric is one benchmark metric over the runs of -count.
type metric struct {
	bench, unit string
	values      []float64
}

// benchFigures reads `go test -bench` output: a table of every metric's
// median and range over the runs, then whatever else the benchmarks
// printed.
func benchFigures(out []byte) (string, error) {
	var ms []*metric
	find := func(bench, unit string) *metric {
		for _, m := range ms {
			if m.bench == bench && m.unit == unit {
				return m
			}
		}
		m := &metric{bench: bench, unit: unit}
		ms = append(ms, m)
		return m
	}
	var other []string
	pending := "" // the benchmark whose output came between its name and its result
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		f := strings.Fields(line)
		bench, res := "", f
		switch {
		case len(f) >= 4 && strings.HasPrefix(f[0], "Benchmark") && isInt(f[1]):
			bench, res = benchName(f[0]), f[1:]
		case len(f) >= 3 && pending != "" && isInt(f[0]) && f[2] == "ns/op":
			// A benchmark that prints puts its name, its output, then its
			// result on a line of its own.
			bench = pending
		case len(f) >= 1 && strings.HasPrefix(f[0], "Benchmark"):
			pending = benchName(f[0])
			line = strings.TrimSpace(strings.TrimPrefix(line, f[0]))
		}
		if bench != "" {
			pending = ""
			for i := 1; i+1 < len(res); i += 2 {
				v, err := strconv.ParseFloat(res[i], 64)
				if err != nil {
					return "", fmt.Errorf("%q: %q is not a number", line, res[i])
				}
				m := find(bench, res[i+1])
				m.values = append(m.values, v)
			}
			continue
		}
		if line == "" || line == "PASS" || strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "ok\t") ||
			strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "goarch:") || strings.HasPrefix(line, "pkg:") || strings.HasPrefix(line, "cpu:") {
			continue
		}
		other = append(other, line)
	}
	if len(ms) == 0 {
		return "", fmt.Errorf("the command printed no benchmark result")
	}
	var b strings.Builder
	b.WriteString("| benchmark | metric | median | min–max | runs |\n|---|---|---|---|---|\n")
	for _, m := range ms {
		s := slices.Clone(m.values)
		slices.Sort(s)
		med := s[len(s)/2]
		if len(s)%2 == 0 {
			med = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s–%s | %d |\n", m.bench, m.unit, num(med), num(s[0]), num(s[len(s)-1]), len(s))
	}
	if len(other) > 0 {
		b.WriteString("\nWhat the benchmarks printed:\n\n```\n" + strings.Join(other, "\n") + "\n```\n")
	}
	return b.String(), nil
}

// benchName is a benchmark's name without its -GOMAXPROCS suffix.
func benchName(s string) string {
	if i := strings.LastIndex(s, "-"); i > 0 && isInt(s[i+1:]) {
		return s[:i]
	}
	return s
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// num prints a figure with three significant digits, or whole when larger.
func num(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// ratioMetrics are the agreement rows compared as live ÷ sim.
func ratioMetric(m string) bool {
	return strings.HasPrefix(m, "replay_") || strings.HasPrefix(m, "store_peak")
}

// maxInconclusive is the most inconclusive rows make agree accepts, as a
// share of the rows that agree: a check whose rows are too small to judge
// is no check, so its runs must be sized for it.
const maxInconclusive = 0.10

// agreeFigures summarises each agreement.json: its verdicts, the largest
// difference as a share of its tolerance, and the ranges of the live ÷ sim
// ratios; then the line over every run, "N agree, M disagree, K
// inconclusive". It fails when the runs left more than maxInconclusive
// of their agreeing rows' number inconclusive.
func agreeFigures(files []string) (string, error) {
	if len(files) == 0 {
		return "", fmt.Errorf("no -agreement file given")
	}
	var b strings.Builder
	b.WriteString("| scenario | repeats | rows | agree | disagree | inconclusive | not compared | largest difference, of its tolerance | replay latency, live ÷ sim | store peak, live ÷ sim | host: timers, producers, scheduler p99 ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var total agree.Agreement
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var a agree.Agreement
		if err := json.Unmarshal(data, &a); err != nil {
			return "", fmt.Errorf("%s: %v", f, err)
		}
		largest, where := -1.0, "n/a"
		var replay, store []float64
		for _, r := range a.Rows {
			if r.Diff == nil {
				continue
			}
			switch {
			case strings.HasPrefix(r.Metric, "replay_"):
				replay = append(replay, *r.Diff)
			case strings.HasPrefix(r.Metric, "store_peak"):
				store = append(store, *r.Diff)
			}
			if ratioMetric(r.Metric) || r.Tolerance <= 0 {
				continue
			}
			if share := math.Abs(*r.Diff) / r.Tolerance; share > largest {
				largest = share
				where = fmt.Sprintf("%s `%s`: sim %s, live %s (n = %d): %.2f", r.Design, r.Metric, opt(r.Sim), opt(r.Live), r.N, share)
			}
		}
		reps := max(a.Repeats, 1)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s |\n", a.Scenario, reps, len(a.Rows), a.Agreed, a.Failed, a.Inconclusive, a.NotCompared, where, span(replay), span(store),
			hostFigures(filepath.Join(filepath.Dir(f), "live", "report.json")))
		total.Agreed += a.Agreed
		total.Failed += a.Failed
		total.Inconclusive += a.Inconclusive
		total.NotCompared += a.NotCompared
	}
	fmt.Fprintf(&b, "\nOver every run: **%s**.\n", total.Summary())
	if float64(total.Inconclusive) > maxInconclusive*float64(total.Agreed) {
		return "", fmt.Errorf("%s: more than %.0f%% of %d are inconclusive; size the runs for a smaller standard error", total.Summary(), 100*maxInconclusive, total.Agreed)
	}
	return b.String(), nil
}

// hostFigures is the host block of the live report beside an
// agreement.json: the p99 lateness of timers, producers and the scheduler,
// and the verdict when saturated.
func hostFigures(path string) string {
	r, err := report.Read(path)
	if err != nil || r.Host == nil {
		return "n/a"
	}
	h := r.Host
	s := fmt.Sprintf("%s, %s, %s (load %s)", num(h.TimerLatenessMS.P99), num(h.ProducerLatenessMS.P99), num(h.SchedLatencyMS.P99), num(h.LoadAverage))
	if h.Saturated {
		s += " **" + report.VerdictSaturated + "**"
	}
	return s
}

func opt(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return num(*v)
}

func span(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	return fmt.Sprintf("%.2f–%.2f", lo, hi)
}

// nightlyFigures is the nightly run's wall time, then the summary lines of
// its two parts: stormsim nightly (every scenario, simulated or live) and
// the own-server storm of examples/ci/storm.sh.
func nightlyFigures(out []byte, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`make nightly` passed in **%s** of wall time.\n\n", took.Round(time.Second))
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "nightly: ") || strings.HasPrefix(line, "storm.sh: ") || strings.HasPrefix(line, "  note: ") ||
			strings.HasPrefix(line, "  live: ") {
			b.WriteString("- " + strings.TrimSpace(line) + "\n")
		}
	}
	return b.String()
}
