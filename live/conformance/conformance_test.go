package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/live/internal/wait"
)

var bin string

func TestMain(m *testing.M) { testbin.Main(m, "../..", &bin) }

// root is the module's root, where conformance/ is.
const root = "../.."

// expected is conformance/expected-failures.toml.
type expected struct {
	NotApplicable map[string]string            `toml:"not_applicable"`
	Server        map[string]map[string]string `toml:"server"`
	Client        map[string]map[string]string `toml:"client"`
	Passes        map[string][]string          `toml:"passes"`
}

const expectedFile = "conformance/expected-failures.toml"

// loadExpected reads the expected failures strictly: no unknown key, a
// reason for every scenario.
func loadExpected(t *testing.T) expected {
	t.Helper()
	var e expected
	md, err := toml.DecodeFile(filepath.Join(root, expectedFile), &e)
	if err != nil {
		t.Fatalf("%s: %v", expectedFile, err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("%s: unknown keys %v", expectedFile, u)
	}
	check := func(where string, m map[string]string) {
		for sc, why := range m {
			if strings.TrimSpace(why) == "" {
				t.Errorf("%s: %s.%q: no reason given", expectedFile, where, sc)
			}
		}
	}
	check("not_applicable", e.NotApplicable)
	for name, m := range e.Server {
		check("server."+name, m)
	}
	for name, m := range e.Client {
		check("client."+name, m)
	}
	for name, l := range e.Passes {
		for _, sc := range l {
			if _, ok := e.NotApplicable[sc]; !ok {
				t.Errorf("%s: passes.%s: %q is not in not_applicable", expectedFile, name, sc)
			}
		}
	}
	return e
}

// forServer is what may fail for server name: the scenarios that apply to
// no stormsim server and the server's own.
func (e expected) forServer(name string) map[string]string {
	out := map[string]string{}
	for k, v := range e.NotApplicable {
		out[k] = v
	}
	for k, v := range e.Server[name] {
		out[k] = v
	}
	for _, k := range e.Passes[name] {
		delete(out, k)
	}
	return out
}

// outcome is one scenario's result: whether it passed, and the messages of
// its failed (and warned) checks.
type outcome struct {
	passed   bool
	failures []string
	warnings []string
}

// suite runs the conformance CLI with args, writing its results to a new
// folder, and returns each scenario's outcome by name.
func suite(t *testing.T, args ...string) map[string]outcome {
	t.Helper()
	res, err := outcomes(runSuite(t, "conformance", args...))
	if err != nil || len(res) == 0 {
		t.Fatalf("conformance %s: no results (%v)", strings.Join(args, " "), err)
	}
	return res
}

// runSuite runs the conformance CLI installed in folder (under the
// module's root) with args, and returns the folder of its results.
func runSuite(t *testing.T, folder string, args ...string) string {
	t.Helper()
	dir := filepath.Join(root, folder, "node_modules")
	node := filepath.Join(dir, "node", "bin", "node")
	cli := filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the conformance suite is not installed (%v): make conformance-deps installs it (npm ci in %s/)", err, folder)
		}
	}
	node, _ = filepath.Abs(node)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), wait.For(10*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{cli}, append(args, "-o", out)...)...)
	// The suite starts clients by command, through a shell: the Node it
	// runs on comes first on the PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	log, _ := cmd.CombinedOutput() // it exits 1 on any failure: the outcomes say which
	if entries, err := os.ReadDir(out); err != nil || len(entries) == 0 {
		t.Fatalf("conformance %s: no results (%v); its output:\n%s", strings.Join(args, " "), err, log)
	}
	return out
}

// stamp is the time the suite appends to each result folder's name.
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// outcomes reads the suite's result folders: server-NAME-TIME (a server
// scenario) or NAME-TIME (a client one), each with checks.json.
func outcomes(dir string) (map[string]outcome, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	res := map[string]outcome{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		name := strings.TrimPrefix(stamp.ReplaceAllString(e.Name(), ""), "server-")
		o := outcome{passed: true}
		for _, c := range checks {
			switch c.Status {
			case "FAILURE":
				o.passed = false
				o.failures = append(o.failures, c.ID+": "+c.ErrorMessage)
			case "WARNING":
				o.warnings = append(o.warnings, c.ID+": "+c.ErrorMessage)
			}
		}
		res[name] = o
	}
	return res, nil
}

