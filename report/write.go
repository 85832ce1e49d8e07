package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// JSON encodes r as report.json: indented, keys in struct order, so the same
// report gives the same bytes.
func (r *Report) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return b.Bytes(), nil
}

// Read loads a report.json, or the report.json inside a run folder, and
// checks that it is one this version understands.
func Read(path string) (*Report, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "report.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks report.json bytes; name is used in messages.
func Parse(name string, data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("report: %s: not a report.json: %w", name, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("report: %s: schema %d is not supported (this stormsim reads schema %d)", name, r.Schema, Schema)
	}
	var errs []error
	for _, d := range r.Designs {
		names, cols := d.Series.Columns()
		for i, c := range cols {
			if len(c) != len(cols[0]) {
				errs = append(errs, fmt.Errorf("report: %s: designs[%s].series.%s has %d points, %s has %d", name, d.Name, names[i], len(c), names[0], len(cols[0])))
			}
		}
		for _, l := range []struct {
			n string
			h Histogram
		}{{"replay_latency_ms", d.ReplayLatencyMS.Histogram}, {"recovery_latency_ms", d.RecoveryLatencyMS.Histogram}} {
			if len(l.h.LeMS) != len(l.h.Counts) {
				errs = append(errs, fmt.Errorf("report: %s: designs[%s].%s.histogram has %d bounds and %d counts", name, d.Name, l.n, len(l.h.LeMS), len(l.h.Counts)))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &r, nil
}

func fmtOpt(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

func pct(n, d int64) string {
	if d == 0 {
		return "0.0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

// TableRows is the table of designs, header and rows, exactly as the
// terminal, summary.md and report.html show it.
func (r *Report) TableRows() ([]string, [][]string) {
	head := []string{"design", "lb", "profile", "calls", "done", "failed", "reissued", "events", "lost", "lost%", "replayed", "unproduced", "404s", "rate_404", "resumes", "reconnects", "replay p50 ms", "replay p99 ms", "recovery p50 ms", "store peak"}
	var rows [][]string
	for _, d := range r.Designs {
		t := d.Totals
		count := func(key string, v int64) string {
			if d.IsUnknown(key) {
				return "n/a"
			}
			return strconv.FormatInt(v, 10)
		}
		lostPct := pct(t.EventsLost, t.EventsExpected)
		if d.IsUnknown("events_lost") || d.IsUnknown("events_expected") {
			lostPct = "n/a"
		}
		storePeak := humanBytes(t.StorePeakBytes)
		if d.IsUnknown("store_peak_bytes") {
			storePeak = "n/a"
		}
		rows = append(rows, []string{
			d.Label(), d.LB, d.Profile,
			strconv.FormatInt(t.Calls, 10), strconv.FormatInt(t.CallsCompleted, 10), strconv.FormatInt(t.CallsFailed, 10), strconv.FormatInt(t.CallsReissued, 10),
			count("events_expected", t.EventsExpected), count("events_lost", t.EventsLost), lostPct,
			count("events_replayed", t.EventsReplayed), count("events_unproduced", t.EventsUnproduced),
			strconv.FormatInt(t.HTTP404, 10), strconv.FormatFloat(t.Rate404, 'f', 3, 64),
			strconv.FormatInt(t.Resumes, 10), strconv.FormatInt(t.Reconnects, 10),
			fmtOpt(d.ReplayLatencyMS.P50), fmtOpt(d.ReplayLatencyMS.P99), fmtOpt(d.RecoveryLatencyMS.P50),
			storePeak,
		})
	}
	return head, rows
}

func humanBytes(b int64) string {
	switch {
	case b == 0:
		return "-"
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// WriteTable prints the design table for a terminal.
func (r *Report) WriteTable(w io.Writer) error {
	if b := r.SaturationBanner(); b != "" {
		fmt.Fprintf(w, "%s\n\n", b)
	}
	fmt.Fprintf(w, "%s (seed %d, %s engine)\n", r.Scenario, r.Seed, r.Engine)
	head, rows := r.TableRows()
	return writeTab(w, head, rows)
}

// writeTab prints a table right-aligned in columns.
func writeTab(w io.Writer, head []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// Markdown renders summary.md.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", r.Scenario)
	if s := r.InterruptedBanner(); s != "" {
		fmt.Fprintf(&b, "> **%s**\n\n", s)
	}
	if s := r.SaturationBanner(); s != "" {
		fmt.Fprintf(&b, "> **%s**\n\n", s)
	}
	fmt.Fprintf(&b, "%s\n\n", r.Description)
	fmt.Fprintf(&b, "Engine `%s`, seed %d, %g s, scenario hash `%s`, stormsim %s.\n\n", r.Engine, r.Seed, r.DurationS, r.ScenarioHash, r.StormsimVersion)
	if len(r.Faults) > 0 {
		b.WriteString("## Faults\n\n| # | kind | what | at (s) | until (s) |\n|---|---|---|---|---|\n")
		for i, f := range r.Faults {
			fmt.Fprintf(&b, "| %d | %s | %s | %g | %g |\n", i, f.Kind, f.Label, f.AtS, f.UntilS)
		}
		b.WriteString("\n")
	}
	if sh := r.Shards; sh != nil {
		fmt.Fprintf(&b, "## Shards\n\n%d shards from %s (a shard more than %g ms late is marked late); merged by stormsim merge.\n\n", sh.Count, sh.StartAt.Format(time.RFC3339Nano), sh.StartToleranceMS)
		b.WriteString("| shard | host | pid | clients | start offset (ms) | late | negative latencies | faults applied |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range sh.Shards {
			fmt.Fprintf(&b, "| %d | %s | %d | %d | %.1f | %v | %d | %d |\n", s.Index, s.Host, s.PID, s.Clients, s.StartOffsetMS, s.Late, s.NegativeLatencies, len(s.FaultsApplied))
		}
		b.WriteString("\n")
	}
	if o := r.OverSeeds; o != nil {
		fmt.Fprintf(&b, "## Over %d seeds (%s)\n\nThe mean of each metric ± the half-width of its 95%% interval; every seed's value is in report.json's over_seeds.\n\n", len(o.Seeds), seedRange(o.Seeds))
		head, rows := o.SeedTableRows()
		mdTable(&b, head, rows)
		if len(o.Orderings) > 0 {
			b.WriteString("\n### Orderings\n\n")
			for _, or := range o.Orderings {
				fmt.Fprintf(&b, "- %s\n", or)
			}
		}
		fmt.Fprintf(&b, "\n## Designs at seed %d\n\n", r.Seed)
	} else {
		b.WriteString("## Designs\n\n")
	}
	head, rows := r.TableRows()
	mdTable(&b, head, rows)
	notes := false
	for _, n := range r.Notes {
		if !notes {
			b.WriteString("\n## Notes\n\n")
			notes = true
		}
		fmt.Fprintf(&b, "- %s\n", n)
	}
	for _, n := range r.DesignNotes() {
		if !notes {
			b.WriteString("\n## Notes\n\n")
			notes = true
		}
		fmt.Fprintf(&b, "- %s\n", n)
	}
	r.listenMarkdown(&b)
	if ids := RecoveryFaults(r.Faults); len(ids) > 0 {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| design |", RecoveryTitle, RecoveryDefinition)
		for _, i := range ids {
			fmt.Fprintf(&b, " fault %d |", i)
		}
		b.WriteString("\n|---|")
		for range ids {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, d := range r.Designs {
			b.WriteString("| " + d.Name + " |")
			for _, fr := range d.RecoveryAfterFaultS {
				if fr.Seconds == nil {
					b.WriteString(" never |")
				} else {
					fmt.Fprintf(&b, " %g |", *fr.Seconds)
				}
			}
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// DesignNotes are the designs' notes as summary.md lists them, each text
// once, after the designs that share it ("a, b: note", or "every design:
// note" when all of several do), in the order they first appear: a note
// every design has, such as a metric unknown to the run, is one line.
func (r *Report) DesignNotes() []string {
	var texts []string
	who := map[string][]string{}
	for _, d := range r.Designs {
		for _, n := range d.Notes {
			if len(who[n]) == 0 {
				texts = append(texts, n)
			}
			if !slices.Contains(who[n], d.Name) {
				who[n] = append(who[n], d.Name)
			}
		}
	}
	out := make([]string, 0, len(texts))
	for _, n := range texts {
		names := strings.Join(who[n], ", ")
		if len(r.Designs) > 1 && len(who[n]) == len(r.Designs) {
			names = "every design"
		}
		out = append(out, names+": "+n)
	}
	return out
}

// SeriesCSV renders series.csv: one row per design and step.
func (r *Report) SeriesCSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if len(r.Designs) == 0 {
		w.Flush()
		return b.Bytes(), nil
	}
	var names []string // the widest design's columns: a column a design lacks reads 0
	for _, d := range r.Designs {
		if n, _ := d.Series.Columns(); len(n) > len(names) {
			names = n
		}
	}
	if err := w.Write(append([]string{"design", "t_s"}, names...)); err != nil {
		return nil, err
	}
	for _, d := range r.Designs {
		_, cols := d.Series.Columns()
		for i := range cols[0] {
			row := []string{d.Name, strconv.FormatFloat(float64(i)*d.Series.StepS, 'f', -1, 64)}
			for j := range names {
				v := int64(0)
				if j < len(cols) {
					v = cols[j][i]
				}
				row = append(row, strconv.FormatInt(v, 10))
			}
			if err := w.Write(row); err != nil {
				return nil, err
			}
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// Files renders every file of a run folder, by name.
func (r *Report) Files() (map[string][]byte, error) {
	j, err := r.JSON()
	if err != nil {
		return nil, err
	}
	c, err := r.SeriesCSV()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"report.json": j, "summary.md": r.Markdown(), "series.csv": c}, nil
}

// RunDir is the folder name of a run: <UTC time>-seed<N>.
func RunDir(now time.Time, seed uint64) string {
	return fmt.Sprintf("%s-seed%d", now.UTC().Format("20060102T150405Z"), seed)
}

// WriteRun writes files into dir/<run> atomically: they are written into a
// hidden temporary folder that is renamed into place only when complete, so
// an interrupted run leaves nothing half-written. It refreshes dir/latest and
// returns the run folder. extra may add more files (charts, pages).
func WriteRun(dir, run string, files map[string][]byte) (string, error) {
	return WriteRunContext(context.Background(), dir, run, files)
}

// WriteRunContext is WriteRun stopped when ctx ends (an interrupted run's
// write has a deadline): the files are written a chunk at a time, and
// when ctx ends before the folder is renamed into place, the hidden
// folder is removed and nothing is left.
func WriteRunContext(ctx context.Context, dir, run string, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	tmp, err := stageDir(ctx, dir, files)
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	final := filepath.Join(dir, run)
	for i := 2; ; i++ { // two runs in the same second get distinct folders
		if _, err := os.Stat(final); errors.Is(err, os.ErrNotExist) {
			break
		}
		final = filepath.Join(dir, fmt.Sprintf("%s-%d", run, i))
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("report: writing %s stopped: %w", final, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	ok = true
	latest := filepath.Join(dir, "latest")
	tmpLink := latest + ".tmp"
	os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(final), tmpLink); err == nil {
		if err := os.Rename(tmpLink, latest); err != nil {
			os.Remove(tmpLink)
		}
	}
	return final, nil
}

// StageDir writes files (names may hold subfolders) into a new hidden
// folder under dir and returns it; the caller renames it into place, so a
// reader never sees a half-written folder.
func StageDir(dir string, files map[string][]byte) (string, error) {
	return stageDir(context.Background(), dir, files)
}

// stageDir is StageDir stopped when ctx ends, with nothing left.
func stageDir(ctx context.Context, dir string, files map[string][]byte) (string, error) {
	tmp, err := os.MkdirTemp(dir, ".partial-")
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("report: %w", err)
		}
		if err := writeFileContext(ctx, p, files[name]); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("report: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("report: %w", err)
	}
	return tmp, nil
}

// writeFileContext writes data to a new file p a MiB at a time, and stops
// when ctx ends.
func writeFileContext(ctx context.Context, p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			f.Close()
			return fmt.Errorf("writing %s stopped: %w", filepath.Base(p), err)
		}
		n := min(len(data), 1<<20)
		if _, err := f.Write(data[:n]); err != nil {
			f.Close()
			return err
		}
		if data = data[n:]; len(data) == 0 {
			return f.Close()
		}
	}
}

// mdTable writes a Markdown table.
func mdTable(b *bytes.Buffer, head []string, rows [][]string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
}
