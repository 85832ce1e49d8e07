package plan

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// Kind is what a swept key holds.
type Kind int

// The kinds of numeric keys.
const (
	Int      Kind = iota // a count or a size: values are rounded to integers
	Float                // a rate or a ratio
	Duration             // a duration: values such as 60s, held in seconds
)

func (k Kind) String() string {
	switch k {
	case Int:
		return "integer"
	case Float:
		return "number"
	}
	return "duration"
}

// Unit is how plan.json states the unit of an axis' values.
func (k Kind) Unit() string {
	switch k {
	case Int:
		return "integer"
	case Float:
		return "number"
	}
	return "s"
}

// topKeys are the numeric keys of a scenario outside its sub-tables.
var topKeys = []struct {
	key  string
	kind Kind
}{{"seed", Int}, {"duration", Duration}, {"drain", Duration}, {"step", Duration}, {"replicas", Int}, {"rtt", Duration}}

// Keys lists every numeric scenario key a sweep may name, in the order of
// the key table of docs/reference.md, with its kind.
func Keys() []string {
	var ks []string
	for _, k := range keyKinds() {
		ks = append(ks, k.key)
	}
	return ks
}

type keyKind struct {
	key  string
	kind Kind
}

// keyKinds reads the numeric keys from the structs the scenario loader
// decodes, so that a key added there can be swept at once.
func keyKinds() []keyKind {
	var out []keyKind
	for _, k := range topKeys {
		out = append(out, keyKind{k.key, k.kind})
	}
	for _, t := range []struct {
		prefix string
		typ    reflect.Type
	}{
		{"workload.", reflect.TypeOf(scenario.Workload{})},
		{"client.", reflect.TypeOf(clients.Config{})},
		{"store.", reflect.TypeOf(topology.StoreConfig{})},
		{"replica.", reflect.TypeOf(topology.ReplicaConfig{})},
	} {
		for i := 0; i < t.typ.NumField(); i++ {
			f := t.typ.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			if k, ok := kindOf(f.Type); ok {
				out = append(out, keyKind{t.prefix + tag, k})
			}
		}
	}
	return out
}

func kindOf(t reflect.Type) (Kind, bool) {
	if t == reflect.TypeOf(time.Duration(0)) {
		return Duration, true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64:
		return Int, true
	case reflect.Float64:
		return Float, true
	}
	return 0, false
}

// KindOf returns the kind of a numeric key; ok is false when key is not one.
func KindOf(key string) (Kind, bool) {
	for _, k := range keyKinds() {
		if k.key == key {
			return k.kind, true
		}
	}
	return 0, false
}

// Axis is one swept key and its values, ascending and distinct. Durations
// are held in seconds, rounded to the millisecond.
type Axis struct {
	Key    string
	Kind   Kind
	Values []float64
	// Log says the values were spaced on a log scale (lo..hi@N), which is
	// how the charts draw the load axis.
	Log bool
	// Spec is the sweep as given, for messages and plan.md.
	Spec string
}

// Max is the largest value.
func (a *Axis) Max() float64 { return a.Values[len(a.Values)-1] }

// Text is v as plan.md, plan.csv and the charts print it: 1000, 2.5, 60s.
func (a *Axis) Text(v float64) string {
	if a.Kind == Duration {
		return trim(v) + "s"
	}
	return trim(v)
}

// Set is v as a --set override: key=value.
func (a *Axis) Set(v float64) string {
	switch a.Kind {
	case Int:
		return a.Key + "=" + strconv.FormatInt(int64(v), 10)
	case Duration:
		return a.Key + "=" + strconv.FormatFloat(v, 'f', -1, 64) + "s"
	}
	return a.Key + "=" + strconv.FormatFloat(v, 'f', -1, 64)
}

// Label is "key=text".
func (a *Axis) Label(v float64) string { return a.Key + "=" + a.Text(v) }

