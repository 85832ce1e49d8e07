package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/stormsim/stormsim/calibrate"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// smallScenario is modelled on live-smoke without its faults: 200 clients
// for 30 s whose streams drop every 3 s on average, so that they resume and
// replay from Redis.
const smallScenario = `
[scenario.small]
duration = "30s"
drain = "10s"
replicas = 3
designs = ["redis-events", "redis-shared"]
[scenario.small.workload]
clients = 200
arrival_rate = 100
think = "1s"
events_min = 10
events_max = 30
drop_every = "3s"
`

// calibrate measures a private redis-server and writes a model; a scenario
// that includes it validates, and its simulated replay latency differs from
// the same scenario's without it.
func TestCalibrateIncludeChangesTheSimulation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	model := filepath.Join(dir, "calibrated", "redis.toml")
	code, out, errs := runArgs(t, context.Background(), "calibrate", "--private-redis", "--out", model,
		"--concurrency", "1,8", "--step", "200ms")
	if code != ExitOK {
		t.Fatalf("calibrate: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	for _, want := range []string{"redis 7", "concurrency", "append latency at concurrency 1: p50", "replay latency at concurrency 1",
		"memory of a stream of 384-byte messages: ", "stream-node-max-bytes 4096, stream-node-max-entries 100 (CONFIG GET)", "[store]", "redis_node_bytes = 4096", "wrote " + model} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(model)); len(entries) != 1 {
		t.Errorf("%d files beside the model, want none (no temporary file left)", len(entries)-1)
	}
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Store  map[string]any `toml:"store"`
		Source struct {
			Command string `toml:"command"`
		} `toml:"source"`
	}
	if _, err := toml.Decode(string(data), &file); err != nil {
		t.Fatalf("the model does not parse: %v\n%s", err, data)
	}
	if len(file.Store) != len(calibrate.StoreKeys) || !strings.HasPrefix(file.Source.Command, "stormsim calibrate --private-redis --out ") {
		t.Errorf("model: [store] %v, command %q", file.Store, file.Source.Command)
	}

	with := filepath.Join(dir, "with.toml")
	without := filepath.Join(dir, "without.toml")
	os.WriteFile(with, []byte("[defaults]\nstore_model = \"calibrated/redis.toml\"\n"+smallScenario), 0o644)
	os.WriteFile(without, []byte(smallScenario), 0o644)
	if code, out, errs := runArgs(t, context.Background(), "validate", with); code != ExitOK || !strings.Contains(out, "ok (1 scenario,") {
		t.Fatalf("validate: exit %d, %q %q", code, out, errs)
	}

	// The loaded store is the model's, and not the defaults.
	load := func(path string) *scenario.Scenario {
		t.Helper()
		f, err := scenario.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := f.Scenario("small")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	cal, def := load(with).Designs[0].Store, load(without).Designs[0].Store
	var want topology.StoreConfig = def
	if _, err := toml.Decode(string(data), &struct {
		Store *topology.StoreConfig `toml:"store"`
	}{&want}); err != nil {
		t.Fatal(err)
	}
	if cal != want {
		t.Errorf("the included store\n%+v\nis not the defaults under the model\n%+v", cal, want)
	}
	if cal.RedisLatency == def.RedisLatency || cal.ServiceBase == def.ServiceBase {
		t.Errorf("the calibrated store %+v does not differ from the defaults %+v", cal, def)
	}
	// The node model is read from the file too (at 256-byte events on a
	// default Redis it may well equal the defaults, which were measured so).
	for _, k := range []string{"redis_node_bytes", "redis_node_entries", "redis_entry_overhead_bytes", "redis_node_overhead_bytes", "redis_stream_overhead_bytes"} {
		if _, ok := file.Store[k]; !ok {
			t.Errorf("the model's [store] lacks %s: %v", k, file.Store)
		}
	}
	if cal.RedisNodeBytes != 4096 || cal.RedisNodeEntries != 100 || cal.RedisStreamCost(256).PerNode != 10 {
		t.Errorf("the calibrated store's nodes: %d bytes, %d entries, %d events of 256 bytes each; want 4096, 100 and 10 on a default redis-server",
			cal.RedisNodeBytes, cal.RedisNodeEntries, cal.RedisStreamCost(256).PerNode)
	}

	// Run the simulator on both, through the run command.
	replay := func(file string) map[string]report.Latency {
		t.Helper()
		outDir := t.TempDir()
		if code, _, errs := runArgs(t, context.Background(), "run", "small", "--file", file, "--out", outDir, "--quiet", "--no-charts"); code != ExitOK {
			t.Fatalf("run %s: exit %d: %s", file, code, errs)
		}
		r, err := report.Read(filepath.Join(outDir, "small", "latest"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]report.Latency{}
		for _, d := range r.Designs {
			m[d.Name] = d.ReplayLatencyMS
		}
		return m
	}
	a, b := replay(with), replay(without)
	for _, d := range []string{"redis-events", "redis-shared"} {
		la, lb := a[d], b[d]
		if la.Count == 0 || lb.Count == 0 || la.P50 == nil || lb.P50 == nil || la.P99 == nil || lb.P99 == nil {
			t.Errorf("%s: no replays to compare (with the model %d, without %d)", d, la.Count, lb.Count)
			continue
		}
		t.Logf("%s replay latency: p50 %v ms p99 %v ms with the model, p50 %v ms p99 %v ms without", d, *la.P50, *la.P99, *lb.P50, *lb.P99)
		if *la.P50 == *lb.P50 && *la.P99 == *lb.P99 {
			t.Errorf("%s: replay latency p50 %v ms and p99 %v ms with the model, the same as without", d, *la.P50, *la.P99)
		}
	}
}

// A bad flag or URL, or a Redis that is not there, is one line naming the
// flag, and never shows a password.
func TestCalibrateBadArguments(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close() // nothing listens there now
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, ExitUsage, "want --redis URL or --private-redis"},                                     // nothing to measure
		{[]string{"--redis", closed, "--private-redis"}, ExitUsage, "want --redis URL or --private-redis"}, // two things to measure
		{[]string{"--redis", "redis://u:hunter2@[::1/0"}, ExitUsage, "--redis redis://xxxxx@[::1/0: missing ']' in host"},
		{[]string{"--redis", "http://u:hunter2@host:1"}, ExitUsage, "--redis http://u:xxxxx@host:1: redis: invalid URL scheme: http"},
		{[]string{"--redis", closed}, ExitError, "calibrate: --redis " + closed + ": cannot reach Redis: dial tcp " + closed},
		{[]string{"--redis-url", "redis://u:hunter2@" + closed + "/0"}, ExitError, "--redis redis://u:xxxxx@" + closed + "/0: cannot reach Redis"},
		{[]string{"--redis", closed, "--concurrency", "1,0"}, ExitUsage, `--concurrency "1,0": want a comma-separated list of integers in 1..10000`},
		{[]string{"--redis", closed, "--event-bytes", "0"}, ExitUsage, "--event-bytes 0: want 1..65536"},
		{[]string{"--redis", closed, "--replay-lengths", "5"}, ExitUsage, "--replay-lengths 5: want at least two different lengths"},
		{[]string{"--redis", closed, "--step", "1ms"}, ExitUsage, "--step 1ms: want at least 10ms"},
		{[]string{"--redis", closed, "extra"}, ExitUsage, `want no arguments, got ["extra"]`},
	}
	for _, c := range cases {
		code, out, errs := runArgs(t, context.Background(), append([]string{"calibrate"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("calibrate %v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.args, code, out, errs, c.code, c.want)
		}
		if strings.Contains(errs, "hunter2") {
			t.Errorf("calibrate %v: the password is in the message %q", c.args, errs)
		}
	}
}

// The default event size is the scenarios' default workload.event_bytes.
func TestCalibrateDefaultEventBytes(t *testing.T) {
	t.Parallel()
	f, err := scenario.Parse("x.toml", []byte("[scenario.s]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("s")
	if sc.Workload.EventBytes != calibrate.DefaultEventBytes {
		t.Errorf("calibrate.DefaultEventBytes = %d, the scenarios' default event_bytes = %d", calibrate.DefaultEventBytes, sc.Workload.EventBytes)
	}
}
