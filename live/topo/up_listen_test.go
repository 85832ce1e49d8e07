package topo

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// port is a free loopback port (freePort).
func port(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// `stormsim up` in a pod: the LB and the control endpoint on fixed ports
// (every interface, or loopback), the state file naming the --advertise
// host, and `stormsim fault --up STATE` reaching up through that URL.
func TestUpListenAdvertise(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	for _, tc := range []struct {
		name, host, advertise string
		wantHost              string // in the state file's URLs
		open                  bool   // the control endpoint is off loopback
	}{
		// as the Kubernetes Deployment runs it: every interface, a Service name
		{"every interface", "0.0.0.0", "localhost", "localhost", true},
		// fixed loopback ports and no --advertise: the listening host
		{"loopback", "127.0.0.1", "", "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lbPort, ctlPort := port(t), port(t)
			args := []string{"steady", "--design", "memory-sticky", "--file", abs, "--no-schedule",
				"--listen", net.JoinHostPort(tc.host, strconv.Itoa(lbPort)),
				"--control-listen", net.JoinHostPort(tc.host, strconv.Itoa(ctlPort)), "--allow-host", "mcp.example"}
			if tc.advertise != "" {
				args = append(args, "--advertise", tc.advertise)
			}
			p := startUp(t, args...)
			wantEndpoint := "http://" + net.JoinHostPort(tc.wantHost, strconv.Itoa(lbPort)) + "/mcp"
			wantControl := "http://" + net.JoinHostPort(tc.wantHost, strconv.Itoa(ctlPort))
			b, err := os.ReadFile(p.state)
			if err != nil {
				t.Fatal(err)
			}
			var st struct{ Endpoint, Control string }
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			if st.Endpoint != wantEndpoint || st.Control != wantControl || p.endpoint != wantEndpoint {
				t.Errorf("state file endpoint %q control %q, printed endpoint %q; want %q and %q", st.Endpoint, st.Control, p.endpoint, wantEndpoint, wantControl)
			}
			if !strings.Contains(p.stdout.String(), "control: "+wantControl+"\n") {
				t.Errorf("the printed control line is not %s: %s", wantControl, p.stdout.String())
			}
			// A client reaches the LB at the advertised URL.
			r := postJSON(t, st.Endpoint, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{}})
			r.Body.Close()
			if r.StatusCode != 200 {
				t.Errorf("initialize at %s: %d", st.Endpoint, r.StatusCode)
			}
			// The LB passes the client's Host through: the replicas answer
			// an --allow-host name, and refuse another (DNS rebinding).
			for host, want := range map[string]int{"mcp.example:80": 200, "evil.example.com": 403} {
				if got := initializeAs(t, st.Endpoint, host); got != want {
					t.Errorf("initialize with Host %s: %d, want %d", host, got, want)
				}
			}
			// stormsim fault reaches up at the advertised control URL.
			before := p.readState().Replicas[1].PID
			out := p.fault("restart", "1", "--hard")
			if !strings.Contains(out, "applied: replica 1 killed (SIGKILL)\napplied: replica 1 started") {
				t.Errorf("stormsim fault restart 1 --hard printed %q", out)
			}
			if after := p.readState().Replicas[1]; after.PID == before || after.State != SlotServing {
				t.Errorf("slot 1 after the restart: %+v (pid before %d)", after, before)
			}
			// Its log, up to the fault, says whether the control endpoint
			// is open to the network.
			p.waitLog("on demand: replica 1 killed (SIGKILL)")
			if open := strings.Contains(p.stderr.String(), "is open to the network"); open != tc.open {
				t.Errorf("up's log says the control endpoint is open to the network: %v, want %v: %s", open, tc.open, p.stderr.String())
			}
		})
	}
}

// An --listen address up cannot listen on (a port taken) stops up before
// it starts anything, with an error naming the flag; a malformed one is a
// usage error (exit 2) naming the flag.
func TestUpListenRefused(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("../../scenarios.toml")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		flags []string
		code  int
		want  string
	}{
		// the port is someone else's
		{[]string{"--listen", taken.Addr().String()}, 1, "up: --listen " + taken.Addr().String() + ": topo: the LB cannot listen on"},
		// the control endpoint's port is someone else's
		{[]string{"--control-listen", taken.Addr().String()}, 1, "up: --control-listen " + taken.Addr().String() + ": listen tcp"},
		// no port
		{[]string{"--listen", "0.0.0.0"}, 2, `up: --listen "0.0.0.0": want host:port`},
		// a port that is no number
		{[]string{"--control-listen", "127.0.0.1:http8"}, 2, `up: --control-listen "127.0.0.1:http8": the port "http8" is not a number`},
		// a URL where a host belongs
		{[]string{"--advertise", "http://stormsim-up:8080"}, 2, `up: --advertise "http://stormsim-up:8080": want a host name or an IP address, not a URL`},
		// a port where a host alone belongs
		{[]string{"--advertise", "stormsim-up:8080"}, 2, `up: --advertise "stormsim-up:8080": want a host alone, without a port`},
	} {
		logs := t.TempDir()
		cmd := exec.Command(bin, append([]string{"up", "steady", "--design", "memory-sticky", "--file", abs, "--logs", logs}, tc.flags...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("up %v: exit %d, output %q; want exit %d and %q", tc.flags, code, out, tc.code, tc.want)
		}
		if strings.Contains(string(out), "slot 0 pid") {
			t.Errorf("up %v started a replica before it failed: %s", tc.flags, out)
		}
	}
}

// initializeAs sends an initialize to endpoint with Host host and returns
// the status.
func initializeAs(t *testing.T, endpoint, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
