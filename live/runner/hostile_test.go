package runner

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/report"
)

var (
	hostileOnce sync.Once
	hostilePath string
	hostileErr  error
)

// hostileBin builds testdata/hostile once per test binary.
func hostileBin(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		hostilePath = filepath.Join(testbin.Dir(), "hostile")
		out, err := exec.Command("go", "build", "-o", hostilePath, "./testdata/hostile").CombinedOutput()
		if err != nil {
			hostileErr = fmt.Errorf("building testdata/hostile: %v\n%s", err, out)
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostilePath
}

// startHostile starts testdata/hostile in mode on loopback and returns its
// endpoint; the test stops it.
func startHostile(t *testing.T, mode, other string) string {
	t.Helper()
	cmd := exec.Command(hostileBin(t), "-listen", "127.0.0.1:0", "-mode", mode, "-other", other)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck // killed on purpose
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("hostile %s: %q, %v", mode, line, err)
	}
	return "http://" + addr + "/mcp"
}

// otherHost listens on 127.0.0.2, another host than the target's, and
// counts every request that reaches it.
func otherHost(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("127.0.0.2 is needed as another host on loopback: %v", err)
	}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "the other host", http.StatusTeapot)
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", &n
}

// hostileCase is one mode of testdata/hostile and what a run against it
// must show.
type hostileCase struct {
	mode string
	code int    // the exit code: 99 when calls failed (calls_failed_max = 0)
	note string // a note of the design names the cause
	// check, if set, looks at the design's totals.
	check func(t *testing.T, d *report.Design)
}

// noneCompleted: a result the server sent with the wrong id answers nothing.
func noneCompleted(t *testing.T, d *report.Design) {
	if d.Totals.CallsCompleted != 0 || d.Totals.Calls == 0 {
		t.Errorf("%d of %d calls counted completed: want 0 of some", d.Totals.CallsCompleted, d.Totals.Calls)
	}
}

// severeModes are the modes make test runs, with native and go-sdk
// clients. The native clients' notes name the protocol error; a go-sdk
// client's own error is in the top causes of failed calls.
var severeModes = map[string][2]hostileCase{
	"wrong-id": {
		{"wrong-id", 99, "responses with the id of another request", noneCompleted},
		{"wrong-id", 99, "failed calls, top causes", noneCompleted},
	},
	"unsolicited": {
		{"unsolicited", 99, "responses to a request never sent (unsolicited)", noneCompleted},
		{"unsolicited", 99, "failed calls, top causes", noneCompleted},
	},
	"invalid-json": {
		{"invalid-json", 99, "messages that are not valid JSON", noneCompleted},
		{"invalid-json", 99, "failed calls, top causes", noneCompleted},
	},
	"retry-overflow": {
		{"retry-overflow", 99, "each was clamped to 10m0s", nil},
		{"retry-overflow", 99, "failed calls, top causes", nil},
	},
	"redirect-cross": {
		{"redirect-cross", 99, "redirect to another origin", noneCompleted},
		{"redirect-cross", 99, "redirect to another origin", noneCompleted},
	},
	"redirect-same": {
		{"redirect-same", 0, "hops within the origin were followed", nil},
		{"redirect-same", 0, "", nil},
	},
}

// TestHostile runs the built stormsim, as a child process, against each of
// the six most severe modes of testdata/hostile with native and go-sdk
// clients, all at once: each run ends within duration + drain + 10 s, its
// peak RSS stays under 512 MiB, it exits as the mode says, a note names the
// cause, and no request reaches another host.
func TestHostile(t *testing.T) {
	t.Parallel()
	for mode, cs := range severeModes {
		for i, impl := range []string{"native", "go-sdk"} {
			c := cs[i]
			t.Run(mode+"/"+impl, func(t *testing.T) {
				t.Parallel()
				runHostile(t, c, impl)
			})
		}
	}
}

func runHostile(t *testing.T, c hostileCase, impl string) {
	other, reached := otherHost(t)
	endpoint := startHostile(t, c.mode, other)
	out := t.TempDir()
	profile := "compliant"
	if impl == "go-sdk" {
		profile = "go-sdk"
	}
	cmd := exec.Command(bin, "run", "hostile", "--file", "testdata/hostile.toml", "--engine", "live", "--out", out, "--no-charts", "--quiet",
		"--set", fmt.Sprintf("server.url=%q", endpoint), "--set", "client.impl="+impl, "--set", "client.profile="+profile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	const limit = 4*time.Second + 3*time.Second + 10*time.Second // duration + drain + 10 s
	if took > limit {
		t.Errorf("the run took %v: want within %v", took, limit)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss*1024 >= 512<<20 {
		t.Errorf("peak RSS %d MiB: want under 512 MiB", ru.Maxrss>>10)
	}
	if code == 97 {
		t.Skipf("the host was saturated (exit 97): no verdict\n%s", stderr.String()) // contention from elsewhere, not the server's doing
	}
	if code != c.code {
		t.Errorf("exit %d: want %d\n%s", code, c.code, stderr.String())
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests reached the other host: want 0", n)
	}
	rep, err := report.Read(filepath.Join(out, "hostile", "latest", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := &rep.Designs[0]
	if c.note != "" && !strings.Contains(strings.Join(d.Notes, "\n"), c.note) {
		t.Errorf("no note says %q:\n%s", c.note, strings.Join(d.Notes, "\n"))
	}
	if c.check != nil {
		c.check(t, d)
	}
	t.Logf("%s/%s: exit %d in %v; calls %d completed %d failed %d, resumes %d; notes:\n%s", c.mode, impl, code, took.Round(time.Millisecond),
		d.Totals.Calls, d.Totals.CallsCompleted, d.Totals.CallsFailed, d.Totals.Resumes, strings.Join(d.Notes, "\n"))
	_ = os.Getpid
}
