package orchestrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
)

// Options is one scenario's run over its seeds and engines.
type Options struct {
	// File is the scenarios file: the seeds after the first are loaded
	// from it afresh, with Sets, so that the live replicas load the same.
	File string
	// Scenario is the scenario as loaded with Sets; SimScenario the
	// simulator's copy, loaded with SimSets added (--sim-set), or nil for
	// Scenario itself.
	Scenario, SimScenario *scenario.Scenario
	Sets, SimSets         []string
	Designs               []string // nil runs every design
	Engine                string   // sim, live or both
	Seeds                 int      // seed..seed+Seeds-1 on each engine; at least 1
	Parallel              int      // designs at once; 0: each engine's default
	Out                   string   // the results folder; the run goes to Out/<scenario>/<run>/
	Charts                bool     // draw the charts and report.html
	Thresholds            bool     // judge the scenario's expect table
	SaturationCheck       bool     // a saturated live host gives no verdict (97)
	// Live is what every live run shares (File, RedisAddr, StartAt,
	// Endpoint, ServerFault, InjectLateness); Run sets the rest per run.
	Live runner.Options
	// Progress, if set, counts the virtual time done; ProgressDone, if
	// set, is called once every run is done, before anything is printed.
	Progress     func(time.Duration)
	ProgressDone func()
	// Stdout takes the tables and where the files went; nil prints nothing.
	Stdout io.Writer
	// InterruptWithin bounds the keeping of a live run a signal
	// interrupts: from the signal, its histories until then are judged
	// and its folder written, marked interrupted, within this long, or
	// nothing is written. 0 means 10 s.
	InterruptWithin time.Duration
}

// DefaultInterruptWithin is Options.InterruptWithin's default.
const DefaultInterruptWithin = 10 * time.Second

// InputError is a problem with the scenario or the arguments that Run
// meets only once it runs: the CLI exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// job is one engine's run of one seed.
type job struct {
	engine, prefix string
	sc             *scenario.Scenario
	sets           []string
}

// state is a run in progress: its jobs, what they reported, and the files
// of the run's folder.
type state struct {
	o         *Options
	engines   []string
	jobs      []job
	all       map[string][]*report.Report // by engine, in seed order
	tops      map[string]*report.Report   // by engine, over the seeds
	files     map[string][]byte
	agreement *agree.Agreement
	dir       string
	// salvage is the context an interrupted live run is kept under (it
	// ends InterruptWithin after the signal); interrupted, that a signal
	// stopped a live job and the jobs after it did not run.
	salvage     context.Context
	interrupted bool
}

// Engines are the engines an --engine value runs, in order.
func Engines(engine string) []string {
	if engine == "both" {
		return []string{"sim", "live"}
	}
	return []string{engine}
}

