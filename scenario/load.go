package scenario

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/topology"
)

// top holds the scenario-level keys that [defaults] and [scenario.NAME] share.
type top struct {
	Description string        `toml:"description"`
	Seed        int64         `toml:"seed"`
	Duration    time.Duration `toml:"duration"`
	Drain       time.Duration `toml:"drain"`
	Step        time.Duration `toml:"step"`
	Replicas    int           `toml:"replicas"`
	LB          string        `toml:"lb"`
	Era         string        `toml:"era"`
	RTT         time.Duration `toml:"rtt"`
	Designs     []string      `toml:"designs"`
	// StoreModel names a store-model file (stormsim calibrate writes
	// them); see loader.storeModel.
	StoreModel string `toml:"store_model"`
}

// subs holds the sub-tables of a layer, decoded later, one at a time.
type subs struct {
	Workload toml.Primitive `toml:"workload"`
	Client   toml.Primitive `toml:"client"`
	Store    toml.Primitive `toml:"store"`
	Replica  toml.Primitive `toml:"replica"`
	// Server is a server the user brings: a table (OwnServer).
	Server toml.Primitive `toml:"server"`
	// Isolation holds the isolation probes' settings (Isolation).
	Isolation toml.Primitive `toml:"isolation"`
	// HealthCheck holds `stormsim up`'s LB health check (HealthCheck).
	HealthCheck toml.Primitive `toml:"health_check"`
	// Limits holds the live clients' limits (Limits).
	Limits toml.Primitive `toml:"limits"`
}

// scenarioOnly holds what only a [scenario.NAME] block may have.
type scenarioOnly struct {
	Faults    []toml.Primitive `toml:"faults"`
	Expect    toml.Primitive   `toml:"expect"`
	Goals     toml.Primitive   `toml:"goals"`
	Agreement toml.Primitive   `toml:"agreement"`
	Orderings []toml.Primitive `toml:"orderings"`
	Nightly   toml.Primitive   `toml:"nightly"`
}

type designTop struct {
	Description string `toml:"description"`
	Mode        string `toml:"mode"`
	Sessions    string `toml:"sessions"`
	Events      string `toml:"events"`
	LB          string `toml:"lb"`
	Era         string `toml:"era"`
	StoreModel  string `toml:"store_model"`
	// Server is a built-in flavour (a string, topology.Servers) or a
	// server the user brings (a table, OwnServer); see loader.ownServer.
	Server toml.Primitive `toml:"server"`
}

type designSubs struct {
	Client  toml.Primitive `toml:"client"`
	Store   toml.Primitive `toml:"store"`
	Replica toml.Primitive `toml:"replica"`
}

type rawFile struct {
	Defaults toml.Primitive            `toml:"defaults"`
	Design   map[string]toml.Primitive `toml:"design"`
	Scenario map[string]toml.Primitive `toml:"scenario"`
}

// Options changes how a file is loaded. A nil *Options means none.
type Options struct {
	// Set holds key=value overrides (for example "workload.clients=500"),
	// applied to the scenario named Target as a layer above it.
	Set    []string
	Target string
}

// File is a loaded, validated scenarios file.
type File struct {
	Path      string
	names     []string
	designs   []string
	scenarios map[string]*Scenario
}

// Names lists the scenarios in file order.
func (f *File) Names() []string { return f.names }

// DesignNames lists every defined design, sorted.
func (f *File) DesignNames() []string { return f.designs }

// Scenario returns the resolved scenario by name.
func (f *File) Scenario(name string) (*Scenario, error) {
	s, ok := f.scenarios[name]
	if !ok {
		return nil, fmt.Errorf("%s: no scenario %q (defined: %s)", f.Path, name, strings.Join(f.names, ", "))
	}
	return s, nil
}

// Load reads and validates path.
func Load(path string, opts *Options) (*File, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, data, opts)
}

// layer is one source of settings: a table in some TOML document.
type layer struct {
	md    *toml.MetaData
	prim  toml.Primitive
	path  []string // where the table sits in md
	where string   // how messages name the source: "scenarios.toml: scenario.x" or "--set"
}

func (l *layer) defined(key ...string) bool {
	return l.md.IsDefined(append(slices.Clone(l.path), key...)...)
}

// loader collects every problem as it goes.
type loader struct {
	file  string
	md    toml.MetaData
	setMD *toml.MetaData
	raw   rawFile
	errs  []error
	// models caches the store-model files read, by path.
	models map[string]*storeModel
}

