package doccheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const root = "../.."

func readme(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// command is one example command of a ```sh block, with the exit status
// its comment promises (0 unless it says "exits N").
type command struct {
	line string
	exit int
}

var exitsRE = regexp.MustCompile(`exits (\d+)`)

func commands(md string) []command {
	var out []command
	in := false
	for line := range strings.Lines(md) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.TrimSpace(line) != "":
			cmd, comment, _ := strings.Cut(line, " #")
			c := command{line: strings.TrimSpace(cmd)}
			if m := exitsRE.FindStringSubmatch(comment); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			out = append(out, c)
		}
	}
	return out
}

// The README is short, and links every file of docs/.
func TestReadmeLinksEveryDoc(t *testing.T) {
	t.Parallel()
	md := readme(t)
	if len(md) > 15*1024 {
		t.Errorf("README.md is %d bytes, more than 15 KB", len(md))
	}
	entries, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(md, "(docs/"+e.Name()+")") {
			t.Errorf("README.md does not link docs/%s", e.Name())
		}
	}
}

// No file of the project cites a domain brief outside the repository: the
// facts are in docs/domain.md, cited by section.
func TestCitesItsOwnDomain(t *testing.T) {
	t.Parallel()
	outside := "DOMAIN" + ".md"
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "results", "bin", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".toml", ".yml", ".yaml":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(outside)) {
			t.Errorf("%s cites %s; cite docs/domain.md and its section", path, outside)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// skipped are the README's commands this test does not run, and why.
var skipped = map[string]string{
	"make test":    "it is the whole test suite, this test included",
	"make nightly": "it runs live scenarios for minutes; its parts are tests of their own (TestNightlyPasses, the simulated scenarios; TestStormScript, a live nightly run of an own server)",
}

// Every example command of the README exits as it says (0 unless its
// comment says "exits N"), each writing into a temporary OUT; and the
// deploy-restart table in the README is the one `make sim` prints, and the
// plan table the one `make plan` prints.
func TestReadmeCommands(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed: the README's commands need it")
	}
	md := readme(t)
	cmds := commands(md)
	if len(cmds) < 4 {
		t.Fatalf("found %d commands in the README", len(cmds))
	}
	for _, c := range cmds {
		if why, ok := skipped[c.line]; ok {
			t.Logf("not running %q: %s", c.line, why)
			continue
		}
		if !strings.HasPrefix(c.line, "make ") {
			t.Errorf("%q: the README's examples are make commands, which take OUT=", c.line)
			continue
		}
		out := t.TempDir()
		cmd := exec.Command("sh", "-c", c.line+" -s OUT="+out)
		cmd.Dir = root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		// make reports a recipe's failure as its own exit 2; the command's
		// status is in its message.
		if c.exit != 0 && code == 2 && strings.Contains(stderr.String(), "Error "+strconv.Itoa(c.exit)) {
			code = c.exit
		}
		if code != c.exit {
			t.Errorf("%q exited %d, the README says %d\nstdout:\n%s\nstderr:\n%s", c.line, code, c.exit, stdout.String(), stderr.String())
			continue
		}
		if c.line == "make sim SCENARIO=deploy-restart" {
			checkTable(t, md, stdout.String())
		}
		if c.line == "make plan SCENARIO=deploy-restart" {
			checkPlan(t, md, stdout.String())
		}
		if strings.Contains(c.line, "client.profile=go-sdk") {
			checkProse(t, md, "memory-sticky then fails", stdout.String())
			// The prose's second figure, with the application reconnecting
			// after a failure, from the same command with that key set.
			line := strings.Replace(c.line, "client.profile=go-sdk", "client.profile=go-sdk --set client.app_reconnect=on_failure", 1)
			cmd := exec.Command("sh", "-c", line+" -s OUT="+t.TempDir())
			cmd.Dir = root
			printed, err := cmd.Output()
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			checkProse(t, md, "client.app_reconnect=on_failure` it\nfails", string(printed))
		}
	}
}

var colSep = regexp.MustCompile(`\s{2,}`)

// checkTable holds every cell of the README's deploy-restart tables to the
// column of the same name in the table make sim printed.
func checkTable(t *testing.T, md, printed string) {
	t.Helper()
	rows := printedRows(printed)
	if len(rows) != 6 {
		t.Fatalf("make sim printed %d design rows:\n%s", len(rows), printed)
	}
	start, end := "<!-- deploy-restart table", "<!-- end of the deploy-restart table -->"
	if cells := checkMarked(t, md, rows, start, end, "make sim"); cells < 6*10 {
		t.Errorf("checked only %d cells of the README's table", cells)
	}
	for line := range strings.Lines(md[strings.Index(md, start):strings.Index(md, end)]) {
		if n := len([]rune(strings.TrimRight(line, "\n"))); n > 100 {
			t.Errorf("a line of the deploy-restart table is %d columns wide: %s", n, line)
		}
	}
}

