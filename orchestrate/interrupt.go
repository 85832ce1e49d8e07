package orchestrate

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/stormsim/stormsim/report"
)

// ExitInterrupted is the exit of a run a signal stopped, whether or not
// what it recorded until then was written (130, as a shell reports SIGINT).
const ExitInterrupted = 130

// Interrupted is the end of a live run that a signal stopped and that was
// written, up to the signal and marked interrupted, to Dir.
type Interrupted struct{ Dir string }

func (e *Interrupted) Error() string {
	return fmt.Sprintf("stormsim: interrupted: the run until the signal was written to %s, marked interrupted (report.json's \"interrupted\"); it gives no verdict", e.Dir)
}

// ExitCode is ExitInterrupted.
func (e *Interrupted) ExitCode() int { return ExitInterrupted }

// salvageContext is the context an interrupted live run is kept under: it
// outlives ctx by InterruptWithin, counted from when ctx ends.
func (s *state) salvageContext(ctx context.Context) (context.Context, context.CancelFunc) {
	within := s.o.InterruptWithin
	if within <= 0 {
		within = DefaultInterruptWithin
	}
	salvage, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		time.AfterFunc(within, func() {
			cancel(fmt.Errorf("keeping the interrupted run took more than %s: %w", within, context.DeadlineExceeded))
		})
	})
	return salvage, func() { stopAfter(); cancel(nil) }
}

// writeInterrupted writes the folder of a run a signal stopped: the jobs
// that ran, the last one up to the signal, over the seeds that ran, with no
// agreement and no verdict, within the salvage context's deadline. Nothing
// is left when it cannot finish.
func (s *state) writeInterrupted(ctx context.Context) error {
	fail := func(err error) error {
		return fmt.Errorf("%w; the run until then was not written: %w", ctx.Err(), err)
	}
	if s.o.Seeds > 1 {
		// Over the seeds that ran; the live engine's top report is marked
		// as its last seed's is.
		if err := s.overSeeds(); err != nil {
			return fail(err)
		}
		top, lives := s.tops["live"], s.all["live"]
		top.Interrupted = lives[len(lives)-1].Interrupted
		ef, err := top.Files()
		if err != nil {
			return fail(err)
		}
		prefix := ""
		if len(s.engines) > 1 {
			prefix = "live/"
		}
		s.files[prefix+"report.json"], s.files[prefix+"summary.md"] = ef["report.json"], ef["summary.md"]
	}
	dir, err := report.WriteRunContext(s.salvage, filepath.Join(s.o.Out, s.o.Scenario.Name), report.RunDir(time.Now(), s.o.Scenario.Seed), s.files)
	if err != nil {
		if cause := context.Cause(s.salvage); cause != nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return fail(err)
	}
	return &Interrupted{Dir: dir}
}
