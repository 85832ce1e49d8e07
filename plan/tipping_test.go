package plan

import (
	"bytes"
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/fluid"
	"github.com/stormsim/stormsim/scenario"
)

// shipped resolves scenario name of the shipped scenarios file.
func shipped(t testing.TB, name string) Loader {
	t.Helper()
	data, err := os.ReadFile("../scenarios.toml")
	if err != nil {
		t.Fatal(err)
	}
	return func(set []string) (*scenario.Scenario, error) {
		f, err := scenario.Parse("scenarios.toml", data, &scenario.Options{Set: set, Target: name})
		if err != nil {
			return nil, err
		}
		return f.Scenario(name)
	}
}

func tipping(t *testing.T, name, spec string, opts *TippingOptions) *Tipping {
	t.Helper()
	r, err := ParseTipping(spec)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Seeds == 0 {
		opts.Seeds = DefaultTippingSeeds
	}
	if opts.Frequency == 0 {
		opts.Frequency = DefaultTippingFrequency
	}
	tp, err := FindTipping(context.Background(), shipped(t, name), r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// fluidLoad is the load at which the fluid model's recovery time from
// bronson-hotos21's outage (300/s, one retry, a 1 s timeout, 10 s) is s
// seconds, by bisection of fluid.Recovery, which rises with the load.
func fluidLoad(s float64) float64 {
	lo, hi := 0.0, 150.0 // recovery is +Inf from mu/(k+1) = 150 up
	for range 60 {
		mid := (lo + hi) / 2
		if fluid.Recovery(fluid.Params{Lambda: mid, Mu: 300, Retries: 1, Timeout: 1, Outage: 10}) <= s {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// The bisection finds bronson-hotos21's boundary under the 60 s recovery
// goal where the fluid model, computed independently of the engine, puts
// it: the load whose recovery time is 60 s (131.7/s). The simulator's
// recovery times agree with the fluid model's within 25% + 5 s (the
// cross-check's tolerance, sim/fluid_test.go), so its boundary lies
// between the loads at which the fluid model recovers in (60-5)/1.25 and
// (60+5)/0.75 s: 126.2 to 136.7/s. The bracket must be no wider than the
// resolution and overlap that band; a search that inverts the frequency
// comparison lands at LO or HI instead.
func TestTippingFindsFluidBoundary(t *testing.T) {
	t.Parallel()
	tp := tipping(t, "bronson-hotos21", "workload.arrival_rate=100..200", &TippingOptions{Resolution: 2.5, Jobs: 2})
	want := fluidLoad(60)
	lo, hi := fluidLoad((60-5)/1.25), fluidLoad((60+5)/0.75)
	d := &tp.Designs[0]
	if d.Outcome != Bracketed {
		t.Fatalf("outcome %s, want a bracket; probes %s", d.Outcome, probesText(d))
	}
	rec, stuck := d.Probes[d.Recovered].Load, d.Probes[d.Stuck].Load
	if stuck <= rec || stuck-rec > 2.5 {
		t.Errorf("bracket %g..%g: want a recovered load below a stuck one, at most 2.5 apart", rec, stuck)
	}
	if stuck < lo || rec > hi {
		t.Errorf("bracket %g..%g is outside the fluid model's band %.1f..%.1f (boundary %.1f)", rec, stuck, lo, hi, want)
	}
	t.Logf("tipping load %g (%s), stuck at %g (%s); fluid %.2f, band %.1f..%.1f", rec, d.Probes[d.Recovered].FrequencyText(), stuck, d.Probes[d.Stuck].FrequencyText(), want, lo, hi)
	// Every probe ran five seeds, from the scenario's 42.
	if !slices.Equal(tp.Seeds, []uint64{42, 43, 44, 45, 46}) {
		t.Errorf("seeds %v, want 42-46", tp.Seeds)
	}
	for _, p := range d.Probes {
		if len(p.RecoveredS) != 5 {
			t.Errorf("probe %g ran %d seeds, want 5", p.Load, len(p.RecoveredS))
		}
	}
}

// The seeds differ and the threshold counts them: near the boundary the
// five seeds disagree, so asking all five to meet the goal tips lower than
// asking one of them to. A search that runs one seed five times, or that
// ignores the threshold, gives the same tipping load for both.
func TestTippingFrequencyCountsSeeds(t *testing.T) {
	t.Parallel()
	load := func(f float64) float64 {
		tp := tipping(t, "bronson-hotos21", "workload.arrival_rate=120..140", &TippingOptions{Resolution: 1, Frequency: f})
		d := &tp.Designs[0]
		if d.Outcome != Bracketed {
			t.Fatalf("frequency %g: outcome %s", f, d.Outcome)
		}
		mixed := false
		for _, p := range d.Probes {
			if p.Met > 0 && p.Met < len(p.RecoveredS) {
				mixed = true
			}
			if p.Recovered != (float64(p.Met)/5 >= f) {
				t.Errorf("frequency %g: probe %g met %d/5 but recovered = %v", f, p.Load, p.Met, p.Recovered)
			}
		}
		if !mixed {
			t.Errorf("frequency %g: no probe where the seeds disagree: %s", f, probesText(d))
		}
		l, _ := d.TippingLoad()
		return l
	}
	all, one := load(1), load(0.2)
	if all >= one {
		t.Errorf("tipping load with every seed recovered %g, with one of five %g: want the first lower", all, one)
	}
}

// Same seed, same bytes, whatever the number of jobs; metastable's four
// designs bisect side by side.
func TestTippingJobsSameBytes(t *testing.T) {
	t.Parallel()
	var got [][]byte
	for _, jobs := range []int{1, 3} {
		tp := tipping(t, "metastable", "workload.arrival_rate=60..140", &TippingOptions{Seeds: 2, Resolution: 10, Jobs: jobs})
		files, err := TippingFiles(tp)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Concat(files[TippingJSONName], files[TippingCSVName], files[TippingMarkdownName]))
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Errorf("tipping files differ between 1 and 3 jobs")
	}
}

// probesText is "load:met/seeds ..." for messages.
func probesText(d *TippingDesign) string {
	var parts []string
	for _, p := range d.Probes {
		parts = append(parts, trim(p.Load)+":"+p.FrequencyText())
	}
	return strings.Join(parts, " ")
}

// probes builds a design's probes from (load, met of 5) pairs.
func probes(pairs ...float64) TippingDesign {
	d := TippingDesign{Design: "d"}
	for i := 0; i < len(pairs); i += 2 {
		p := Probe{Load: pairs[i], Met: int(pairs[i+1]), RecoveredS: make([]*float64, 5)}
		p.Frequency = float64(p.Met) / 5
		p.Recovered = p.Frequency >= 0.8
		d.Probes = append(d.Probes, p)
	}
	return d
}

// The bracket, the next probe and the contradictions of monotonicity.
func TestTippingBracket(t *testing.T) {
	t.Parallel()
	r, err := ParseTipping("workload.arrival_rate=100..200")
	if err != nil {
		t.Fatal(err)
	}
	// Recovered at 100 and 150, not at 200: the next probe is 175.
	d := probes(100, 5, 200, 0, 150, 4)
	if mid, ok := d.next(&r, 10); !ok || mid != 175 {
		t.Errorf("next = %g, %v; want 175", mid, ok)
	}
	// A bracket no wider than the resolution ends the search.
	if _, ok := d.next(&r, 50); ok {
		t.Errorf("next with resolution 50: want none")
	}
	// Recovered at HI: no bracket.
	all := probes(100, 5, 200, 5)
	if _, ok := all.next(&r, 1); ok {
		t.Errorf("recovered at HI: want no next probe")
	}
	d.finish(&r.Axis)
	if d.Outcome != Bracketed || d.Probes[d.Recovered].Load != 150 || d.Probes[d.Stuck].Load != 200 {
		t.Errorf("outcome %s, recovered %d, stuck %d", d.Outcome, d.Recovered, d.Stuck)
	}
	if len(d.Inversions) != 0 {
		t.Errorf("inversions %v, want none", d.Inversions)
	}
	// 3/5 at 120 but 5/5 at the higher 150: reported, not hidden.
	inv := probes(100, 5, 120, 3, 150, 5, 200, 0)
	inv.finish(&r.Axis)
	if len(inv.Inversions) == 0 || !strings.Contains(inv.Inversions[0], "3 of 5 seeds at 120 but on 5 of 5 at the higher load 150") {
		t.Errorf("inversions %q", inv.Inversions)
	}
	for _, c := range []struct {
		d    TippingDesign
		want Outcome
	}{
		{probes(100, 5, 200, 5), PastHi},  // recovered everywhere
		{probes(100, 3, 200, 0), BelowLo}, // not even at LO
	} {
		c.d.finish(&r.Axis)
		if c.d.Outcome != c.want {
			t.Errorf("outcome %s, want %s", c.d.Outcome, c.want)
		}
	}
}

// The design that moves the boundary furthest, ties stated.
func TestTippingFurthest(t *testing.T) {
	t.Parallel()
	r, _ := ParseTipping("workload.arrival_rate=40..300")
	mk := func(name string, pairs ...float64) TippingDesign {
		d := probes(pairs...)
		d.Design = name
		d.finish(&r.Axis)
		return d
	}
	tp := &Tipping{Range: r, Designs: []TippingDesign{
		mk("plain", 40, 5, 100, 5, 105, 1, 300, 0),
		mk("shed", 40, 5, 300, 5),
		mk("budget", 40, 5, 260, 4, 270, 1, 300, 0),
		mk("admission", 40, 5, 300, 5),
	}}
	got := tp.FurthestText()
	want := "shed and admission (a tie): past 300, against 100 for plain: the boundary moves up by more than 200"
	if got != want {
		t.Errorf("furthest:\n got %q\nwant %q", got, want)
	}
	tp.Designs = tp.Designs[:3:3]
	tp.Designs[1] = mk("shed", 40, 5, 200, 5, 210, 0, 300, 0)
	if got, want := tp.FurthestText(), "budget: 260, against 100 for plain: the boundary moves up by 160"; got != want {
		t.Errorf("furthest:\n got %q\nwant %q", got, want)
	}
}

// Bad ranges and options name the flag and what is wrong.
func TestTippingBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ spec, want string }{
		{"workload.arrival_rate", `--tipping "workload.arrival_rate": want KEY=LO..HI`},
		{"workload.arrival_rate=100", `--tipping workload.arrival_rate: "100" is not a range`},
		{"workload.arrival_rate=200..100", "--tipping workload.arrival_rate: empty range: LO 200 is not below HI 100"},
		{"workload.arrival_rate=x..100", `--tipping workload.arrival_rate: range start: "x" is not a number`},
		{"workload.arival_rate=1..2", `--tipping workload.arival_rate: unknown key`},
	} {
		if _, err := ParseTipping(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
	r, _ := ParseTipping("workload.arrival_rate=100..200")
	for _, c := range []struct {
		name string
		opts TippingOptions
		want string
	}{
		{"bronson-hotos21", TippingOptions{Seeds: -1}, "--seeds -1: want at least 1"},
		{"bronson-hotos21", TippingOptions{Frequency: 1.5}, "--recover-frequency 1.5: want a share of the seeds in (0, 1]"},
		{"bronson-hotos21", TippingOptions{Resolution: 100}, "--resolution 100: not below the range's width 100"},
		{"bronson-hotos21", TippingOptions{Base: []string{"workload.arrival_rate=5"}}, "--set workload.arrival_rate: the key is also the tipping load"},
		{"bronson-hotos21", TippingOptions{Designs: []string{"nope"}}, `--designs: scenario bronson-hotos21 has no design "nope"`},
		{"deploy-restart", TippingOptions{}, "scenario deploy-restart runs the session workload"},
	} {
		if c.opts.Seeds == 0 {
			c.opts.Seeds = 5
		}
		if c.opts.Frequency == 0 {
			c.opts.Frequency = 0.8
		}
		_, err := NewTippingSearch(shipped(t, c.name), r, &c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.opts, err, c.want)
		}
	}
}

// The median of the seeds' recovery times: +Inf once half are stuck.
func TestProbeMedian(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	inf := math.Inf(1)
	for _, c := range []struct {
		in   []*float64
		want float64
	}{
		{[]*float64{f(3), f(1), f(2)}, 2},
		{[]*float64{f(3), f(1), f(2), f(10)}, 2.5},
		{[]*float64{f(3), f(inf), f(inf), f(1)}, inf},
		{[]*float64{f(3), f(inf), nil}, inf},
	} {
		if got := (&Probe{RecoveredS: c.in}).MedianS(); got != c.want {
			t.Errorf("median = %g, want %g", got, c.want)
		}
	}
	if got := (&Probe{RecoveredS: []*float64{nil}}).MedianS(); !math.IsNaN(got) {
		t.Errorf("median of no values = %g, want NaN", got)
	}
}

// Issue 37, acceptance 2: metastable's unmitigated server tips between its
// half load (70/s, metastable-half-load, which recovers) and its load
// (140/s, which stays stuck), and the search finds that boundary.
func TestTippingMetastableBetweenHalfAndFull(t *testing.T) {
	t.Parallel()
	tp := tipping(t, "metastable", "workload.arrival_rate=40..300", &TippingOptions{Designs: []string{"req-plain"}, Base: []string{"workload.clients=54000"}})
	d := &tp.Designs[0]
	if d.Outcome != Bracketed {
		t.Fatalf("outcome %s; probes %s", d.Outcome, probesText(d))
	}
	rec, stuck := d.Probes[d.Recovered].Load, d.Probes[d.Stuck].Load
	if rec < 70 || stuck > 140 {
		t.Errorf("req-plain tips between %g and %g: want it recovered at 70/s or above and stuck at 140/s or below; probes %s", rec, stuck, probesText(d))
	}
	if len(tp.Notes) != 0 {
		t.Errorf("notes %q: workload.clients=54000 keeps 300/s arriving for 180 s", tp.Notes)
	}
}

// workload.clients caps the request workload's arrivals: at 300/s the
// shipped metastable's 25,200 run out after 84 s of its 180, and the
// search says so, and how to keep them arriving.
func TestTippingClientsNote(t *testing.T) {
	t.Parallel()
	r, _ := ParseTipping("workload.arrival_rate=40..300")
	s, err := NewTippingSearch(shipped(t, "metastable"), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.t.Notes) != 1 || !strings.Contains(s.t.Notes[0], "at HI after 84 s") || !strings.Contains(s.t.Notes[0], "--set workload.clients=54000") {
		t.Errorf("notes %q", s.t.Notes)
	}
	// Closed-loop clients keep sending once they are in.
	s, err = NewTippingSearch(shipped(t, "incident-zed-deploy"), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.t.Notes) != 0 {
		t.Errorf("closed-loop notes %q, want none", s.t.Notes)
	}
}