func trim(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	if err != nil {
		r = v
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// MaxRangePoints bounds N in lo..hi@N; the grid as a whole is bounded by
// MaxPoints unless forced.
const MaxRangePoints = 100_000

// ParseSweep reads one --sweep KEY=VALUES. VALUES is a list "a,b,c" or a
// range "lo..hi@N": N points spaced evenly on a log scale from lo to hi
// (integer keys are rounded and duplicates dropped; other numbers keep four
// significant digits; durations are rounded to the millisecond). Durations
// are written with a unit ("60s", "2m"); sizes (keys ending in _bytes) may
// use KiB, MiB or GiB. Every error names the key and what is wrong.
func ParseSweep(spec string) (Axis, error) {
	key, vals, found := strings.Cut(spec, "=")
	key = strings.TrimSpace(key)
	if !found || key == "" {
		return Axis{}, fmt.Errorf("--sweep %q: want KEY=VALUES, for example workload.clients=1000..16000@5 or workload.event_rate=1,5,20", spec)
	}
	kind, ok := KindOf(key)
	if !ok {
		return Axis{}, unknownKey("--sweep "+key, key)
	}
	where := "--sweep " + key
	vals = strings.TrimSpace(vals)
	ax := Axis{Key: key, Kind: kind, Spec: key + "=" + vals}
	if vals == "" {
		return Axis{}, fmt.Errorf("%s: no values: want a list (a,b,c) or a range (lo..hi@N)", where)
	}
	if lo, rest, isRange := strings.Cut(vals, ".."); isRange {
		hi, n, hasN := strings.Cut(rest, "@")
		if !hasN {
			return Axis{}, fmt.Errorf("%s: range %q has no point count: want lo..hi@N, for example 1000..16000@5", where, vals)
		}
		lov, err := parseValue(key, kind, lo)
		if err != nil {
			return Axis{}, fmt.Errorf("%s: range start: %w", where, err)
		}
		hiv, err := parseValue(key, kind, hi)
		if err != nil {
			return Axis{}, fmt.Errorf("%s: range end: %w", where, err)
		}
		count, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			return Axis{}, fmt.Errorf("%s: @%s: the point count is not an integer", where, strings.TrimSpace(n))
		}
		switch {
		case count < 1:
			return Axis{}, fmt.Errorf("%s: empty range: @%d asks for no points (want N ≥ 1)", where, count)
		case count > MaxRangePoints:
			return Axis{}, fmt.Errorf("%s: @%d is more than %d points", where, count, MaxRangePoints)
		case lov > hiv:
			return Axis{}, fmt.Errorf("%s: empty range: lo %s is above hi %s", where, ax.Text(lov), ax.Text(hiv))
		case lov <= 0:
			return Axis{}, fmt.Errorf("%s: range start %s: a log-spaced range needs lo > 0 (use a list to include 0)", where, ax.Text(lov))
		case count == 1 && lov != hiv:
			return Axis{}, fmt.Errorf("%s: @1 gives one point, but %s..%s spans two values: use @2 or more, or a single value", where, ax.Text(lov), ax.Text(hiv))
		}
		ax.Log = count > 1
		for i := range count {
			v := lov
			if count > 1 {
				v = lov * math.Pow(hiv/lov, float64(i)/float64(count-1))
			}
			if i == count-1 {
				v = hiv // exact, whatever the rounding of Pow
			}
			ax.Values = append(ax.Values, round(kind, v, i == 0 || i == count-1))
		}
	} else {
		for i, s := range strings.Split(vals, ",") {
			if strings.TrimSpace(s) == "" {
				return Axis{}, fmt.Errorf("%s: value %d of %q is empty", where, i+1, vals)
			}
			v, err := parseValue(key, kind, s)
			if err != nil {
				return Axis{}, fmt.Errorf("%s: %w", where, err)
			}
			if kind == Int && v != math.Trunc(v) {
				return Axis{}, fmt.Errorf("%s: %q is not an integer (%s counts whole units)", where, strings.TrimSpace(s), key)
			}
			ax.Values = append(ax.Values, round(kind, v, true))
		}
	}
	slices.Sort(ax.Values)
	ax.Values = slices.Compact(ax.Values)
	return ax, nil
}

// round puts a generated value on the key's grid: integers for counts, the
// millisecond for durations, four significant digits for other numbers
// (exact keeps an endpoint as given).
func round(kind Kind, v float64, exact bool) float64 {
	switch kind {
	case Int:
		return math.Round(v)
	case Duration:
		return math.Round(v*1000) / 1000
	}
	if exact || v == 0 {
		return v
	}
	mag := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*mag) / mag
}

