package scenario

import (
	"strings"
	"testing"
	"time"
)

// A [server] table loads into Design.Own with its defaults, merged across
// layers; anything wrong is an error naming the file, the key and the
// problem.
func TestOwnServerKeys(t *testing.T) {
	t.Parallel()
	const base = `
[scenario.s]
designs = ["memory-sticky"]
duration = "10s"
`
	f, err := Parse("s.toml", []byte(base+`
[scenario.s.server]
command = "node server.mjs --port {port}"
[scenario.s.server.env]
NODE_ENV = "production"
[scenario.s.replica]
drain_limit = "7s"
`), &Options{Set: []string{"server.endpoint=/rpc"}, Target: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("s")
	o := sc.Designs[0].Own
	if o == nil || o.Endpoint != "/rpc" || o.Ready != "/rpc" || o.ReadyTimeout != 30*time.Second || o.StopSignal != "TERM" ||
		o.DrainTimeout != 7*time.Second || o.Env["NODE_ENV"] != "production" {
		t.Errorf("own server %+v", o)
	}
	if got := string(o.ToolArguments(12, 200, 64)); got != `{"events": 12, "interval_ms": 200, "bytes": 64}` {
		t.Errorf("arguments %s", got)
	}
	if o.Tool.Progress != ProgressIncreasing || !o.HonoursEvents() {
		t.Errorf("tool %+v: want increasing progress, told the length", o.Tool)
	}
	for _, tc := range []struct {
		name, toml, want string
	}{
		{"scenario string", `server = "go-sdk"`, `s.toml: scenario.s.server: want a table of the server you bring`},
		{"neither", "[scenario.s.server]\nendpoint = \"/mcp\"", `s.toml: scenario.s.server.command: missing: set command`},
		{"no port", "[scenario.s.server]\ncommand = \"node server.mjs\"", `scenario.s.server.command: has no {port} placeholder`},
		{"both", "[scenario.s.server]\ncommand = \"x {port}\"\nurl = \"http://h/mcp\"", `scenario.s.server.url: a server is started by command or reached at url, not both`},
		{"bad url", "[scenario.s.server]\nurl = \"h:1\"", `scenario.s.server.url: "h:1" is not an http:// or https:// URL`},
		{"signal", "[scenario.s.server]\ncommand = \"x {port}\"\nstop_signal = \"FOO\"", `scenario.s.server.stop_signal: "FOO" is not one of TERM, INT`},
		{"arguments", "[scenario.s.server]\ncommand = \"x {port}\"\n[scenario.s.server.tool]\narguments = '{\"n\": {events'", `scenario.s.server.tool.arguments: is not a JSON object`},
		{"progress", "[scenario.s.server]\ncommand = \"x {port}\"\n[scenario.s.server.tool]\nprogress = \"ratio\"", `scenario.s.server.tool.progress: "ratio" is not one of increasing, index, opaque`},
		{"hook kind", "[scenario.s.server]\ncommand = \"x {port}\"\n[scenario.s.server.fault_hook]\nreboot = \"x\"", `scenario.s.server.fault_hook.reboot: not a fault kind`},
		{"unknown key", "[scenario.s.server]\ncomand = \"x {port}\"", `scenario.s.server.comand: unknown key (valid: command, env, ready`},
		{"bare duration", "[scenario.s.server]\ncommand = \"x {port}\"\nready_timeout = 5", `scenario.s.server.ready_timeout: want a duration string`},
		{"store fault", "[scenario.s.server]\ncommand = \"x {port}\"\n[[scenario.s.faults]]\nkind = \"store-outage\"\nat = \"1s\"\nduration = \"1s\"",
			`scenario.s.server.command: faults[0] (kind "store-outage") needs the Redis stormsim starts`},
		{"design flavour and table", "[scenario.s.server]\ncommand = \"x {port}\"\n[design.memory-sticky]\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\nserver = \"go-sdk\"",
			`design.memory-sticky.server: "go-sdk" is a built-in server, but s.toml: scenario.s brings its own`},
		{"design integer", "[design.memory-sticky]\nmode = \"stateful\"\nsessions = \"local\"\nevents = \"memory\"\nserver = 3",
			`design.memory-sticky.server: want a built-in server (reference, go-sdk, ts-sdk) or a table`},
	} {
		_, err := Parse("s.toml", []byte(base+tc.toml+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// --set server.* wins over a design's own [server] table: run --target on a
// scenario whose design brings a command aims at the URL and starts nothing.
func TestOwnServerSetWinsOverDesign(t *testing.T) {
	t.Parallel()
	f, err := Parse("s.toml", []byte(`
[design.mine]
mode = "stateful"
sessions = "local"
events = "memory"
[design.mine.server]
command = "node server.mjs --port {port}"
endpoint = "/rpc"
[scenario.s]
designs = ["mine"]
duration = "10s"
`), &Options{Set: []string{`server.url="http://staging.example:8080/rpc"`, `server.command=""`}, Target: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("s")
	if o := sc.Designs[0].Own; o == nil || o.URL != "http://staging.example:8080/rpc" || o.Command != "" || o.Endpoint != "/rpc" {
		t.Errorf("own server %+v: want the --set url, no command, the design's endpoint", o)
	}
}
