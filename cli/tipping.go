package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stormsim/stormsim/plan"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// tippingFlags are plan's flags for a tipping-load search.
type tippingFlags struct {
	spec       string
	seeds      int
	frequency  float64
	resolution string
}

const tippingAbout = `
--tipping KEY=LO..HI finds, per design, the tipping load instead of sweeping a grid: the largest KEY
(e.g. workload.arrival_rate) in LO..HI at which the scenario's trigger still leaves the design
recovered, by bisection. A probe runs --seeds seeds (the scenario's seed and the next ones) and is
recovered when at least --recover-frequency of them meet the recovery goal goodput_recovered_s_max
(60 s unless the scenario's goals table or --goal sets it). It stops once the bracket is no wider
than --resolution (in KEY's units; default a twentieth of the range). It writes tipping.json,
tipping.csv (every probe: load, seeds met, stuck, median recovery time), tipping.md and the chart
tipping (PNG and SVG) to OUT/plan/<scenario>/<UTC time>/, and names the design that moves the
boundary furthest above the first design. The request workload only; not with --sweep or --size-for.`

// define declares the tipping flags on fs.
func (f *tippingFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.spec, "tipping", "", "find each design's tipping load by bisection (`KEY=LO..HI`, e.g. workload.arrival_rate=40..300)")
	fs.IntVar(&f.seeds, "seeds", plan.DefaultTippingSeeds, "--tipping: seeds per probe (`N`: the scenario's seed and the next N-1)")
	fs.Float64Var(&f.frequency, "recover-frequency", plan.DefaultTippingFrequency, "--tipping: the share of a probe's seeds that must meet the recovery goal (`F` in (0, 1])")
	fs.StringVar(&f.resolution, "resolution", "", "--tipping: stop once the bracket is no wider (`W` in KEY's units, e.g. 5 or 2s; default (HI-LO)/20)")
}

// check refuses the tipping flags without --tipping, and --tipping with
// a grid's flags.
func (f *tippingFlags) check(fs *flag.FlagSet) error {
	if f.spec == "" {
		for _, n := range []string{"seeds", "recover-frequency", "resolution"} {
			if visited(fs, n) {
				return usagef("plan: --%s applies to --tipping only", n)
			}
		}
		return nil
	}
	for _, n := range []string{"sweep", "size-for"} {
		if visited(fs, n) {
			return usagef("plan: --%s and --tipping do not go together: --tipping bisects its own load (drop --%s)", n, n)
		}
	}
	return nil
}

// options reads the tipping flags for range r.
func (f *tippingFlags) options(r plan.TippingRange) (*plan.TippingOptions, error) {
	o := &plan.TippingOptions{Seeds: f.seeds, Frequency: f.frequency}
	if f.resolution != "" {
		v, err := plan.ParseValue(r.Axis.Key, f.resolution)
		if err != nil || v <= 0 {
			if err == nil {
				err = fmt.Errorf("want a width above 0")
			}
			return nil, usagef("plan: --resolution %s: %v", f.resolution, err)
		}
		o.Resolution = v
	}
	return o, nil
}

// runTipping runs a tipping-load search and writes its folder.
func (f *planFlags) runTipping(ctx context.Context, env *Env, name string, designs []string) error {
	r, err := plan.ParseTipping(f.tip.spec)
	if err != nil {
		return usageError{err}
	}
	opts, err := f.tip.options(r)
	if err != nil {
		return err
	}
	load, base, err := f.loader(name)
	if err != nil {
		return err
	}
	if opts.Goals, err = f.goalChecks(); err != nil {
		return err
	}
	opts.Base, opts.Designs, opts.Jobs = base, designs, f.jobs
	s, err := plan.NewTippingSearch(load, r, opts)
	if err != nil {
		return usageError{err}
	}
	if err := probeOut(filepath.Join(f.out, "plan", name)); err != nil {
		return err
	}
	progress, doneProgress := newProgress(env, f.quiet, s.Work(), fmt.Sprintf("plan %s: tipping load, at most %d runs", name, s.Runs()))
	defer doneProgress()
	s.SetProgress(progress)
	t, err := s.Run(ctx)
	doneProgress()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	files, err := tippingFiles(t)
	if err != nil {
		return err
	}
	dir, err := report.WriteRun(filepath.Join(f.out, "plan", name), time.Now().UTC().Format("20060102T150405Z"), files)
	if err != nil {
		return err
	}
	if !f.quiet {
		writeTippingSummary(env, t)
		fmt.Fprintf(env.Stdout, "\nplan: %s\n", filepath.Join(dir, plan.TippingMarkdownName))
	}
	return nil
}

