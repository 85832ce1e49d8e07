package plots

import (
	"fmt"
	"hash/fnv"
	"image/color"
)

// Style is how one design is drawn: the same colour and dash pattern on
// every chart and in every run, so a reader learns it once.
type Style struct {
	// Color is one of the eight Okabe–Ito colours.
	Color color.RGBA
	// Dash names the dash pattern ("solid", "dash", ...).
	Dash string
	// Dashes is the pattern in points: on, off, on, off...; nil is solid.
	Dashes []float64
}

// Hex is the colour as #RRGGBB.
func (s Style) Hex() string {
	return fmt.Sprintf("#%02X%02X%02X", s.Color.R, s.Color.G, s.Color.B)
}

// palette is the Okabe–Ito palette, safe for the common colour blindnesses.
var palette = []color.RGBA{
	rgb(0xE69F00), // orange
	rgb(0x56B4E9), // sky blue
	rgb(0x009E73), // bluish green
	rgb(0xF0E442), // yellow
	rgb(0x0072B2), // blue
	rgb(0xD55E00), // vermillion
	rgb(0xCC79A7), // reddish purple
	rgb(0x000000), // black
}

func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xFF}
}

// dash is a named dash pattern, in points.
type dash struct {
	name    string
	pattern []float64
}

// dashes are the design dash patterns. They are long enough to stay
// readable on noisy series; the short thin dash of secondary lines
// (recovery latency, run B) is not among them.
var dashes = []dash{
	{"solid", nil},
	{"dash", []float64{10, 4}},
	{"dash-dot", []float64{10, 3, 2, 3}},
	{"dot", []float64{2, 3}},
	{"long-dash", []float64{18, 5}},
	{"dash-dot-dot", []float64{10, 3, 2, 3, 2, 3}},
	{"medium-dash", []float64{6, 4}},
	{"long-dash-dot", []float64{18, 4, 3, 4}},
	{"dash-dash-gap", []float64{7, 3, 7, 9}},
	{"long-dash-dot-dot", []float64{18, 3, 2, 3, 2, 3}},
}

// known fixes the style of the designs stormsim ships, as indexes into
// palette and dashes. Each design has its own dash pattern. Colours are
// distinct within the default six designs and within the sticky-vs-random
// set (memory-sticky, memory-random, redis-events, redis-events-random,
// redis-shared, redis-shared-sticky), the sets that are drawn together;
// yellow, the faintest on white, goes to memory-hash, which no shipped
// scenario selects.
var known = map[string]struct{ color, dash int }{
	"stateless":           {7, 0}, // black, solid: the baseline
	"nostore":             {0, 1}, // orange
	"memory-sticky":       {1, 2}, // sky blue
	"memory-roundrobin":   {2, 3}, // bluish green
	"redis-events":        {4, 4}, // blue
	"redis-shared":        {5, 5}, // vermillion
	"memory-random":       {6, 6}, // reddish purple
	"memory-hash":         {3, 7}, // yellow
	"redis-events-random": {0, 8}, // orange, as nostore: no shipped scenario has both
	"redis-shared-sticky": {2, 9}, // bluish green, as memory-roundrobin: likewise
}

// StyleOf returns the style of a design. The shipped designs have a fixed
// style; any other name gets one from an FNV-1a hash of the name, so it is
// the same in every run and every version.
func StyleOf(design string) Style {
	k, ok := known[design]
	if !ok {
		h := fnv.New32a()
		h.Write([]byte(design))
		v := h.Sum32()
		k.color = int(v % uint32(len(palette)))
		k.dash = int(v / uint32(len(palette)) % uint32(len(dashes)))
	}
	d := dashes[k.dash]
	return Style{Color: palette[k.color], Dash: d.name, Dashes: d.pattern}
}

// Secondary line styles: the same colour as the design, drawn with a short
// dash no design uses, for the second line of a design on one chart.
var (
	// secondaryDashes marks recovery latency and run B of an overlay.
	secondaryDashes = []float64{4, 3}
	// faultColor draws instant faults and fault labels.
	faultColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xFF}
	// bandColor shades the span of a fault; translucent, so lines show through.
	bandColor = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x38}
	// keyColor draws legend keys that stand for a kind of line, not a design.
	keyColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xFF}
)

// Line widths in points.
const (
	widthMain      = 2.0
	widthSecondary = 1.3
)