// Run runs o.Scenario on each engine at each seed, writes the run's folder
// and prints its tables to o.Stdout, and returns the verdict: nil, or an
// error whose ExitCode is 97, 98 or 99 (Findings.Verdict, OneRun). Any
// other error is the run's own failure.
func Run(ctx context.Context, o *Options) error {
	s := &state{o: o, engines: Engines(o.Engine), all: map[string][]*report.Report{}, files: map[string][]byte{}}
	if o.SimScenario == nil {
		o.SimScenario = o.Scenario
	}
	if err := s.plan(); err != nil {
		return err
	}
	if slices.Contains(s.engines, "live") {
		var stop context.CancelFunc
		s.salvage, stop = s.salvageContext(ctx)
		defer stop()
	}
	if err := s.runJobs(ctx); err != nil {
		return err
	}
	if o.ProgressDone != nil {
		o.ProgressDone()
	}
	if s.interrupted {
		return s.writeInterrupted(ctx)
	}
	if err := s.overSeeds(); err != nil {
		return err
	}
	if err := s.agree(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	dir, err := report.WriteRun(filepath.Join(o.Out, o.Scenario.Name), report.RunDir(time.Now(), o.Scenario.Seed), s.files)
	if err != nil {
		return err
	}
	s.dir = dir
	return s.judge()
}

// plan lists the jobs: each seed in turn, each engine at that seed.
func (s *state) plan() error {
	o := s.o
	sc, simSc := o.Scenario, o.SimScenario
	for r := range o.Seeds {
		rsc, rsim, rsets := sc, simSc, o.Sets
		if r > 0 {
			// The same scenario on the next seed, loaded afresh, so the
			// replicas load it with the same --set as the clients.
			var err error
			rsets = WithSeed(o.Sets, sc.Seed+uint64(r))
			if rsc, err = LoadScenario(o.File, sc.Name, rsets); err != nil {
				return &InputError{err}
			}
			if rsim, err = LoadScenario(o.File, sc.Name, append(slices.Clone(rsets), o.SimSets...)); err != nil {
				return &InputError{err}
			}
			rsc.Warnings, rsim.Warnings = sc.Warnings, simSc.Warnings // the seed changes none of them
		}
		for _, engine := range s.engines {
			prefix := ""
			if len(s.engines) > 1 {
				prefix = engine + "/" // --engine both: one folder per engine
			}
			if o.Seeds > 1 {
				prefix = fmt.Sprintf("seed-%d/%s", sc.Seed+uint64(r), prefix)
			}
			esc := rsc
			if engine == "sim" {
				esc = rsim
			}
			s.jobs = append(s.jobs, job{engine, prefix, esc, rsets})
		}
	}
	return nil
}

// runJobs runs the jobs in order and keeps their reports and files.
func (s *state) runJobs(ctx context.Context) error {
	for _, jb := range s.jobs {
		o := s.o
		if jb.engine == "live" && s.salvage != nil {
			copied := *o
			copied.Live.Salvage = s.salvage
			o = &copied
		}
		rep, extra, err := RunEngine(ctx, jb.engine, jb.sc, jb.sets, o)
		if err != nil {
			if ctx.Err() != nil {
				if errors.Is(err, ctx.Err()) {
					return err // it says where the run stopped: judging, say
				}
				return ctx.Err()
			}
			if strings.Contains(err.Error(), "has no design") {
				return &InputError{err}
			}
			return err
		}
		ef, err := RunFiles(rep, s.o.Charts)
		if err != nil {
			return err
		}
		for k, v := range extra {
			ef[k] = v
		}
		for k, v := range ef {
			s.files[jb.prefix+k] = v
		}
		s.all[jb.engine] = append(s.all[jb.engine], rep)
		if rep.Interrupted != nil {
			s.interrupted = true // the jobs after it do not run
			return nil
		}
	}
	return nil
}

// RunEngine runs sc, loaded with sets, on one engine, with o's designs,
// parallelism, progress and live settings, and returns its report and the
// extra files it writes (a live run: results.bin, the histories and
// live.log).
func RunEngine(ctx context.Context, engine string, sc *scenario.Scenario, sets []string, o *Options) (*report.Report, map[string][]byte, error) {
	if engine == "sim" {
		out, err := sim.Run(ctx, sc, &sim.Options{Parallel: o.Parallel, Designs: o.Designs, Progress: o.Progress})
		if err != nil {
			return nil, nil, err
		}
		return out.Report, nil, nil
	}
	var buf, logBuf bytes.Buffer
	opts := o.Live
	opts.Designs, opts.Parallel, opts.Progress, opts.Set = o.Designs, o.Parallel, o.Progress, sets
	opts.Results, opts.Log = &buf, &logBuf
	out, err := runner.Run(ctx, sc, &opts)
	if err != nil {
		return nil, nil, err
	}
	if out.Report.Interrupted != nil {
		ctx = opts.Salvage // the histories are kept within its deadline
	}
	hist, err := history.EncodeHistoriesContext(ctx, out.Histories)
	if err != nil {
		if cause := context.Cause(ctx); out.Report.Interrupted != nil && cause != nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return nil, nil, err
	}
	return out.Report, map[string][]byte{"results.bin": buf.Bytes(), history.HistoryFile: hist, "live.log": logBuf.Bytes()}, nil
}

// overSeeds makes, over several seeds, each engine's top report: its first
// seed's run with every seed's metrics attached (over_seeds).
func (s *state) overSeeds() error {
	if s.o.Seeds <= 1 {
		return nil
	}
	s.tops = map[string]*report.Report{}
	for _, engine := range s.engines {
		top := report.WithOverSeeds(s.all[engine])
		for _, o := range s.o.Scenario.Orderings {
			for _, than := range o.Than {
				if top.Design(o.Lower) != nil && top.Design(than) != nil {
					top.OverSeeds.Orderings = append(top.OverSeeds.Orderings, top.OverSeeds.Order(o.Metric, o.Lower, than))
				}
			}
		}
		for _, r := range s.all[engine] {
			if r.Host != nil && r.Host.Saturated {
				top.Host = r.Host // any seed saturated: the run as a whole was
				break
			}
		}
		s.tops[engine] = top
		prefix := ""
		if len(s.engines) > 1 {
			prefix = engine + "/"
		}
		ef, err := top.Files()
		if err != nil {
			return err
		}
		s.files[prefix+"report.json"], s.files[prefix+"summary.md"] = ef["report.json"], ef["summary.md"]
	}
	return nil
}

// agree compares the engines, with --engine both.
func (s *state) agree() error {
	if len(s.engines) < 2 {
		return nil
	}
	s.agreement = agree.CompareRepeats(s.all["sim"], s.all["live"], agree.TolerancesOf(s.o.Scenario))
	j, err := s.agreement.JSON()
	if err != nil {
		return err
	}
	s.files["agreement.json"], s.files["agreement.md"] = j, s.agreement.Markdown()
	return nil
}

// RunFiles are the files of a run's folder that its report makes:
// report.json, summary.md, series.csv and, with charts, the charts and
// report.html. A merged run's folder holds the same.
func RunFiles(rep *report.Report, charts bool) (map[string][]byte, error) {
	files, err := rep.Files()
	if err != nil || !charts {
		return files, err
	}
	c, err := plots.Render(rep)
	if err != nil {
		return nil, err
	}
	for name, data := range c {
		files[name] = data
	}
	return files, nil
}

// WithSeed is sets with seed=N in place of any seed they set (--seed, or
// --set seed=N): the override for one of the runs of --seeds.
func WithSeed(sets []string, seed uint64) []string {
	out := slices.DeleteFunc(slices.Clone(sets), func(s string) bool {
		k, _, _ := strings.Cut(s, "=")
		return strings.TrimSpace(k) == "seed"
	})
	return append(out, "seed="+strconv.FormatUint(seed, 10))
}

// LoadScenario loads scenario name from file with the --set overrides.
func LoadScenario(file, name string, sets []string) (*scenario.Scenario, error) {
	f, err := scenario.Load(file, &scenario.Options{Set: sets, Target: name})
	if err != nil {
		return nil, err
	}
	return f.Scenario(name)
}