// checkPlan holds the README's plan table to the table make plan printed,
// cell by cell, and its recommendation line to the one make plan printed.
func checkPlan(t *testing.T, md, printed string) {
	t.Helper()
	rows := printedRows(printed)
	if len(rows) != 6 {
		t.Fatalf("make plan printed %d design rows:\n%s", len(rows), printed)
	}
	if cells := checkMarked(t, md, rows, "<!-- plan table", "<!-- end of the plan table -->", "make plan"); cells < 6*6 {
		t.Errorf("checked only %d cells of the README's plan table", cells)
	}
	for line := range strings.Lines(printed) {
		if strings.HasPrefix(line, "cheapest at ") && !strings.Contains(md, line) {
			t.Errorf("the README does not quote make plan's recommendation:\n%s", line)
		}
	}
}

// printedRows reads a table the CLI printed (columns apart by two spaces or
// more, a header starting "design") into rows by design, cells by column.
func printedRows(printed string) map[string]map[string]string {
	var header []string
	rows := map[string]map[string]string{}
	for line := range strings.Lines(printed) {
		f := colSep.Split(strings.TrimSpace(line), -1)
		if len(f) > 5 && f[0] == "design" {
			header = f
			continue
		}
		if header != nil && len(f) == len(header) {
			row := map[string]string{}
			for i, h := range header {
				row[h] = f[i]
			}
			rows[f[0]] = row
		}
	}
	return rows
}

// checkMarked holds every cell of the README's table between the markers
// start and end to the printed rows, and returns how many it checked.
func checkMarked(t *testing.T, md string, rows map[string]map[string]string, start, end, by string) int {
	t.Helper()
	i, j := strings.Index(md, start), strings.Index(md, end)
	if i < 0 || j < i {
		t.Fatalf("the README has no table marked %q", start)
	}
	var cols []string
	cells := 0
	for line := range strings.Lines(md[i:j]) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		f := strings.Split(strings.Trim(line, "|"), "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[0] == "design" {
			cols = f
			continue
		}
		got, ok := rows[f[0]]
		if !ok {
			t.Errorf("README row %q: %s printed no such design", f[0], by)
			continue
		}
		for i, c := range cols {
			want, ok := got[c]
			if !ok {
				t.Errorf("README column %q: %s printed no such column", c, by)
				continue
			}
			if f[i] != want {
				t.Errorf("README %s %s = %s, %s prints %s", f[0], c, f[i], by, want)
			}
			cells++
		}
	}
	return cells
}

var proseFigures = regexp.MustCompile(`^\s*([\d,]+) of ([\d,]+) (?:calls )?and loses ([\d.]+%)`)

// checkProse holds the README's sentence after lead ("fails A of B calls
// and loses C%") to memory-sticky's row of the table make sim printed.
func checkProse(t *testing.T, md, lead, printed string) {
	t.Helper()
	lead = strings.ReplaceAll(lead, `\n`, "\n")
	i := strings.Index(md, lead)
	if i < 0 {
		t.Fatalf("the README has no %q", lead)
	}
	m := proseFigures.FindStringSubmatch(md[i+len(lead):])
	if m == nil {
		t.Fatalf("the README's figures after %q do not read \"A of B calls and loses C%%\"", lead)
	}
	var header []string
	for line := range strings.Lines(printed) {
		f := colSep.Split(strings.TrimSpace(line), -1)
		if len(f) > 5 && f[0] == "design" {
			header = f
			continue
		}
		if header == nil || len(f) != len(header) || f[0] != "memory-sticky" {
			continue
		}
		row := map[string]string{}
		for j, h := range header {
			row[h] = f[j]
		}
		plain := func(s string) string { return strings.ReplaceAll(s, ",", "") }
		if plain(m[1]) != row["failed"] || plain(m[2]) != row["calls"] || m[3] != row["lost%"] {
			t.Errorf("the README says memory-sticky fails %s of %s calls and loses %s (after %q); make sim prints failed %s, calls %s, lost%% %s",
				m[1], m[2], m[3], lead, row["failed"], row["calls"], row["lost%"])
		}
		return
	}
	t.Fatalf("make sim printed no memory-sticky row:\n%s", printed)
}