// ParseValue reads one value of key: a number, a duration with its unit
// for duration keys ("60s"), or a size for keys ending in _bytes ("10MiB").
func ParseValue(key, s string) (float64, error) {
	kind, ok := KindOf(key)
	if !ok {
		return 0, unknownKey(key, key)
	}
	v, err := parseValue(key, kind, s)
	if err != nil {
		return 0, err
	}
	if kind == Int && v != math.Trunc(v) {
		return 0, fmt.Errorf("%q is not an integer (%s counts whole units)", strings.TrimSpace(s), key)
	}
	return round(kind, v, true), nil
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

func parseValue(key string, kind Kind, s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("a value is empty")
	}
	if kind == Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
				return 0, fmt.Errorf("%q is a bare number: %s is a duration, write it with a unit (for example %ss)", s, key, s)
			}
			return 0, fmt.Errorf("%q is not a duration (want for example 60s or 2m30s)", s)
		}
		return d.Seconds(), nil
	}
	mult := 1.0
	if kind == Int && strings.HasSuffix(key, "_bytes") {
		for _, u := range sizeUnits {
			if num, found := strings.CutSuffix(s, u.suffix); found {
				s, mult = strings.TrimSpace(num), u.mult
				break
			}
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		if kind == Int && strings.HasSuffix(key, "_bytes") {
			return 0, fmt.Errorf("%q is not a number (sizes may end in KiB, MiB or GiB)", s)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v * mult, nil
}

func unknownKey(where, key string) error {
	var known []string
	for _, k := range keyKinds() {
		known = append(known, k.key)
	}
	if strings.Contains(key, ".") || slices.Contains([]string{"lb", "era", "designs", "description"}, key) {
		// A real key that is not numeric says so, rather than "unknown".
		if isTextKey(key) {
			return fmt.Errorf("%s: %s is not a numeric key (it holds a name, a flag or a list); sweepable keys: %s", where, key, strings.Join(known, ", "))
		}
	}
	return fmt.Errorf("%s: unknown key %q; sweepable keys: %s", where, key, strings.Join(known, ", "))
}

// isTextKey reports whether key is a scenario key that holds no number.
func isTextKey(key string) bool {
	switch key {
	case "lb", "era", "designs", "description":
		return true
	}
	prefix, field, found := strings.Cut(key, ".")
	if !found {
		return false
	}
	var t reflect.Type
	switch prefix {
	case "workload":
		t = reflect.TypeOf(scenario.Workload{})
	case "client":
		t = reflect.TypeOf(clients.Config{})
	case "store":
		t = reflect.TypeOf(topology.StoreConfig{})
	case "replica":
		t = reflect.TypeOf(topology.ReplicaConfig{})
	default:
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag == field {
			return true
		}
	}
	return false
}

// DefaultSweep is the sweep stormsim plan runs when it is given none:
// workload.clients at the scenario's clients × 1/2, 1, 2, 4 and 8 (a log
// scale), keeping the loads that are all in before the first fault strikes
// (or, without faults, before duration ends) at a constant arrival_rate, so
// that each point is the load the fault meets. For deploy-restart (2000
// clients arriving at 100/s, the first restart at 90 s: 9000 in) that is
// workload.clients=1000..8000@4: 1000, 2000, 4000, 8000.
func DefaultSweep(sc *scenario.Scenario) string {
	c := sc.Workload.Clients
	room := math.MaxInt
	if w := sc.Workload; w.ArrivalSlope == 0 {
		by := sc.Duration
		if at, ok := FirstFault(sc); ok {
			by = at
		}
		room = max(int(w.ArrivalRate*by.Seconds()), 1)
	}
	lo := max(c/2, 1)
	n := 0
	for k := 0; k < 5 && lo<<k <= room; k++ {
		n++
	}
	switch {
	case n >= 2:
		return fmt.Sprintf("workload.clients=%d..%d@%d", lo, lo<<(n-1), n)
	case lo < room:
		return fmt.Sprintf("workload.clients=%d,%d", lo, room)
	}
	return fmt.Sprintf("workload.clients=%d", min(lo, room))
}

// FirstFault is when the scenario's first fault strikes; ok is false when
// it has none.
func FirstFault(sc *scenario.Scenario) (time.Duration, bool) {
	ctx := sc.FaultContext()
	first, ok := time.Duration(0), false
	for _, f := range sc.Faults {
		if at := f.Span(ctx).At; !ok || at < first {
			first, ok = at, true
		}
	}
	return first, ok
}
