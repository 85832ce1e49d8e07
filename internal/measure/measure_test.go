package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/agree"
)

// Every section of docs/measurements.md names its date, its machine (CPU
// model, cores, Go and Redis versions) and its command, between well-formed
// markers.
func TestMeasurementsFile(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/measurements.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(doc); err != nil {
		t.Error(err)
	}
	names, _, _ := Sections(doc)
	for _, n := range names {
		if _, ok := titles[n]; !ok {
			t.Errorf("section %q is written by no make target this tool knows", n)
		}
	}
}

func testSection(name, body string) Section {
	return Section{
		Name: name, Title: Title(name), Date: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC),
		Machine: Machine{CPU: "Test CPU", Cores: 2, OS: "linux/amd64", Go: "go1.26.0", Redis: "7.0.15"},
		Target:  name, Command: "go test -bench X ./sim/", Took: 3 * time.Second, Body: body,
	}
}

// Replace rewrites only its own section, adds a missing one at the end, and
// the result passes Check.
func TestReplace(t *testing.T) {
	t.Parallel()
	doc := []byte(Header)
	doc, err := Replace(doc, testSection("bench", "first"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err = Replace(doc, testSection("calibrate", "cal"))
	if err != nil {
		t.Fatal(err)
	}
	before := string(doc)
	doc, err = Replace(doc, testSection("bench", "second"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), "first") || !strings.Contains(string(doc), "second") || !strings.Contains(string(doc), "cal\n") {
		t.Errorf("bench was not rewritten in place:\n%s", doc)
	}
	if !strings.HasPrefix(string(doc), Header) {
		t.Errorf("the text outside the markers changed")
	}
	if got, want := strings.Replace(string(doc), "second", "first", 1), before; got != want {
		t.Errorf("more than the section changed:\n%s\n---\n%s", got, want)
	}
	if err := Check(doc); err != nil {
		t.Error(err)
	}
	if names, _, _ := Sections(doc); strings.Join(names, ",") != "bench,calibrate" {
		t.Errorf("sections %v", names)
	}
}

// Check names what a section lacks.
func TestCheckBites(t *testing.T) {
	t.Parallel()
	good := testSection("bench", "x").Render()
	for _, c := range []struct {
		drop, want string
	}{
		{"- date:", "names no date"},
		{"- machine:", "does not name its machine"},
		{"- command:", "names no command"},
		{"<!-- end bench -->", "no end marker"},
	} {
		doc := strings.Replace(good, c.drop, "- nothing:", 1)
		if err := Check([]byte(doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("without %q: %v, want %q", c.drop, err, c.want)
		}
	}
	noRedis := strings.Replace(good, ", Redis 7.0.15", "", 1)
	if err := Check([]byte(noRedis)); err == nil {
		t.Errorf("a machine without the Redis version passed")
	}
}

// benchFigures takes the median and range of each metric over -count runs.
func TestBenchFigures(t *testing.T) {
	t.Parallel()
	out := `goos: linux
goarch: amd64
pkg: github.com/stormsim/stormsim/sim
cpu: AMD EPYC
BenchmarkEngine-2   	       1	3512345678 ns/op	  15421624 queue-events/op	         2.66 cost/heap-op
BenchmarkEngine-2   	       1	3712345678 ns/op	  15421624 queue-events/op	         2.70 cost/heap-op
BenchmarkEngine-2   	       1	3612345678 ns/op	  15421624 queue-events/op	         2.68 cost/heap-op
streams   1000: held   1000 (100.0%)
PASS
ok  	github.com/stormsim/stormsim/sim	12.3s
`
	got, err := benchFigures([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| BenchmarkEngine | ns/op | 3612345678 | 3512345678–3712345678 | 3 |",
		"| BenchmarkEngine | cost/heap-op | 2.68 | 2.66–2.7 | 3 |",
		"| BenchmarkEngine | queue-events/op | 15421624 | 15421624–15421624 | 3 |",
		"streams   1000: held   1000 (100.0%)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	// A benchmark that prints: its first run's result shares the name's
	// line, each later one comes after the name and the output, which may
	// start on the next line.
	out = "setup 1\nBenchmarkRedis-2   \t       1\t100 ns/op\t 5.0 appends/s\nBenchmarkRedis-2   \tsetup 2\n       1\t300 ns/op\t 7.0 appends/s\nBenchmarkRedis-2   \tsetup 3\n       1\t200 ns/op\t 6.0 appends/s\nBenchmarkRedis-2   \t\nsetup 4\n       1\t250 ns/op\t 6.5 appends/s\nPASS\n"
	got, err = benchFigures([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| BenchmarkRedis | ns/op | 225 | 100–300 | 4 |", "| BenchmarkRedis | appends/s | 6.25 | 5–7 | 4 |", "setup 2\nsetup 3\nsetup 4"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if _, err := benchFigures([]byte("FAIL\n")); err == nil {
		t.Error("output without a benchmark gave figures")
	}
}

// The tool passes the command's output through, writes the section only when
// the command succeeds, and exits with the command's status.
func TestRunWritesOnSuccessOnly(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "m.md")
	var out, errb bytes.Buffer
	if code := run([]string{"-file", file, "calibrate", "--", "sh", "-c", "echo figure 42"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != "figure 42\n" {
		t.Errorf("stdout %q", out.String())
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(doc); err != nil || !strings.Contains(string(doc), "figure 42") || !strings.Contains(string(doc), "which ran `sh -c 'echo figure 42'`") {
		t.Errorf("%v\n%s", err, doc)
	}
	if code := run([]string{"-file", file, "calibrate", "--", "sh", "-c", "echo figure 7; exit 3"}, &out, &errb); code != 3 {
		t.Errorf("exit %d, want the command's 3", code)
	}
	again, _ := os.ReadFile(file)
	if !bytes.Equal(doc, again) {
		t.Errorf("a failed command rewrote the section")
	}
}

// The agree section counts each run's verdicts, ends with the line over
// every run, and refuses runs that left too many rows inconclusive.
func TestAgreeFigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, a *agree.Agreement) string {
		p := filepath.Join(dir, name)
		j, err := a.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, j, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	row := func(v string) agree.Row { return agree.Row{Design: "d", Metric: "lost_fraction", Verdict: v} }
	rows := func(n int, v string) []agree.Row {
		var out []agree.Row
		for range n {
			out = append(out, row(v))
		}
		return out
	}
	good := write("a.json", &agree.Agreement{Scenario: "a", Rows: append(rows(20, agree.Agree), row(agree.Inconclusive)), Agreed: 20, Inconclusive: 1})
	got, err := agreeFigures([]string{good})
	if err != nil || !strings.Contains(got, "Over every run: **20 agree, 0 disagree, 1 inconclusive**.") || !strings.Contains(got, "| a | 1 | 21 | 20 | 0 | 1 | 0 |") {
		t.Errorf("%v\n%s", err, got)
	}
	bad := write("b.json", &agree.Agreement{Scenario: "b", Rows: append(rows(5, agree.Agree), rows(2, agree.Inconclusive)...), Agreed: 5, Inconclusive: 2})
	if _, err := agreeFigures([]string{good, bad}); err == nil || !strings.Contains(err.Error(), "25 agree, 0 disagree, 3 inconclusive") {
		t.Errorf("3 inconclusive of 25 agreeing rows passed: %v", err)
	}
}