func (ld *loader) errorf(where, format string, args ...any) {
	ld.errs = append(ld.errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
}

var tomlErrRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "(.*)"\): (.*)$`)

// decodeErr turns a BurntSushi error into "file: line N: key: problem".
func (ld *loader) decodeErr(where string, err error) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		key := strings.TrimPrefix(pe.LastKey, "set.")
		msg := pe.Message
		if key != "" {
			msg = key + ": " + msg
		}
		if line := pe.Position.Line; line > 0 && !strings.HasPrefix(where, "--set") {
			ld.errorf(where, "line %d: %s", line, msg)
			return
		}
		ld.errorf(where, "%s", msg)
		return
	}
	if m := tomlErrRE.FindStringSubmatch(err.Error()); m != nil {
		key := m[2]
		if strings.HasPrefix(where, "--set") {
			key = strings.TrimPrefix(key, "set.")
		}
		if m[1] != "" && !strings.HasPrefix(where, "--set") {
			ld.errorf(where, "line %s: %s: %s", m[1], key, m[3])
			return
		}
		ld.errorf(where, "%s: %s", key, m[3])
		return
	}
	ld.errorf(where, "%s", strings.TrimPrefix(err.Error(), "toml: "))
}

func (ld *loader) decode(l *layer, p toml.Primitive, v any) {
	if err := l.md.PrimitiveDecode(p, v); err != nil {
		where := ld.file // the message names the full key path itself
		if l.where == "--set" {
			where = "--set"
		}
		ld.decodeErr(where, err)
	}
}

// Parse validates data read from name (used in messages).
func Parse(name string, data []byte, opts *Options) (*File, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := shapeErr(name, data); err != nil {
		return nil, err
	}
	ld := &loader{file: name}
	md, err := toml.Decode(string(data), &ld.raw)
	if err != nil {
		ld.decodeErr(name, err)
		return nil, errors.Join(ld.errs...)
	}
	ld.md = md
	f := &File{Path: name, scenarios: map[string]*Scenario{}}

	ld.listNames(f)
	if len(f.names) == 0 {
		ld.errorf(name, "no [scenario.NAME] blocks: nothing to run")
	}

	var set *layer
	if len(opts.Set) > 0 {
		set = ld.setLayer(opts.Set)
		if set != nil && opts.Target != "" && !slices.Contains(f.names, opts.Target) {
			ld.errorf(name, "no scenario %q (defined: %s)", opts.Target, strings.Join(f.names, ", "))
		}
	}
	ld.decodeDesigns(name)
	for _, n := range append(slices.Clone(f.names), sortedKeys(ld.raw.Design)...) {
		if !validName(n) {
			ld.errorf(name, "%q is not a valid scenario or design name: use letters, digits, '.', '_' and '-' (it names result folders)", n)
		}
	}
	for _, n := range f.names {
		var layers []*layer
		if md.IsDefined("defaults") {
			layers = append(layers, &layer{md: &ld.md, prim: ld.raw.Defaults, path: []string{"defaults"}, where: name + ": defaults"})
		}
		layers = append(layers, &layer{md: &ld.md, prim: ld.raw.Scenario[n], path: []string{"scenario", n}, where: name + ": scenario." + n})
		if set != nil && n == opts.Target {
			layers = append(layers, set)
		}
		if s := ld.resolve(n, layers); s != nil {
			f.scenarios[n] = s
		}
	}
	ld.checkUnused(f, name) // a design no scenario runs, against the defaults
	// Every key, not only the undecoded ones: the decoder matches field
	// names case-insensitively as a fallback, and a strict schema must not.
	ld.unknownKeys(md.Keys(), name, "")
	if set != nil {
		ld.unknownKeys(set.md.Keys(), "--set", "set")
	}
	if len(ld.errs) > 0 {
		return nil, errors.Join(uniqueErrors(ld.errs)...)
	}
	return f, nil
}

// listNames lists the file's scenarios in file order and its designs,
// built in and defined, sorted.
func (ld *loader) listNames(f *File) {
	// Scenario names in file order.
	for _, k := range ld.md.Keys() {
		if len(k) >= 2 && k[0] == "scenario" && !slices.Contains(f.names, k[1]) {
			f.names = append(f.names, k[1])
		}
	}
	for n := range builtinDesigns {
		f.designs = append(f.designs, n)
	}
	for n := range ld.raw.Design {
		if _, ok := builtinDesigns[n]; !ok {
			f.designs = append(f.designs, n)
		}
	}
	sort.Strings(f.designs)
}

// decodeDesigns decodes every design once, so that its unknown keys are
// reported even when no scenario uses it.
func (ld *loader) decodeDesigns(name string) {
	for _, n := range sortedKeys(ld.raw.Design) {
		l := &layer{md: &ld.md, prim: ld.raw.Design[n], path: []string{"design", n}, where: name + ": design." + n}
		var dt designTop
		var ds designSubs
		ld.decode(l, l.prim, &dt)
		ld.decode(l, l.prim, &ds)
		var c clients.Config
		var s topology.StoreConfig
		var r topology.ReplicaConfig
		ld.decode(l, ds.Client, &c)
		ld.decode(l, ds.Store, &s)
		ld.decode(l, ds.Replica, &r)
	}
}

// checkUnused checks every design no scenario runs, against the defaults.
func (ld *loader) checkUnused(f *File, name string) {
	used := map[string]bool{}
	for _, sc := range f.scenarios {
		for _, d := range sc.Designs {
			used[d.Name] = true
		}
	}
	for _, dn := range sortedKeys(ld.raw.Design) {
		if used[dn] {
			continue
		}
		var layers []*layer
		if ld.md.IsDefined("defaults") {
			layers = append(layers, &layer{md: &ld.md, prim: ld.raw.Defaults, path: []string{"defaults"}, where: name + ": defaults"})
		}
		t := builtinTop()
		sub := make([]subs, len(layers))
		for i, l := range layers {
			ld.decode(l, l.prim, &t)
			ld.decode(l, l.prim, &sub[i])
		}
		ld.design(dn, t, layers, sub)
	}
}

// uniqueErrors drops repeated errors: a key inherited by every design
// fails once per design, and is said once.
func uniqueErrors(errs []error) []error {
	var uniq []error
	seen := map[string]bool{}
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			uniq = append(uniq, e)
		}
	}
	return uniq
}

// validName reports whether n is safe as a folder name.
func validName(n string) bool {
	if n == "" || n == "." || n == ".." || len(n) > 100 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// setLayer turns --set key=value pairs into one TOML layer.
func (ld *loader) setLayer(pairs []string) *layer {
	var b strings.Builder
	b.WriteString("[set]\n")
	ok := true
	for _, p := range pairs {
		k, v, found := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !found || k == "" {
			ld.errorf("--set "+p, "want key=value, for example workload.clients=500")
			ok = false
			continue
		}
		line := k + " = " + strings.TrimSpace(v) + "\n"
		if err := shapeErr("--set "+k, []byte(line)); err != nil {
			ld.errs = append(ld.errs, err)
			ok = false
			continue
		}
		var probe map[string]any
		if _, err := toml.Decode(line, &probe); err != nil {
			line = k + " = " + strconv.Quote(strings.TrimSpace(v)) + "\n"
			if _, err := toml.Decode(line, &probe); err != nil {
				ld.errorf("--set "+p, "%q is not a valid key", k)
				ok = false
				continue
			}
		}
		b.WriteString(line)
	}
	if !ok {
		return nil
	}
	var doc struct {
		Set toml.Primitive `toml:"set"`
	}
	md, err := toml.Decode(b.String(), &doc)
	if err != nil {
		if strings.Contains(err.Error(), "already been defined") {
			ld.errorf("--set", "a key is given twice: %s", strings.ReplaceAll(err.Error(), "set.", ""))
			return nil
		}
		ld.decodeErr("--set", err)
		return nil
	}
	ld.setMD = &md
	return &layer{md: &md, prim: doc.Set, path: []string{"set"}, where: "--set"}
}

// liveTables decodes the scenario's tables only the live engine and up
// read (isolation, health_check, limits) over their defaults, layer by
// layer.
func (ld *loader) liveTables(s *Scenario, layers []*layer, sub []subs) {
	s.HealthCheck = HealthCheck{Interval: time.Second, Threshold: 2}
	s.Limits = DefaultLimits
	for i, l := range layers {
		if l.defined("isolation") {
			ld.decode(l, sub[i].Isolation, &s.Isolation)
		}
		if l.defined("health_check") {
			ld.decode(l, sub[i].HealthCheck, &s.HealthCheck)
		}
		if l.defined("limits") {
			ld.decode(l, sub[i].Limits, &s.Limits)
		}
	}
}

// origin names the layer that last defined key, for messages.
func origin(layers []*layer, key ...string) string {
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		if l.defined(key...) {
			k := strings.Join(key, ".")
			if l.where == "--set" {
				return "--set " + k
			}
			return l.where + "." + k
		}
	}
	return "built-in default " + strings.Join(key, ".")
}

func (ld *loader) resolve(name string, layers []*layer) *Scenario {
	nerr := len(ld.errs)
	t := builtinTop()
	sub := make([]subs, len(layers))
	for i, l := range layers {
		if l.defined("designs") {
			t.Designs = nil // a list replaces the inherited one; decoding would overwrite it in place
		}
		ld.decode(l, l.prim, &t)
		ld.decode(l, l.prim, &sub[i])
	}
	scLayer := layers[len(layers)-1]
	for _, l := range layers {
		if l.path[0] == "scenario" {
			scLayer = l
		}
	}
	var only scenarioOnly
	ld.decode(scLayer, scLayer.prim, &only)

	s := &Scenario{
		Name: name, Description: t.Description, Seed: uint64(max(t.Seed, 0)), Duration: t.Duration, Drain: t.Drain,
		Step: t.Step, Replicas: t.Replicas, LB: t.LB, Era: t.Era, RTT: t.RTT,
	}
	s.Workload = builtinWorkload()
	for i, l := range layers {
		if l.defined("workload") {
			ld.decode(l, sub[i].Workload, &s.Workload)
		}
	}
	ld.liveTables(s, layers, sub)
	ld.validateTop(s, t, layers)
	if t.Seed < 0 {
		ld.errorf(origin(layers, "seed"), "%d is negative (want 0..9223372036854775807)", t.Seed)
	}

	ld.faultBlocks(scLayer, only.Faults, t, s)

	if len(t.Designs) == 0 {
		ld.errorf(origin(layers, "designs"), "the list is empty")
	}
	seen := map[string]bool{}
	for i, dn := range t.Designs {
		if seen[dn] {
			ld.errorf(origin(layers, "designs"), "%q is listed twice", dn)
			continue
		}
		seen[dn] = true
		d, ok := ld.design(dn, t, layers, sub)
		if !ok {
			ld.errorf(fmt.Sprintf("%s[%d]", origin(layers, "designs"), i), "unknown design %q (defined: %s)", dn, strings.Join(ld.definedDesigns(), ", "))
			continue
		}
		s.Designs = append(s.Designs, d)
		if d.Own != nil {
			key := "command"
			if d.Own.URL != "" {
				key = "url"
			}
			for _, e := range d.Own.refused(s.Faults, s.FaultContext()) {
				ld.errorf(origin(append(slices.Clone(layers), ld.designLayer(dn)...), "server", key), "%s", e)
			}
		}
	}
	ld.requestWorkload(s, layers, scLayer)
	ld.judging(scLayer, &only, s)
	if len(ld.errs) > nerr {
		return nil
	}
	s.Warnings = ld.warnings(s, layers)
	return s
}

// faultBlocks parses [[scenario.NAME.faults]], each block checked against its
// kind's keys and validated against the scenario's shape.
func (ld *loader) faultBlocks(scLayer *layer, blocks []toml.Primitive, t top, s *Scenario) {
	ctx := s.FaultContext()
	for i, p := range blocks {
		where := fmt.Sprintf("%s.faults[%d]", scLayer.where, i)
		var k struct {
			Kind string `toml:"kind"`
		}
		ld.decode(scLayer, p, &k)
		if k.Kind == "" {
			ld.errorf(where, "kind: missing (valid: %s)", strings.Join(faults.Kinds(), ", "))
			continue
		}
		f, err := faults.New(k.Kind)
		if err != nil {
			ld.errorf(where, "kind: %q is not a fault kind (valid: %s)", k.Kind, strings.Join(faults.Kinds(), ", "))
			continue
		}
		var keys map[string]any
		ld.decode(scLayer, p, &keys)
		valid := tomlKeys(reflect.TypeOf(f).Elem())
		for _, key := range sortedKeys(keys) {
			if !slices.Contains(valid, key) {
				ld.errorf(where, "%s: unknown key for kind %q (valid: %s)", key, k.Kind, strings.Join(valid, ", "))
			}
		}
		ld.decode(scLayer, p, f)
		if t.Duration > 0 && t.Replicas > 0 {
			for _, e := range f.Validate(ctx) {
				ld.errorf(where, "%v", e)
			}
		}
		s.Faults = append(s.Faults, f)
	}
}

// judging parses the tables that judge a run rather than shape it:
// expect, goals, orderings, nightly and agreement.
func (ld *loader) judging(scLayer *layer, only *scenarioOnly, s *Scenario) {
	if scLayer.defined("expect") {
		if t := scLayer.md.Type(append(slices.Clone(scLayer.path), "expect")...); t != "Hash" && t != "" {
			ld.errorf(scLayer.where+".expect", "want a table of thresholds ([%s.expect]), got %s", strings.Join(scLayer.path, "."), strings.ToLower(t))
		} else {
			var raw map[string]any
			ld.decode(scLayer, only.Expect, &raw)
			s.Expect = ld.expect(scLayer.where+".expect", raw, s)
		}
	}
	if scLayer.defined("goals") {
		ld.goals(scLayer, only.Goals, s)
	}
	for i, p := range only.Orderings {
		where := fmt.Sprintf("%s.orderings[%d]", scLayer.where, i)
		var keys map[string]any
		ld.decode(scLayer, p, &keys)
		for _, k := range sortedKeys(keys) {
			if !slices.Contains([]string{"metric", "lower", "than"}, k) {
				ld.errorf(where, "%s: unknown key (valid: metric, lower, than)", k)
			}
		}
		var o Ordering
		ld.decode(scLayer, p, &o)
		if !report.IsMetric(o.Metric) {
			ld.errorf(where+".metric", "%q is not a metric (metrics: %s)", o.Metric, strings.Join(report.MetricNames(), ", "))
		}
		// Any defined design may be named, as in expect: --set designs=[...]
		// may run a subset, and a claim about a design not run is left out.
		defined := ld.definedDesigns()
		if !slices.Contains(defined, o.Lower) {
			ld.errorf(where+".lower", "%q is not a design (defined: %s)", o.Lower, strings.Join(defined, ", "))
		}
		if len(o.Than) == 0 {
			ld.errorf(where+".than", "want the designs %q is claimed to be lower than", o.Lower)
		}
		for _, d := range o.Than {
			if !slices.Contains(defined, d) || d == o.Lower {
				ld.errorf(where+".than", "%q is not another design (defined: %s)", d, strings.Join(defined, ", "))
			}
		}
		s.Orderings = append(s.Orderings, o)
	}
	if scLayer.defined("nightly") {
		ld.nightly(scLayer, only.Nightly, s)
	}
	if scLayer.defined("agreement") {
		var raw map[string]any
		ld.decode(scLayer, only.Agreement, &raw)
		s.Agreement = map[string]float64{}
		for _, k := range sortedKeys(raw) {
			where := scLayer.where + ".agreement." + k
			if !slices.Contains(AgreementKeys, k) {
				ld.errorf(where, "unknown tolerance (valid: %s)", strings.Join(AgreementKeys, ", "))
				continue
			}
			var f float64
			switch n := raw[k].(type) {
			case int64:
				f = float64(n)
			case float64:
				f = n
			default:
				ld.errorf(where, "%v is not a number", raw[k])
				continue
			}
			if f < 0 || (f == 0 && !strings.HasSuffix(k, "_rel")) || (strings.HasSuffix(k, "_factor") && f < 1) {
				ld.errorf(where, "%v must be above 0 (a relative part at least 0, a factor at least 1)", f)
				continue
			}
			s.Agreement[k] = f
		}
	}
}

// goals parses [scenario.NAME.goals]: the service goals `stormsim plan`
// judges designs by, as <metric>_max / <metric>_min bounds for every
// design. A goal replaces the planner's default for the same metric and
// direction; unlike expect, it has no per-design tables.
func (ld *loader) goals(l *layer, p toml.Primitive, s *Scenario) {
	where := l.where + ".goals"
	if t := l.md.Type(append(slices.Clone(l.path), "goals")...); t != "Hash" && t != "" {
		ld.errorf(where, "want a table of goals ([%s.goals]), got %s", strings.Join(l.path, "."), strings.ToLower(t))
		return
	}
	var raw map[string]any
	ld.decode(l, p, &raw)
	for _, key := range sortedKeys(raw) {
		if _, ok := raw[key].(map[string]any); ok {
			ld.errorf(where+"."+key, "a goal holds for every design: want <metric>_max or <metric>_min = N, not a table")
			continue
		}
		c, err := parseCheck(key, raw[key])
		if err != nil {
			ld.errorf(where+"."+key, "%v", err)
			continue
		}
		s.Goals = append(s.Goals, c)
	}
}

// nightly parses [scenario.NAME.nightly]: how stormsim nightly runs the
// scenario (engine "sim" or "live", and the seeds and designs of a live
// run). It runs after the designs are resolved.
func (ld *loader) nightly(l *layer, p toml.Primitive, s *Scenario) {
	where := l.where + ".nightly"
	if t := l.md.Type(append(slices.Clone(l.path), "nightly")...); t != "Hash" && t != "" {
		ld.errorf(where, "want a table, e.g. nightly = { engine = \"live\", seeds = 3 }, got %s", strings.ToLower(t))
		return
	}
	var raw map[string]any
	ld.decode(l, p, &raw)
	n := Nightly{Engine: "sim", Seeds: 1}
	for _, k := range sortedKeys(raw) {
		switch k {
		case "engine":
			e, ok := raw[k].(string)
			if !ok || (e != "sim" && e != "live") {
				ld.errorf(where+".engine", "%v is not an engine for the nightly run (valid: sim, live)", raw[k])
				continue
			}
			n.Engine = e
		case "seeds":
			v, ok := raw[k].(int64)
			if !ok || v < 1 || v > 100 {
				ld.errorf(where+".seeds", "%v is not a whole number of seeds in 1..100", raw[k])
				continue
			}
			n.Seeds = int(v)
		case "designs":
			list, ok := raw[k].([]any)
			if !ok || len(list) == 0 {
				ld.errorf(where+".designs", "want a list of the scenario's designs, got %v", raw[k])
				continue
			}
			for _, v := range list {
				d, ok := v.(string)
				// Any defined design may be named: --set designs=[...] may run
				// a subset, and a nightly design the run does not include is
				// left out (Scenario.NightlyDesigns).
				if !ok || (!slices.ContainsFunc(s.Designs, func(x Design) bool { return x.Name == d }) && !slices.Contains(ld.definedDesigns(), d)) {
					var names []string
					for _, x := range s.Designs {
						names = append(names, x.Name)
					}
					ld.errorf(where+".designs", "%v is not a design of this scenario (designs: %s)", v, strings.Join(names, ", "))
					continue
				}
				n.Designs = append(n.Designs, d)
			}
		default:
			ld.errorf(where+"."+k, "unknown key (valid: engine, seeds, designs)")
		}
	}
	s.Nightly = n
}

// AgreementKeys are the tolerances [scenario.NAME.agreement] may set for
// --engine both: per count row the absolute part (KEY) and the relative
// part (KEY_rel) of max(abs, rel·|sim|); factors for replay latency and
// the store's peak size.
var AgreementKeys = []string{
	"lost_fraction", "lost_fraction_rel", "http_404_per_100", "http_404_per_100_rel", "drops_resumed", "drops_resumed_rel",
	"reissued_per_100", "reissued_per_100_rel", "failed_per_100", "failed_per_100_rel", "reconnects_per_call", "reconnects_per_call_rel",
	"http_503_per_100", "http_503_per_100_rel", "recovery_s", "recovery_s_rel", "replay_latency_factor", "store_peak_factor",
}

// expect parses [scenario.NAME.expect]: <metric>_max / <metric>_min bounds
// for every design, and a table per design for that design alone.
func (ld *loader) expect(where string, raw map[string]any, s *Scenario) []Check {
	var names []string
	for _, d := range s.Designs {
		names = append(names, d.Name)
	}
	if v, ok := raw["seeds"]; ok {
		n, isInt := v.(int64)
		if !isInt || n < 1 || n > 100 {
			ld.errorf(where+".seeds", "%v is not a whole number of seeds in 1..100", v)
		}
		s.ExpectSeeds = int(n)
		raw = maps.Clone(raw)
		delete(raw, "seeds")
	}
	var checks []Check
	ld.expectTable(where, "", raw, names, &checks)
	return checks
}

// expectTable reads one table of thresholds: for every design (design ""),
// whose sub-tables are designs, or for one design.
func (ld *loader) expectTable(where, design string, m map[string]any, names []string, checks *[]Check) {
	allow := false
	if v, ok := m["allow_empty"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			ld.errorf(where+".allow_empty", "%v is not true or false", v)
		}
		allow = b
	}
	for _, key := range sortedKeys(m) {
		v := m[key]
		if key == "allow_empty" {
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			switch {
			case design != "":
				ld.errorf(where+"."+key, "a design's table cannot hold another table")
			// Any defined design may have expectations: --set designs=[...]
			// may run a subset, and checks of designs not run are skipped.
			case !slices.Contains(names, key) && !slices.Contains(ld.definedDesigns(), key):
				ld.errorf(where+"."+key, "%q is not a design of this scenario (designs: %s)", key, strings.Join(names, ", "))
			default:
				ld.expectTable(where+"."+key, key, sub, names, checks)
			}
			continue
		}
		c, err := parseCheck(key, v)
		if err != nil {
			if design == "" {
				ld.errorf(where+"."+key, "%v; or name a design of this scenario (%s)", err, strings.Join(names, ", "))
			} else {
				ld.errorf(where+"."+key, "%v", err)
			}
			continue
		}
		c.Design, c.AllowEmpty = design, allow
		*checks = append(*checks, c)
	}
}

// ParseCheck reads one threshold given as key and value, as in an expect
// table: "lost_fraction_max" and 0.001 is lost_fraction ≤ 0.001 for every
// design.
func ParseCheck(key string, v float64) (Check, error) { return parseCheck(key, v) }

// parseCheck reads one "<metric>_max = N" or "<metric>_min = N".
func parseCheck(key string, v any) (Check, error) {
	var c Check
	switch {
	case strings.HasSuffix(key, "_max"):
		c.Metric, c.Op = strings.TrimSuffix(key, "_max"), "max"
	case strings.HasSuffix(key, "_min"):
		c.Metric, c.Op = strings.TrimSuffix(key, "_min"), "min"
	default:
		return c, fmt.Errorf("%q is not a threshold: want <metric>_max or <metric>_min (metrics: %s)", key, strings.Join(report.MetricNames(), ", "))
	}
	if !report.IsMetric(c.Metric) {
		return c, fmt.Errorf("%q is not a metric (metrics: %s)", c.Metric, strings.Join(report.MetricNames(), ", "))
	}
	switch n := v.(type) {
	case int64:
		c.Bound = float64(n)
	case float64:
		c.Bound = n
	default:
		return c, fmt.Errorf("%v is not a number", v)
	}
	return c, nil
}

func (ld *loader) definedDesigns() []string {
	var n []string
	for k := range builtinDesigns {
		n = append(n, k)
	}
	for k := range ld.raw.Design {
		if !slices.Contains(n, k) {
			n = append(n, k)
		}
	}
	sort.Strings(n)
	return n
}

// design resolves one design on top of the scenario's layers.
func (ld *loader) design(name string, t top, layers []*layer, sub []subs) (Design, bool) {
	dt, builtin := builtinDesigns[name]
	p, inFile := ld.raw.Design[name]
	if !builtin && !inFile {
		return Design{}, false
	}
	all := slices.Clone(layers)
	var ds designSubs
	var dl *layer
	if inFile {
		dl = &layer{md: &ld.md, prim: p, path: []string{"design", name}, where: ld.file + ": design." + name}
		ld.decode(dl, p, &dt)
		ld.decode(dl, p, &ds)
		all = append(all, dl)
	}
	d := Design{Name: name, Description: dt.Description, Mode: dt.Mode, Sessions: dt.Sessions, Events: dt.Events, LB: dt.LB, Era: dt.Era}

	if d.LB == "" || d.LB == "scenario" {
		d.LB = t.LB
	}
	if d.Era == "" || d.Era == "scenario" {
		d.Era = t.Era
	}
	d.Client = ld.client(all, layers, sub, dl, ds)
	ld.storeReplica(&d, all, layers, sub, dl, ds)
	where := ld.file + ": design." + name
	oneOf := func(key, v string, valid []string) {
		if !slices.Contains(valid, v) {
			ld.errorf(where+"."+key, "%q is not one of %v", v, valid)
		}
	}
	oneOf("mode", d.Mode, topology.Modes)
	oneOf("sessions", d.Sessions, topology.Sessions)
	oneOf("events", d.Events, topology.Events)
	if !slices.Contains(topology.PolicyNames(), d.LB) {
		ld.errorf(where+".lb", "%q is not one of %v (or \"scenario\")", d.LB, topology.PolicyNames())
	}
	if !slices.Contains(topology.Eras, d.Era) {
		ld.errorf(where+".era", "%q is not one of %v (or \"scenario\")", d.Era, topology.Eras)
	}
	if d.Mode == topology.ModeStateless && (d.Sessions != topology.SessionsNone || d.Events != topology.EventsNone) {
		ld.errorf(where+".mode", "a stateless design has sessions = \"none\" and events = \"none\" (got sessions = %q, events = %q)", d.Sessions, d.Events)
	}
	if d.Mode == topology.ModeStateful && d.Sessions == topology.SessionsNone {
		ld.errorf(where+".sessions", "a stateful design needs sessions = \"local\" or \"shared\"")
	}
	ld.ownServer(&d, dt, dl, layers, sub)
	if d.Server != "" {
		oneOf("server", d.Server, topology.Servers)
	}
	if d.Server == topology.ServerReference {
		d.Server = "" // the default: left out of the resolved scenario, so its hash stays
	}
	if d.Server == topology.ServerGoSDK && d.Sessions == topology.SessionsShared {
		ld.errorf(where+".server", "the go-sdk server cannot share sessions between replicas: use sessions = \"local\" or server = %q", topology.ServerReference)
	}
	ld.validateServer(where, &d, all)
	return d, true
}

// client resolves a design's client: the last profile named wins, then
// every explicit key, over the scenario's layers and then the design's own
// (dl, nil when the design is not in the file).
func (ld *loader) client(all, layers []*layer, sub []subs, dl *layer, ds designSubs) clients.Config {
	clientPrims := make([]toml.Primitive, 0, len(all))
	clientLayers := make([]*layer, 0, len(all))
	for i, l := range layers {
		if l.defined("client") {
			clientPrims, clientLayers = append(clientPrims, sub[i].Client), append(clientLayers, l)
		}
	}
	if dl != nil && dl.defined("client") {
		clientPrims, clientLayers = append(clientPrims, ds.Client), append(clientLayers, dl)
	}
	var prof struct {
		Profile string `toml:"profile"`
	}
	prof.Profile = "compliant"
	for i, p := range clientPrims {
		ld.decode(clientLayers[i], p, &prof)
	}
	c, err := clients.Profile(prof.Profile)
	if err != nil {
		ld.errorf(origin(all, "client", "profile"), "%q is not one of %v", prof.Profile, clients.ProfileNames())
	} else {
		for i, p := range clientPrims {
			ld.decode(clientLayers[i], p, &c)
		}
		for _, e := range c.Validate() {
			var fe *clients.FieldError
			if errors.As(e, &fe) {
				ld.errorf(origin(all, "client", fe.Key), "%s", fe.Msg)
			}
		}
	}
	return c
}

// storeReplica resolves a design's store and replica settings over the
// scenario's layers and then the design's own, and validates them.
func (ld *loader) storeReplica(d *Design, all, layers []*layer, sub []subs, dl *layer, ds designSubs) {
	d.Store = topology.DefaultStore
	d.Replica = topology.DefaultReplica
	for i, l := range layers {
		ld.storeModel(l, &d.Store)
		if l.defined("store") {
			ld.decode(l, sub[i].Store, &d.Store)
		}
		if l.defined("replica") {
			ld.decode(l, sub[i].Replica, &d.Replica)
		}
	}
	if dl != nil {
		ld.storeModel(dl, &d.Store)
		if dl.defined("store") {
			ld.decode(dl, ds.Store, &d.Store)
		}
		if dl.defined("replica") {
			ld.decode(dl, ds.Replica, &d.Replica)
		}
	}
	for _, e := range d.Store.Validate() {
		k, m, _ := strings.Cut(e.Error(), ": ")
		ld.errorf(origin(all, "store", k), "%s", m)
	}
	for _, e := range d.Replica.Validate() {
		k, m, _ := strings.Cut(e.Error(), ": ")
		ld.errorf(origin(all, "replica", k), "%s", m)
	}
}

// validateServer checks what the design's server flavour can carry out.
func (ld *loader) validateServer(where string, d *Design, all []*layer) {
	ld.validateTSServer(where, d)
	ld.refuseAdmission(d, all)
}

// refuseAdmission refuses the admission and accept-queue keys for a server
// stormsim does not write, which would silently ignore them: only its own
// replica carries them out (through package protocol).
func (ld *loader) refuseAdmission(d *Design, all []*layer) {
	var who string
	switch {
	case d.Own != nil:
		who = "a server you bring"
	case d.Server == topology.ServerGoSDK, d.Server == topology.ServerTSSDK:
		who = "the " + d.Server + " server"
	default:
		return
	}
	for _, k := range protocol.AdmissionKeys {
		if slices.ContainsFunc(all, func(l *layer) bool { return l.defined("replica", k) }) {
			ld.errorf(origin(all, "replica", k), "%s does no admission control and has no accept queue: only stormsim's own replica (server = %q) carries this key out; drop it for this design", who, topology.ServerReference)
		}
	}
}

func (ld *loader) validateTop(s *Scenario, t top, layers []*layer) {
	bad := func(key, format string, args ...any) {
		ld.errorf(origin(layers, strings.Split(key, ".")...), format, args...)
	}
	if s.Duration <= 0 {
		bad("duration", "%v must be positive", s.Duration)
	}
	if s.Drain < 0 {
		bad("drain", "%v is negative", s.Drain)
	}
	if s.Step <= 0 {
		bad("step", "%v must be positive", s.Step)
	} else if s.Duration > 0 && s.Step > s.Duration {
		bad("step", "%v is longer than duration (%v): the series would have one point", s.Step, s.Duration)
	} else if s.Duration > 0 && s.Duration/s.Step > 1_000_000 {
		bad("step", "%v gives more than a million series points over %v", s.Step, s.Duration)
	}
	if s.Replicas < 1 || s.Replicas > 1000 {
		bad("replicas", "%d is not in 1..1000", s.Replicas)
	}
	if !slices.Contains(topology.PolicyNames(), s.LB) {
		bad("lb", "%q is not one of %v", s.LB, topology.PolicyNames())
	}
	if !slices.Contains(topology.Eras, s.Era) {
		bad("era", "%q is not one of %v", s.Era, topology.Eras)
	}
	if s.RTT < 0 {
		bad("rtt", "%v is negative", s.RTT)
	}
	w := &s.Workload
	if w.Clients < 1 || w.Clients > 10_000_000 {
		bad("workload.clients", "%d is not in 1..10000000", w.Clients)
	}
	if w.ArrivalRate <= 0 {
		bad("workload.arrival_rate", "%v must be positive (clients per second)", w.ArrivalRate)
	}
	if w.CallsPerClient < 0 {
		bad("workload.calls_per_client", "%d is negative", w.CallsPerClient)
	}
	if w.Think < 0 {
		bad("workload.think", "%v is negative", w.Think)
	}
	if !slices.Contains(ThinkDists, w.ThinkDist) {
		bad("workload.think_dist", "%q is not one of %v", w.ThinkDist, ThinkDists)
	}
	if !slices.Contains(EventsDists, w.EventsDist) {
		bad("workload.events_dist", "%q is not one of %v", w.EventsDist, EventsDists)
	}
	if w.EventsMin < 1 {
		bad("workload.events_min", "%d must be at least 1", w.EventsMin)
	}
	if w.EventsMax < w.EventsMin {
		bad("workload.events_max", "%d is below events_min (%d)", w.EventsMax, w.EventsMin)
	}
	if w.EventRate <= 0 || w.EventRate > 1e6 {
		bad("workload.event_rate", "%v is not in (0, 1e6] events per second", w.EventRate)
	}
	if !(w.NotificationRate >= 0 && w.NotificationRate <= 1000) {
		bad("workload.notification_rate", "%v is not in [0, 1000] notifications per second per listening client", w.NotificationRate)
	} else if w.NotificationRate > 0 && s.Requests() {
		bad("workload.notification_rate", "%v: the request workload has no listening clients (set it only with kind = \"sessions\")", w.NotificationRate)
	}
	if w.EventBytes < 1 {
		bad("workload.event_bytes", "%d must be at least 1", w.EventBytes)
	}
	if w.DropEvery < 0 {
		bad("workload.drop_every", "%v is negative", w.DropEvery)
	}
	if h := s.HealthCheck; h.Interval < 0 {
		bad("health_check.interval", "%v is negative (0 turns the probes off)", h.Interval)
	} else if h.Interval > 0 && h.Interval < 10*time.Millisecond {
		bad("health_check.interval", "%v is shorter than 10ms: the probes would load the replicas they watch", h.Interval)
	}
	if h := s.HealthCheck; h.Threshold < 1 || h.Threshold > 100 {
		bad("health_check.threshold", "%d is not in 1..100", h.Threshold)
	}
	for _, l := range []struct {
		key string
		v   int
	}{
		{"event_bytes", s.Limits.EventBytes}, {"line_bytes", s.Limits.LineBytes}, {"body_bytes", s.Limits.BodyBytes},
		{"events_per_call", s.Limits.EventsPerCall}, {"id_bytes", s.Limits.IDBytes}, {"session_id_bytes", s.Limits.SessionIDBytes},
	} {
		if l.v < 1 || l.v > 1<<30 {
			bad("limits."+l.key, "%d is not in 1..%d", l.v, 1<<30)
		}
	}
}

// unknownKeys reports every key no struct claimed, with the valid ones.
func (ld *loader) unknownKeys(keys []toml.Key, where, strip string) {
	for _, k := range keys {
		path := []string(k)
		if strip != "" && len(path) > 0 && path[0] == strip {
			path = path[1:]
		}
		// Fault blocks are checked one by one, with their index.
		if strip == "" && len(path) >= 3 && path[0] == "scenario" && path[2] == "faults" {
			continue
		}
		// Report the first element of the path that its table does not
		// know; a table parsed elsewhere (expect, faults) ends the walk.
		for i := 0; i < len(path); i++ {
			valid := validKeys(path[:i], strip != "")
			if valid == nil {
				break
			}
			if slices.Contains(valid, path[i]) || (len(valid) == 1 && valid[0] == "NAME") {
				continue
			}
			ld.errorf(where, "%s: unknown key%s (valid: %s)", strings.Join(path[:i+1], "."), replacedKey(path[i]), strings.Join(valid, ", "))
			break
		}
		ld.durationKey(k, path, where)
	}
}

// durationKeys are the keys holding durations: strings such as "300s". A
// bare number would be read as nanoseconds, so it is refused.
var durationKeys = map[string]bool{
	"duration": true, "drain": true, "step": true, "rtt": true, "think": true, "drop_every": true,
	"base": true, "cap": true, "call_timeout": true, "redis_ttl": true, "memory_latency": true,
	"redis_latency": true, "redis_latency_per_event": true, "service_base": true, "service_per_event": true,
	"timeout": true, "drain_limit": true, "ready_timeout": true, "drain_timeout": true, "retry_hint": true, "orphan_lease": true, "admit_interval": true,
	"at": true, "downtime": true, "interval": true, "restart_after": true, "away": true, "extra": true, "delay": true,
}

func (ld *loader) durationKey(k toml.Key, path []string, where string) {
	if len(path) == 0 || !durationKeys[path[len(path)-1]] {
		return
	}
	if len(path) >= 3 && path[0] == "scenario" && path[2] == "expect" {
		return
	}
	md := &ld.md
	if where == "--set" {
		md = ld.setMD
	}
	if md == nil {
		return
	}
	if t := md.Type(k...); t != "" && t != "String" {
		ld.errorf(where, "%s: want a duration string such as \"300s\" or \"1m30s\", not a bare %s", strings.Join(path, "."), strings.ToLower(t))
	}
}

// validKeys lists the keys a table at parent may hold.
func validKeys(parent []string, setLayer bool) []string {
	if setLayer {
		parent = append([]string{"scenario", "_"}, parent...)
	}
	switch {
	case len(parent) == 0:
		return []string{"defaults", "design", "scenario"}
	case len(parent) == 1 && parent[0] == "defaults":
		return append(tomlKeys(reflect.TypeOf(top{})), tomlKeys(reflect.TypeOf(subs{}))...)
	case len(parent) == 2 && parent[0] == "scenario":
		if parent[1] == "_" { // a --set layer overrides keys, not the schedule or the thresholds
			return append(tomlKeys(reflect.TypeOf(top{})), tomlKeys(reflect.TypeOf(subs{}))...)
		}
		return append(append(tomlKeys(reflect.TypeOf(top{})), tomlKeys(reflect.TypeOf(subs{}))...), "faults", "expect", "goals", "agreement", "orderings", "nightly")
	case len(parent) == 2 && parent[0] == "design":
		return append(tomlKeys(reflect.TypeOf(designTop{})), tomlKeys(reflect.TypeOf(designSubs{}))...)
	case len(parent) >= 2:
		switch parent[len(parent)-1] {
		case "workload":
			if parent[0] != "design" {
				return tomlKeys(reflect.TypeOf(Workload{}))
			}
		case "client":
			return tomlKeys(reflect.TypeOf(clients.Config{}))
		case "store":
			return tomlKeys(reflect.TypeOf(topology.StoreConfig{}))
		case "replica":
			return tomlKeys(reflect.TypeOf(topology.ReplicaConfig{}))
		case "server":
			return tomlKeys(reflect.TypeOf(OwnServer{}))
		case "isolation":
			if parent[0] != "design" {
				return tomlKeys(reflect.TypeOf(Isolation{}))
			}
		case "health_check":
			if parent[0] != "design" {
				return tomlKeys(reflect.TypeOf(HealthCheck{}))
			}
		case "limits":
			if parent[0] != "design" {
				return tomlKeys(reflect.TypeOf(Limits{}))
			}
		case "tool":
			if parent[len(parent)-2] == "server" {
				return tomlKeys(reflect.TypeOf(OwnTool{}))
			}
		case "env", "fault_hook":
			if parent[len(parent)-2] == "server" {
				return []string{"NAME"}
			}
		}
	}
	if len(parent) == 1 && (parent[0] == "design" || parent[0] == "scenario") {
		return []string{"NAME"}
	}
	return nil
}

func tomlKeys(t reflect.Type) []string {
	var k []string
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
			k = append(k, tag)
		}
	}
	return k
}

// storeModel is a store-model file: a [store] table of StoreConfig keys
// (stormsim calibrate writes one from a real Redis) and a [source] table
// the loader does not read.
type storeModel struct {
	md    toml.MetaData
	store toml.Primitive
	errs  []string // every problem, each naming the file
}

// maxStoreModel bounds what is read for a store model.
const maxStoreModel = 1 << 20

// storeModel applies the store-model file that layer l names in
// store_model, if it names one, to s. Its [store] keys are a layer just
// under l's own [store] table, which the caller decodes next, so the
// block's explicit keys win. A relative path is relative to the scenarios
// file's folder.
func (ld *loader) storeModel(l *layer, s *topology.StoreConfig) {
	if !l.defined("store_model") || l.md.Type(append(slices.Clone(l.path), "store_model")...) != "String" {
		return // a value of another type is reported by the block's decoding
	}
	var k struct {
		StoreModel string `toml:"store_model"`
	}
	ld.decode(l, l.prim, &k)
	where := l.where + ".store_model"
	if l.where == "--set" {
		where = "--set store_model"
	}
	if k.StoreModel == "" {
		ld.errorf(where, "want the path of a store-model file, such as \"calibrated/redis.toml\" (stormsim calibrate writes one)")
		return
	}
	path := k.StoreModel
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(ld.file), path)
	}
	m, ok := ld.models[path]
	if !ok {
		m = readStoreModel(path, k.StoreModel)
		if ld.models == nil {
			ld.models = map[string]*storeModel{}
		}
		ld.models[path] = m
	}
	for _, e := range m.errs {
		ld.errorf(where, "%s", e)
	}
	if len(m.errs) == 0 {
		m.md.PrimitiveDecode(m.store, s) // checked by readStoreModel
	}
}

// readStoreModel reads and checks the store model at path, named name in
// messages.
func readStoreModel(path, name string) *storeModel {
	m := &storeModel{}
	bad := func(format string, args ...any) *storeModel {
		m.errs = append(m.errs, name+": "+fmt.Sprintf(format, args...))
		return m
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return bad("no such file (looked for %s)", path)
	case err != nil:
		return bad("%v", err)
	case !st.Mode().IsRegular():
		return bad("not a regular file")
	case st.Size() > maxStoreModel:
		return bad("%d bytes is too large for a store model (at most %d)", st.Size(), maxStoreModel)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return bad("%v", err)
	}
	var raw struct {
		Store toml.Primitive `toml:"store"`
	}
	if m.md, err = toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) && pe.Position.Line > 0 {
			return bad("line %d: %s", pe.Position.Line, pe.Message)
		}
		return bad("%s", strings.TrimPrefix(err.Error(), "toml: "))
	}
	m.store = raw.Store
	if t := m.md.Type("store"); t != "Hash" {
		if t == "" {
			return bad("no [store] table")
		}
		return bad("store: want a table ([store]), got %s", strings.ToLower(t))
	}
	valid := tomlKeys(reflect.TypeOf(topology.StoreConfig{}))
	for _, key := range m.md.Keys() {
		switch {
		case key[0] != "store" && key[0] != "source":
			bad("%s: unknown key (valid: store, source)", key[0])
		case key[0] == "store" && len(key) >= 2 && !slices.Contains(valid, key[1]):
			bad("store.%s: unknown key%s (valid: %s)", key[1], replacedKey(key[1]), strings.Join(valid, ", "))
		case key[0] == "store" && len(key) == 2 && durationKeys[key[1]] && m.md.Type(key...) != "String":
			bad("store.%s: want a duration string such as \"300µs\", not a bare %s", key[1], strings.ToLower(m.md.Type(key...)))
		}
	}
	if len(m.errs) > 0 {
		return m
	}
	check := topology.DefaultStore
	if err := m.md.PrimitiveDecode(m.store, &check); err != nil {
		if sm := tomlErrRE.FindStringSubmatch(err.Error()); sm != nil {
			if sm[1] != "" {
				return bad("line %s: %s: %s", sm[1], sm[2], sm[3])
			}
			return bad("%s: %s", sm[2], sm[3])
		}
		return bad("%s", strings.TrimPrefix(err.Error(), "toml: "))
	}
	for _, e := range check.Validate() {
		if k, msg, _ := strings.Cut(e.Error(), ": "); m.md.IsDefined("store", k) {
			bad("store.%s: %s", k, msg)
		}
	}
	return m
}

// replacedKey says what replaced a key that older scenarios and store-model
// files may still hold, or "".
func replacedKey(key string) string {
	switch key {
	case "redis_bytes_factor", "redis_overhead_bytes":
		return "; Redis memory is modelled node by node now: redis_node_bytes, redis_node_entries, " +
			"redis_entry_overhead_bytes, redis_node_overhead_bytes, redis_stream_overhead_bytes (run stormsim calibrate again for a store-model file)"
	}
	return ""
}