// judge fails the test for each scenario that failed and may not, and each
// that passed though listed; want lists the scenarios that may fail.
func judge(t *testing.T, what string, got map[string]outcome, want map[string]string) {
	t.Helper()
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	passed := 0
	for _, n := range names {
		o := got[n]
		why, listed := want[n]
		switch {
		case !o.passed && !listed:
			t.Errorf("%s: %s fails, and %s does not list it (a deviation): %s", what, n, expectedFile, strings.Join(o.failures, "; "))
		case o.passed && listed:
			t.Errorf("%s: %s passes, but %s lists it (%s): remove the entry", what, n, expectedFile, why)
		case o.passed:
			passed++
		}
		if len(o.warnings) > 0 {
			t.Logf("%s: %s warns: %s", what, n, strings.Join(o.warnings, "; "))
		}
	}
	t.Logf("%s: %d scenarios, %d passed, %d not applicable", what, len(got), passed, len(got)-passed)
}

// designs is every design these tests serve, for serve's --set designs.
const designs = `designs=["memory-sticky","stateless","sdk-memory-sticky","ts-memory-sticky"]`

// start runs bin with args and returns the URL the first line of its
// output starting with prefix names; the process is stopped (SIGINT, then
// SIGKILL) when the test ends.
func start(t *testing.T, prefix string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(wait.For(30 * time.Second)):
			cmd.Process.Kill()
			<-exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				found <- strings.Fields(rest)[0]
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-found:
		return u
	case <-exited:
		t.Fatalf("stormsim %s exited before it printed %q", strings.Join(args, " "), prefix)
	case <-time.After(wait.For(wait.Ready)):
		t.Fatalf("stormsim %s printed no %q within %v", strings.Join(args, " "), prefix, wait.For(wait.Ready))
	}
	return ""
}

// serve starts one replica of design and returns its MCP URL.
func serve(t *testing.T, design string) string {
	return start(t, "listening on ", "serve", "--file", filepath.Join(root, "scenarios.toml"),
		"--scenario", "steady", "--design", design, "--set", designs)
}

// The reference replica, the design every live design runs on, with an
// event store: every applicable server scenario passes, ping and DNS
// rebinding among them. One run of the suite: make test runs it.
func TestConformanceReference(t *testing.T) {
	e := loadExpected(t)
	judge(t, "reference", suite(t, "server", "--url", serve(t, "memory-sticky")), e.forServer("reference"))
}

// The other servers stormsim ships: the reference replica stateless,
// behind `stormsim up`'s load balancer, the go-sdk replica and the
// TypeScript SDK server (make node installs it). make test-long runs it.
func TestConformanceServers(t *testing.T) {
	e := loadExpected(t)
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"reference-stateless", func(t *testing.T) string { return serve(t, "stateless") }},
		{"up", func(t *testing.T) string {
			return start(t, "endpoint: ", "up", "steady", "--design", "memory-sticky", "--no-schedule",
				"--file", filepath.Join(root, "scenarios.toml"), "--logs", t.TempDir())
		}},
		{"go-sdk", func(t *testing.T) string { return serve(t, "sdk-memory-sticky") }},
		{"ts-sdk", func(t *testing.T) string { return serve(t, "ts-memory-sticky") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judge(t, tc.name, suite(t, "server", "--url", tc.url(t)), e.forServer(tc.name))
		})
	}
}

// The client scenarios against `stormsim client` with each client kind:
// initialize, tools_call (the suite's add_numbers tool) and sse-retry (the
// stream closes after its priming event with a 500 ms retry hint; the
// client must wait it out and resume with Last-Event-ID). make test-long
// runs it.
func TestConformanceClients(t *testing.T) {
	e := loadExpected(t)
	for _, impl := range []string{"native", "go-sdk", "ts-sdk"} {
		for _, sc := range []struct{ name, tool, args string }{
			{"initialize", "test_reconnection", "{}"},
			{"tools_call", "add_numbers", `{"a": 1, "b": 2}`},
			{"sse-retry", "test_reconnection", "{}"},
		} {
			t.Run(impl+"/"+sc.name, func(t *testing.T) {
				command := fmt.Sprintf("%s client --impl %s --tool %s --args '%s'", bin, impl, sc.tool, sc.args)
				judge(t, "client "+impl, suite(t, "client", "--command", command, "--scenario", sc.name), e.Client[impl])
			})
		}
	}
}
