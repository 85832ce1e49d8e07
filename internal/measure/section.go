package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Header is what a new measurements file starts with.
const Header = `# Measured figures

Every figure in this file was written by the make target that measured it,
through ` + "`internal/measure`" + `, with the date, the machine and the command of
that run. Nothing here is typed by hand: rerun the target to refresh its
section, and read a figure together with the machine it was measured on. The
rest of the documentation links here instead of copying numbers.

A section that is missing has not been measured in this checkout yet; run its
target to write it.
`

// Section is one measured section of the file.
type Section struct {
	Name    string    // the marker name, e.g. "bench"
	Title   string    // the heading
	Date    time.Time // when the run started, UTC
	Machine Machine
	Target  string        // the make target, e.g. "bench"
	Command string        // the command the target ran
	Took    time.Duration // the command's wall time
	Body    string        // the figures, Markdown
}

// Machine is where a section was measured.
type Machine struct {
	CPU   string // the CPU model
	Cores int
	OS    string // GOOS/GOARCH
	Go    string // the Go toolchain
	Redis string // redis-server on PATH, or "none"
}

func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %s, Go %s, Redis %s", m.CPU, m.Cores, m.OS, strings.TrimPrefix(m.Go, "go"), m.Redis)
}

// ThisMachine describes the machine the command runs on. The Go version is
// the toolchain's that built measure, the one `go run` and the targets use.
func ThisMachine() Machine {
	m := Machine{CPU: "unknown CPU", Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), Redis: "none"}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		if v := regexp.MustCompile(`v=(\S+)`).FindSubmatch(out); v != nil {
			m.Redis = string(v[1])
		}
	}
	return m
}

// titles are the headings of the sections the Makefile writes.
var titles = map[string]string{
	"bench":                "make bench: the simulator's speed",
	"bench-sweep":          "make bench: a plan sweep of 10 loads × 6 designs",
	"cpu-profile":          "make bench: where the simulator's time goes (CPU profile)",
	"bench-1m":             "make bench-1m: a million clients beside a hundred thousand",
	"bench-1m-work":        "make bench-1m-work: the instructions a million clients take beside a hundred thousand",
	"bench-live-store":     "make bench-live: Redis appends against redis-benchmark",
	"bench-live-streams":   "make bench-live: streams held, storm absorption, CPU per event",
	"bench-live-floor":     "make bench-live: the CPU per event of a bare relay in the same processes",
	"bench-live-calibrate": "make bench-live: calibrate's Redis rates and latencies",
	"agree":                "make agree: the simulator against the live engine",
	"calibrate":            "make calibrate: the store model measured on a Redis",
	"test-time":            "make test-time: how long make test takes",
	"nightly":              "make nightly: how long the nightly run takes",
	"orderings":            "make orderings: how often each claim about the backoff variants holds",
	"bench-host-lateness":  "make host-lateness: how late an ordinary live run runs on this machine",
	"interop":              "make interop: real clients against real servers",
}

// Title is the heading of a section.
func Title(name string) string {
	if t, ok := titles[name]; ok {
		return t
	}
	return name
}

func begin(name string) string { return "<!-- begin " + name + " (generated; do not edit) -->" }
func end(name string) string   { return "<!-- end " + name + " -->" }

// Render writes the section with its markers.
func (s Section) Render() string {
	var b strings.Builder
	b.WriteString(begin(s.Name) + "\n")
	fmt.Fprintf(&b, "## %s\n\n", s.Title)
	fmt.Fprintf(&b, "- date: %s\n", s.Date.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- machine: %s\n", s.Machine)
	fmt.Fprintf(&b, "- command: `make %s`, which ran `%s`\n", s.Target, s.Command)
	fmt.Fprintf(&b, "- took: %s\n\n", s.Took.Round(time.Second))
	b.WriteString(strings.TrimSpace(s.Body) + "\n")
	b.WriteString(end(s.Name) + "\n")
	return b.String()
}

var beginRE = regexp.MustCompile(`(?m)^<!-- begin (\S+) \(generated; do not edit\) -->$`)

// Replace returns doc with the section s rewritten between its markers, or
// added at the end when doc does not have it yet.
func Replace(doc []byte, s Section) ([]byte, error) {
	text := string(doc)
	b, e := begin(s.Name), end(s.Name)
	i := strings.Index(text, b)
	if i < 0 {
		if strings.Contains(text, e) {
			return nil, fmt.Errorf("%q has an end marker and no begin marker", s.Name)
		}
		return []byte(strings.TrimRight(text, "\n") + "\n\n" + s.Render()), nil
	}
	j := strings.Index(text[i:], e)
	if j < 0 {
		return nil, fmt.Errorf("%q has a begin marker and no end marker", s.Name)
	}
	j += i + len(e)
	if j < len(text) && text[j] == '\n' {
		j++
	}
	return []byte(text[:i] + s.Render() + text[j:]), nil
}

// Sections returns each section's name and its text between the markers.
func Sections(doc []byte) (names []string, bodies map[string]string, err error) {
	text := string(doc)
	bodies = map[string]string{}
	var errs []error
	for _, m := range beginRE.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		rest := text[m[1]:]
		j := strings.Index(rest, end(name))
		if j < 0 {
			errs = append(errs, fmt.Errorf("section %q has no end marker", name))
			continue
		}
		if _, dup := bodies[name]; dup {
			errs = append(errs, fmt.Errorf("section %q appears twice", name))
		}
		names = append(names, name)
		bodies[name] = rest[:j]
	}
	return names, bodies, errors.Join(errs...)
}

var (
	dateRE    = regexp.MustCompile(`(?m)^- date: (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC)$`)
	machineRE = regexp.MustCompile(`(?m)^- machine: (.+), (\d+) cores, \S+, Go (\S+), Redis (\S+)$`)
	commandRE = regexp.MustCompile("(?m)^- command: `make [a-z0-9-]+`, which ran `.+`$")
)

// Check reports every section that does not name its date, its machine
// (CPU model, cores, Go and Redis versions) and its command.
func Check(doc []byte) error {
	names, bodies, err := Sections(doc)
	errs := []error{err}
	if strings.Count(string(doc), "<!-- end ") != len(names) {
		errs = append(errs, fmt.Errorf("%d end markers for %d sections", strings.Count(string(doc), "<!-- end "), len(names)))
	}
	for _, n := range names {
		body := bodies[n]
		if m := dateRE.FindStringSubmatch(body); m == nil {
			errs = append(errs, fmt.Errorf("section %q names no date", n))
		} else if _, err := time.Parse("2006-01-02 15:04 MST", m[1]); err != nil {
			errs = append(errs, fmt.Errorf("section %q: date %q: %v", n, m[1], err))
		}
		if !machineRE.MatchString(body) {
			errs = append(errs, fmt.Errorf("section %q does not name its machine (CPU model, cores, Go and Redis versions)", n))
		}
		if !commandRE.MatchString(body) {
			errs = append(errs, fmt.Errorf("section %q names no command", n))
		}
		if !strings.Contains(body, "\n## ") && !strings.HasPrefix(body, "\n## ") {
			errs = append(errs, fmt.Errorf("section %q has no heading", n))
		}
	}
	return errors.Join(errs...)
}

// ShellJoin quotes argv the way a shell would read it back.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@+%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