// tippingFiles renders the search's files and its chart.
func tippingFiles(t *plan.Tipping) (map[string][]byte, error) {
	files, err := plan.TippingFiles(t)
	if err != nil {
		return nil, err
	}
	d := &plots.TippingData{
		Title:     fmt.Sprintf("%s (%d seeds from %d, %s)", t.Scenario.Name, len(t.Seeds), t.Seeds[0], t.Range.Axis.Key),
		LoadLabel: t.Range.Axis.Key, GoalS: t.Goal.Bound, Frequency: t.Frequency,
	}
	for _, td := range t.Designs {
		d.Designs = append(d.Designs, td.Design)
		for _, p := range td.Probes {
			d.Points = append(d.Points, plots.TippingPoint{Design: td.Design, Load: p.Load, MedianS: p.MedianS(), Frequency: p.Frequency})
		}
	}
	charts, err := plots.RenderTipping(d)
	if err != nil {
		return nil, err
	}
	for n, b := range charts {
		files[n] = b
	}
	return files, nil
}

// writeTippingSummary prints each design's tipping load and the design
// that moves the boundary furthest.
func writeTippingSummary(env *Env, t *plan.Tipping) {
	ax := &t.Range.Axis
	fmt.Fprintf(env.Stdout, "%s tipping load of %s in %s..%s: %d seeds per probe (from %d), recovered when ≥ %s of them meet %s, resolution %s\n",
		t.Scenario.Name, ax.Key, ax.Text(t.Range.Lo), ax.Text(t.Range.Hi), len(t.Seeds), t.Seeds[0], strconv.FormatFloat(t.Frequency, 'f', -1, 64),
		plan.GoalsText([]scenario.Check{t.Goal}), ax.Text(t.Resolution))
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\ttipping load\tmet\tstuck at\tmet\tprobes\tmedian recovery s by load\t")
	for i := range t.Designs {
		d := &t.Designs[i]
		tip, met, stuck, smet := "none", "-", "none", "-"
		if l, ok := d.TippingLoad(); ok {
			tip, met = ax.Text(l), d.Probes[d.Recovered].FrequencyText()
		}
		if d.Outcome == plan.PastHi {
			tip = "past " + ax.Text(t.Range.Hi)
		}
		if d.Stuck >= 0 {
			stuck, smet = ax.Text(d.Probes[d.Stuck].Load), d.Probes[d.Stuck].FrequencyText()
		}
		var curve []string
		for _, p := range d.Probes {
			curve = append(curve, ax.Text(p.Load)+":"+plan.SecondsText(p.MedianS()))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", d.Design, tip, met, stuck, smet, len(d.Probes), strings.Join(curve, " "))
	}
	tw.Flush()
	if s := t.FurthestText(); s != "" {
		fmt.Fprintf(env.Stdout, "\nfurthest above %s: %s\n", t.Reference().Design, s)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(env.Stdout, "note: %s\n", n)
	}
	for _, d := range t.Designs {
		for _, s := range d.Inversions {
			fmt.Fprintf(env.Stdout, "not monotone: %s\n", s)
		}
	}
}

// loader reads the scenarios file once and returns a loader of scenario
// name under --set overrides, and the overrides every probe shares
// (--set, then --seed).
func (f *planFlags) loader(name string) (plan.Loader, []string, error) {
	base := []string(f.set)
	if f.seed != "" {
		if _, err := strconv.ParseInt(f.seed, 10, 64); err != nil || strings.HasPrefix(f.seed, "-") {
			return nil, nil, usagef("plan: --seed %q is not an integer in 0..9223372036854775807", f.seed)
		}
		base = append(slices.Clone(base), "seed="+f.seed)
	}
	data, err := scenario.ReadFile(f.file)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("plan: %w", err)}
	}
	return func(set []string) (*scenario.Scenario, error) {
		file, err := scenario.Parse(f.file, data, &scenario.Options{Set: set, Target: name})
		if err != nil {
			return nil, err
		}
		return file.Scenario(name)
	}, base, nil
}
