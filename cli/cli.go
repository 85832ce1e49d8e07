// Package cli implements the stormsim command line: each command parses its
// flags, calls a library package and maps the outcome to an exit code.
// cmd/stormsim only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/stormsim/stormsim/live/replica"
	"github.com/stormsim/stormsim/live/up"
	"github.com/stormsim/stormsim/orchestrate"
)

// Exit codes. docs/reference.md lists them.
const (
	ExitOK          = orchestrate.ExitOK          // success; every threshold held
	ExitError       = orchestrate.ExitError       // the run failed (I/O, an engine error)
	ExitUsage       = 2                           // a bad scenario file or bad arguments
	ExitSaturated   = orchestrate.ExitSaturated   // a live run's host was saturated: no verdict (wins over 98 and 99)
	ExitThreshold   = orchestrate.ExitThreshold   // a threshold in the scenario's expect table failed
	ExitInterrupted = orchestrate.ExitInterrupted // interrupted by SIGINT or SIGTERM: a live run's folder until then, marked interrupted, or nothing written
)

// usageError marks an error caused by bad input, which exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// isUsage reports whether err is bad input: the command's own, or one
// the library packages a command calls say is (their InputError).
func isUsage(err error) bool {
	var ue usageError
	var ui *up.InputError
	var ri *replica.InputError
	return errors.As(err, &ue) || errors.As(err, &ui) || errors.As(err, &ri)
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// Env is where a command reads and writes.
type Env struct {
	Stdout, Stderr io.Writer
	// Interactive says stderr is a terminal, so a progress bar may be drawn.
	Interactive bool
	// ProgressEvery is how often a long command that is not Interactive
	// writes a line of progress to stderr instead of the bar (a live run
	// with its output redirected is not silent for minutes); 0 writes none.
	ProgressEvery time.Duration
}

// progressEvery is ProgressEvery for the command line.
const progressEvery = 10 * time.Second

var commands []command

// register adds a command at init time, keeping the list sorted by name.
func register(c command) {
	commands = append(commands, c)
	sort.Slice(commands, func(i, j int) bool { return commands[i].name < commands[j].name })
}

// Main runs the stormsim command line and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first SIGINT or SIGTERM ends ctx: the run stops in order (the
	// judging too). Then the signals get their default action back, so a
	// second one ends the process at once; the replicas die with it
	// (package child), and a run folder is only ever renamed into place
	// whole.
	go func() {
		<-ctx.Done()
		stop()
	}()
	env := &Env{Stdout: stdout, Stderr: stderr, Interactive: isTerminal(stderr), ProgressEvery: progressEvery}
	return run(ctx, env, args)
}

func run(ctx context.Context, env *Env, args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			args = []string{args[1], "--help"}
		} else {
			topUsage(env.Stdout)
			if len(args) == 0 {
				return ExitUsage
			}
			return ExitOK
		}
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil:
			return ExitOK
		case errors.Is(err, flag.ErrHelp):
			return ExitOK
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(env.Stderr, "stormsim: interrupted (%v); no results were written\n", err)
			return ExitInterrupted
		}
		var ec exitCoder
		if errors.As(err, &ec) {
			fmt.Fprintln(env.Stderr, err)
			return ec.ExitCode()
		}
		fmt.Fprintln(env.Stderr, "stormsim:", err)
		if isUsage(err) {
			return ExitUsage
		}
		return ExitError
	}
	fmt.Fprintf(env.Stderr, "stormsim: unknown command %q\n\n", args[0])
	topUsage(env.Stderr)
	return ExitUsage
}

// exitCoder is an error that carries its own exit code (threshold breaches).
type exitCoder interface {
	error
	ExitCode() int
}

