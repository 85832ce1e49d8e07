// Command measure runs a command that measures something, and writes what it
// measured as one section of docs/measurements.md: the figures, the date,
// the machine and the command. Each make target that measures (bench,
// bench-live, agree, calibrate, test-time) runs its command through it, so
// that a figure is written in one place, by the run that produced it, and
// never pasted by hand.
//
//	go run ./internal/measure [-file F] [-make TARGET] [-agreement FILE ...] SECTION -- COMMAND [ARG ...]
//
// The command's output is passed through unchanged and its exit status is
// measure's own. Only when the command succeeds is the section rewritten,
// between its markers; every other byte of the file is left as it was, and
// a section the file does not have yet is added at the end.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// agreements collects the repeated -agreement flag.
type agreements []string

func (a *agreements) String() string     { return strings.Join(*a, ",") }
func (a *agreements) Set(v string) error { *a = append(*a, v); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "docs/measurements.md", "the measurements file")
	target := fs.String("make", "", "the make target that runs this (default: the section's name)")
	var agr agreements
	fs.Var(&agr, "agreement", "an agreement.json to summarise (agree; repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: measure [-file F] [-make TARGET] [-agreement FILE ...] SECTION -- COMMAND [ARG ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) < 3 || rest[1] != "--" {
		fs.Usage()
		return 2
	}
	name, argv := rest[0], rest[2:]
	if *target == "" {
		*target = name
	}

	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = io.MultiWriter(stdout, &out)
	cmd.Stderr = stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			fmt.Fprintf(stderr, "measure: %s exited %d; %s keeps its %q section\n", argv[0], ee.ExitCode(), *file, name)
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "measure: %v\n", err)
		return 1
	}

	body, err := Figures(name, out.Bytes(), took, agr)
	if err != nil {
		fmt.Fprintf(stderr, "measure: %s: %v\n", name, err)
		return 1
	}
	if name == "agree" {
		for line := range strings.Lines(body) {
			if strings.HasPrefix(line, "Over every run: ") {
				fmt.Fprint(stdout, "make agree: "+strings.NewReplacer("Over every run: ", "", "**", "").Replace(line))
			}
		}
	}
	s := Section{
		Name:    name,
		Title:   Title(name),
		Date:    start.UTC(),
		Machine: ThisMachine(),
		Target:  *target,
		Command: ShellJoin(argv),
		Took:    took,
		Body:    body,
	}
	old, err := os.ReadFile(*file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "measure: %v\n", err)
		return 1
	}
	if len(old) == 0 {
		old = []byte(Header)
	}
	doc, err := Replace(old, s)
	if err != nil {
		fmt.Fprintf(stderr, "measure: %s: %v\n", *file, err)
		return 1
	}
	if err := writeAtomic(*file, doc); err != nil {
		fmt.Fprintf(stderr, "measure: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "measure: wrote the %q section of %s\n", name, *file)
	return 0
}

// writeAtomic writes data under a temporary name and renames it into place,
// so that an interrupted write leaves the old file whole.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
