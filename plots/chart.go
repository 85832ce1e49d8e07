package plots

import "image/color"

// Chart is the data of one chart, ready to draw: everything the renderer
// needs and nothing it has to compute from a report.
type Chart struct {
	// Name is the file name without extension, e.g. "replay-latency".
	Name string
	// Title names the scenario, seed and what the chart shows.
	Title string
	// Panels are laid out in Cols columns, left to right then top to bottom.
	Panels []Panel
	Cols   int
	// Legend is drawn once, to the right of the panels, so that it never
	// covers data. Empty means no legend (the axis names the designs).
	Legend []Key
}

// Panel is one set of axes.
type Panel struct {
	Title          string
	XLabel, YLabel string
	// XLog draws the X axis on a log scale; XMin must then be > 0.
	XLog bool
	// XMin and XMax fix the X axis range (for bars they are ignored).
	XMin, XMax float64
	// XTicks, when set, are the only labelled X ticks (a plan's grid loads).
	XTicks []Tick
	// YMax fixes the top of the Y axis when > 0; else it fits the data.
	YMax float64
	// YLog draws the Y axis on a log scale from just below the smallest
	// value (or from YMin to YMax when both are > 0); every point must then
	// be > 0.
	YLog bool
	YMin float64
	// YBytes labels the Y ticks as sizes (KiB, MiB, GiB).
	YBytes bool
	// YPercent ticks the Y axis every 10 %, labelled every 20 %.
	YPercent bool
	Lines    []Line
	Bars     []Bar
	Faults   []Marker
}

// Tick is a labelled tick on an axis.
type Tick struct {
	Value float64
	Label string
}

// Point is one point of a line, in data units.
type Point struct{ X, Y float64 }

// Pen is how a line is stroked.
type Pen struct {
	Color color.RGBA
	// Dashes is the dash pattern in points; nil is solid.
	Dashes []float64
	// Width is the line width in points.
	Width float64
}

// Line is one line of a panel.
type Line struct {
	// Design is the design the line belongs to.
	Design string
	// Label says what the line is, e.g. "stateless" or "stateless recovery".
	Label  string
	Pen    Pen
	Points []Point
	// Marks draws a dot at every point, for lines through a few grid
	// points rather than a dense series.
	Marks bool
}

// Bar is one bar of a panel, one per design, in report order.
type Bar struct {
	Design string
	Value  float64
	// Text is printed above the bar: the value with its unit, or "n/a".
	Text  string
	Color color.RGBA
}

// Marker is one fault of the schedule on a time axis.
type Marker struct {
	Label string
	// At is when the fault starts; Until when it ends, in seconds.
	At, Until float64
}

// Band says the fault lasts (a shaded span) rather than being instant (a
// vertical line at At).
func (m Marker) Band() bool { return m.Until > m.At }

// Key is one legend entry.
type Key struct {
	Label string
	Pen   Pen
}

// pen is the main pen of a design.
func (s Style) pen() Pen { return Pen{Color: s.Color, Dashes: s.Dashes, Width: widthMain} }

// secondary is the pen of a design's second line on one chart: the same
// colour, a short dash.
func (s Style) secondary(width float64) Pen {
	return Pen{Color: s.Color, Dashes: secondaryDashes, Width: width}
}