func topUsage(w io.Writer) {
	fmt.Fprintln(w, "stormsim simulates and load-tests reconnect storms on MCP Streamable HTTP servers.")
	fmt.Fprintln(w, "\nUsage:\n  stormsim <command> [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'stormsim <command> --help' for a command's flags, 'stormsim --version' for the version.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 run failed or a regression against a baseline, 2 bad scenario or arguments,")
	fmt.Fprintln(w, "97 a live run's host was saturated (no verdict), 98 the engines disagree, 99 a threshold failed, 130 interrupted.")
}

// newFlags returns a flag set whose --help prints usage and the flags.
func newFlags(env *Env, name, usage, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		w := env.Stdout
		fmt.Fprintf(w, "Usage: stormsim %s %s\n\n%s\n\nFlags:\n", name, usage, about)
		printFlags(w, fs)
	}
	return fs
}

// printFlags lists fs's flags as flag.PrintDefaults does, but spelt with
// two dashes, as the docs and the error messages spell them (the flag
// package accepts both).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		switch d := f.DefValue; {
		case d == "" || d == "0" || d == "false" || d == "[]":
		case arg == "string" || strings.ContainsAny(d, " \t"):
			line += fmt.Sprintf(" (default %q)", d)
		default:
			line += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintln(w, line)
	})
	if n == 0 {
		fmt.Fprintln(w, "  (none)")
	}
}

// visited reports whether the flag name was given on the command line.
func visited(fs *flag.FlagSet, name string) bool {
	seen := false
	fs.Visit(func(f *flag.Flag) { seen = seen || f.Name == name })
	return seen
}

// splitList splits a comma-separated flag value, dropping empty items. An
// empty result from a flag that was given is an error, not "every one":
// --designs "" is far more likely a script's empty variable than a wish.
func splitList(fs *flag.FlagSet, cmd, name, value string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	if out == nil && visited(fs, name) {
		return nil, usagef("%s: --%s %q names nothing: list at least one, or leave --%s out for all", cmd, name, value, name)
	}
	return out, nil
}

// plural is n and the noun, with an s when n is not 1.
var plural = orchestrate.Plural

// parse accepts flags before and after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress draws a progress bar over total work on stderr when it is a
// terminal and the command is not quiet, and otherwise writes a line of
// progress every env.ProgressEvery (lineProgress). add, safe for concurrent
// use, counts work done (nil when neither is drawn: the engines take nil as
// "no progress"); done clears the bar or stops the lines, and may be called
// more than once.
func newProgress(env *Env, quiet bool, total time.Duration, desc string) (add func(time.Duration), done func()) {
	switch {
	case quiet || (!env.Interactive && env.ProgressEvery <= 0):
		return nil, func() {}
	case !env.Interactive:
		return lineProgress(env.Stderr, env.ProgressEvery, total, desc)
	}
	bar := progressbar.NewOptions64(int64(total/time.Millisecond),
		progressbar.OptionSetWriter(env.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
	var mu sync.Mutex
	var once sync.Once
	return func(d time.Duration) {
			mu.Lock()
			bar.Add64(int64(d / time.Millisecond))
			mu.Unlock()
		}, func() {
			once.Do(func() { bar.Finish() })
		}
}

// lineProgress writes a line of progress to w every interval, until done:
// the work done of total and the wall time since it started.
func lineProgress(w io.Writer, every, total time.Duration, desc string) (add func(time.Duration), done func()) {
	var mu sync.Mutex
	var work time.Duration
	start := time.Now()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mu.Lock()
				d := work
				mu.Unlock()
				pct := 0.0
				if total > 0 {
					pct = 100 * float64(d) / float64(total)
				}
				fmt.Fprintf(w, "stormsim: %s: %s of %s done (%.0f%%), %s elapsed\n",
					desc, d.Round(time.Second), total.Round(time.Second), pct, time.Since(start).Round(time.Second))
			}
		}
	}()
	var once sync.Once
	return func(d time.Duration) {
			mu.Lock()
			work += d
			mu.Unlock()
		}, func() {
			once.Do(func() {
				close(stop)
				<-stopped
			})
		}
}
