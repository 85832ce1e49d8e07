package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Width and Height are the size of every chart in pixels. The SVG files
// declare the same size, at the CSS 96 pixels per inch.
const (
	Width  = 1200
	Height = 700
	dpi    = 96
)

// The canvas in points (1/72 inch): 900×525 pt is 1200×700 px at 96 dpi.
var (
	canvasW = vg.Length(Width) * vg.Inch / dpi
	canvasH = vg.Length(Height) * vg.Inch / dpi
)

// Layout, in points.
const (
	titleSize   = 15
	labelSize   = 11
	tickSize    = 10
	legendSize  = 10.5
	faultSize   = 9
	barTextSize = 9
	margin      = 10
	thumbWidth  = 30
)

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

// encode draws a chart and encodes it as "png" or "svg".
func encode(ch Chart, format string) ([]byte, error) {
	var b bytes.Buffer
	switch format {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(canvasW, canvasH), vgimg.UseDPI(dpi))
		drawChart(draw.New(c), ch)
		if err := pngFast.Encode(&b, c.Image()); err != nil {
			return nil, fmt.Errorf("plots: %s.png: %w", ch.Name, err)
		}
		return b.Bytes(), nil
	case "svg":
		c := vgsvg.New(canvasW, canvasH)
		drawChart(draw.New(c), ch)
		if _, err := c.WriteTo(&b); err != nil {
			return nil, fmt.Errorf("plots: %s.svg: %w", ch.Name, err)
		}
		return svgPixels(b.Bytes()), nil
	default:
		return nil, fmt.Errorf("plots: unknown format %q", format)
	}
}

// pngFast encodes the charts at zlib's fastest level: flat colours
// compress well at any level, so the files grow little and every run's
// charts encode faster (BenchmarkPNGLevel measures both).
var pngFast = &png.Encoder{CompressionLevel: png.BestSpeed}

// svgPixels states the SVG size in pixels rather than points; the viewBox
// keeps the drawing in points, so only the declared size changes.
func svgPixels(svg []byte) []byte {
	pt := fmt.Sprintf(`width="%gpt" height="%gpt"`, canvasW.Points(), canvasH.Points())
	px := fmt.Sprintf(`width="%d" height="%d"`, Width, Height)
	return bytes.Replace(svg, []byte(pt), []byte(px), 1)
}

// drawChart draws the title, the panels and, to their right, the legend.
func drawChart(c draw.Canvas, ch Chart) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, margin, -margin, margin, -margin)

	ts := textStyle(titleSize, color.Black)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
	c.FillText(ts, vg.Point{X: c.Center().X, Y: c.Max.Y}, ch.Title)
	c.Max.Y -= ts.Rectangle(ch.Title).Size().Y + margin

	if len(ch.Legend) > 0 {
		lw := min(legendWidth(ch.Legend), c.Size().X/3) // the panels keep two thirds
		drawLegend(draw.Crop(c, c.Size().X-lw, 0, 0, 0), ch.Legend)
		c.Max.X -= lw + margin
	}
	drawPanels(c, ch)
}

// drawPanels lays the panels out in a grid, aligned so that panels in one
// column share their X position and panels in one row their Y position.
func drawPanels(c draw.Canvas, ch Chart) {
	cols := max(ch.Cols, 1)
	rows := (len(ch.Panels) + cols - 1) / cols
	if rows == 0 {
		return
	}
	grid := make([][]*plot.Plot, rows)
	for j := range grid {
		grid[j] = make([]*plot.Plot, cols)
	}
	for i, p := range ch.Panels {
		grid[i/cols][i%cols] = newPlot(p)
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 2 * margin, PadY: margin}
	canvases := plot.Align(grid, tiles, c)
	for j, row := range grid {
		for i, pl := range row {
			if pl != nil {
				pl.Draw(canvases[j][i])
			}
		}
	}
}

// newPlot builds the gonum plot of one panel.
func newPlot(p Panel) *plot.Plot {
	pl := plot.New()
	styleAxes(pl)
	pl.Title.Text = p.Title
	pl.X.Label.Text, pl.Y.Label.Text = p.XLabel, p.YLabel
	grid := plotter.NewGrid()
	grid.Horizontal.Color = color.Gray{Y: 0xE0}
	grid.Vertical.Color = color.Gray{Y: 0xE0}
	pl.Add(grid)
	pl.Add(bands(p.Faults))
	for _, l := range p.Lines {
		if len(l.Points) > 0 {
			pl.Add(newLine(l))
		}
		if l.Marks && len(l.Points) > 0 {
			pl.Add(newMarks(l))
		}
	}
	pl.Add(faultLines(p.Faults))
	if len(p.Bars) > 0 {
		grid.Vertical.Color = nil // the X axis names designs: no vertical lines
		addBars(pl, p.Bars)
		return pl
	}
	pl.X.Min, pl.X.Max = p.XMin, p.XMax
	if p.XLog {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if len(p.XTicks) > 0 {
		var ts plot.ConstantTicks
		for _, t := range p.XTicks {
			ts = append(ts, plot.Tick{Value: t.Value, Label: t.Label})
		}
		pl.X.Tick.Marker = ts
	}
	pl.Y.Min, pl.Y.Max = 0, p.YMax
	if p.YMax <= 0 {
		pl.Y.Max = niceTop(maxY(p.Lines))
	}
	if p.YLog {
		pl.Y.Min, pl.Y.Max = logRange(p.Lines)
		if p.YMin > 0 && p.YMax > p.YMin {
			pl.Y.Min, pl.Y.Max = p.YMin, p.YMax
		}
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = logTicks{bytes: p.YBytes}
		return pl
	}
	switch {
	case p.YBytes:
		pl.Y.Tick.Marker = bytesTicks{}
	case p.YPercent:
		pl.Y.Tick.Marker = percentTicks()
	}
	return pl
}

// styleAxes sets the sans-serif fonts and their sizes, keeping gonum's
// alignments.
func styleAxes(pl *plot.Plot) {
	pl.Title.TextStyle.Font = font.From(sans, labelSize+1)
	pl.Title.Padding = 4
	for _, a := range []*plot.Axis{&pl.X, &pl.Y} {
		a.Label.TextStyle.Font = font.From(sans, labelSize)
		a.Tick.Label.Font = font.From(sans, tickSize)
		a.Tick.Marker = numTicks{}
	}
}

func lineStyle(p Pen) draw.LineStyle {
	ls := draw.LineStyle{Color: p.Color, Width: vg.Points(p.Width)}
	for _, d := range p.Dashes {
		ls.Dashes = append(ls.Dashes, vg.Points(d))
	}
	return ls
}

func newLine(l Line) *plotter.Line {
	xys := make(plotter.XYs, len(l.Points))
	for i, p := range l.Points {
		xys[i] = plotter.XY{X: p.X, Y: p.Y}
	}
	return &plotter.Line{XYs: xys, LineStyle: lineStyle(l.Pen)}
}

// newMarks draws a dot at each point of a line, in its colour.
func newMarks(l Line) *plotter.Scatter {
	xys := make(plotter.XYs, len(l.Points))
	for i, p := range l.Points {
		xys[i] = plotter.XY{X: p.X, Y: p.Y}
	}
	s := &plotter.Scatter{XYs: xys}
	s.GlyphStyle = draw.GlyphStyle{Color: l.Pen.Color, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	return s
}

// logRange is the Y range of a log axis holding every positive value,
// with a little room above and below; 1 to 10 when there is none.
func logRange(ls []Line) (float64, float64) {
	lo, hi := math.Inf(1), 0.0
	for _, l := range ls {
		for _, p := range l.Points {
			if p.Y > 0 {
				lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
			}
		}
	}
	if hi == 0 {
		return 1, 10
	}
	lo, hi = lo/1.5, hi*1.5
	if hi/lo < 10 { // at least a decade, so that the axis has ticks
		mid := math.Sqrt(lo * hi)
		lo, hi = mid/math.Sqrt(10), mid*math.Sqrt(10)
	}
	return lo, hi
}

func maxY(ls []Line) float64 {
	m := 0.0
	for _, l := range ls {
		for _, p := range l.Points {
			m = math.Max(m, p.Y)
		}
	}
	return m
}

// niceTop leaves headroom above the highest value; an all-zero panel still
// gets an axis.
func niceTop(v float64) float64 {
	if v <= 0 {
		return 1
	}
	return v * 1.05
}

// addBars draws one bar per design, coloured as the design, with its value
// printed above, and names the designs on the X axis.
func addBars(pl *plot.Plot, bars []Bar) {
	names := make([]string, len(bars))
	top := 0.0
	for _, b := range bars {
		top = math.Max(top, b.Value)
	}
	top = niceTop(top) * 1.12
	labels := plotter.XYLabels{}
	for i, b := range bars {
		names[i] = b.Design
		bc, err := plotter.NewBarChart(plotter.Values{b.Value}, vg.Points(barWidth(len(bars))))
		if err != nil {
			continue // only a non-positive width fails, and barWidth is positive
		}
		bc.XMin = float64(i)
		bc.Color = b.Color
		bc.LineStyle.Width = 0
		pl.Add(bc)
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: b.Value + top*0.01})
		labels.Labels = append(labels.Labels, b.Text)
	}
	if lb, err := plotter.NewLabels(labels); err == nil {
		for i := range lb.TextStyle {
			lb.TextStyle[i] = textStyle(barTextSize, color.Black)
			lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
		}
		pl.Add(lb)
	}
	pl.NominalX(names...)
	pl.X.Tick.Label.Rotation = math.Pi / 5
	pl.X.Tick.Label.XAlign, pl.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	pl.X.Min, pl.X.Max = -0.6, float64(len(bars))-0.4
	pl.Y.Min, pl.Y.Max = 0, top
}

// barWidth fits n bars into a third of the canvas.
func barWidth(n int) float64 {
	return math.Max(4, math.Min(28, 0.6*canvasW.Points()/3/float64(n+1)))
}

// numTicks ticks a linear axis about every sixth of its span, at round
// values, labelled compactly: 0.25, 1500, 20k, 2.5M; minor ticks halve the
// steps.
type numTicks struct{}

func (numTicks) Ticks(min, max float64) []plot.Tick {
	return linearTicks(min, max, 1, formatNum)
}

// linearTicks ticks [min, max] at round values of the axis divided by unit
// and labels them with format.
func linearTicks(min, max, unit float64, format func(float64) string) []plot.Tick {
	lo, hi := min/unit, max/unit
	step := niceStep(hi - lo)
	var ts []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	// At most a few dozen ticks, even on an axis so narrow for its
	// magnitude that first+k would not change from one k to the next.
	for k := 0.0; k < 50; k++ {
		v := (first + k) * step
		if v > hi+step*1e-9 {
			break
		}
		if v == 0 {
			v = 0 // no "-0"
		}
		ts = append(ts, plot.Tick{Value: v * unit, Label: format(v)})
		if half := v + step/2; half <= hi {
			ts = append(ts, plot.Tick{Value: half * unit})
		}
	}
	if half := (first - 0.5) * step; half >= lo {
		ts = append(ts, plot.Tick{Value: half * unit})
	}
	return ts
}

// niceStep is the round step (1, 2, 2.5 or 5 times a power of ten) that
// cuts span into about six.
func niceStep(span float64) float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func formatNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

// trim prints v with at most 6 significant digits and no trailing zeros,
// hiding float noise such as 0.30000000000000004.
func trim(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// bytesTicks labels a Y axis of sizes in the binary unit that fits its top.
type bytesTicks struct{}

func (bytesTicks) Ticks(min, max float64) []plot.Tick {
	unit, name := 1.0, "B"
	for _, u := range []struct {
		size float64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if max >= u.size {
			unit, name = u.size, u.name
			break
		}
	}
	return linearTicks(min, max, unit, func(v float64) string {
		if v == 0 {
			return "0"
		}
		return trim(v) + " " + name
	})
}

// logTicks ticks a log axis: at powers of two in binary units for sizes
// (1 KiB, 4 KiB, ...), else at 1, 2 and 5 times powers of ten, labelled
// compactly (1k, 20k); unlabelled minor ticks fill in between.
type logTicks struct{ bytes bool }

func (t logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) || math.IsInf(max, 0) {
		return nil
	}
	var ts []plot.Tick
	if t.bytes {
		k0, k1 := int(math.Floor(math.Log2(min))), int(math.Ceil(math.Log2(max)))
		step := 20
		for _, st := range []int{1, 2, 5, 10} {
			if (k1-k0)/st <= 7 {
				step = st
				break
			}
		}
		for k := k0; k <= k1; k++ {
			v := math.Exp2(float64(k))
			if v < min || v > max {
				continue
			}
			tk := plot.Tick{Value: v}
			if k%step == 0 { // steps divide 10: 1 KiB, 1 MiB, 1 GiB are labelled
				tk.Label = sizeLabel(v)
			}
			ts = append(ts, tk)
		}
		return ts
	}
	e0, e1 := int(math.Floor(math.Log10(min))), int(math.Ceil(math.Log10(max)))
	mantissas := []float64{1, 2, 5}
	if e1-e0 > 4 {
		mantissas = []float64{1}
	}
	for e := e0; e <= e1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, float64(e))
			if v < min || v > max {
				continue
			}
			tk := plot.Tick{Value: v}
			if slices.Contains(mantissas, float64(m)) {
				tk.Label = formatNum(v)
			}
			ts = append(ts, tk)
		}
	}
	return ts
}

// sizeLabel names a power of two in the largest binary unit it fills.
func sizeLabel(v float64) string {
	for _, u := range []struct {
		size float64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if v >= u.size {
			return trim(v/u.size) + " " + u.name
		}
	}
	return trim(v) + " B"
}

// percentTicks ticks 0–100 % every 10, labelled every 20.
func percentTicks() plot.ConstantTicks {
	var ts plot.ConstantTicks
	for v := 0; v <= 100; v += 10 {
		t := plot.Tick{Value: float64(v)}
		if v%20 == 0 {
			t.Label = strconv.Itoa(v)
		}
		ts = append(ts, t)
	}
	return ts
}

// bands shades the span of each lasting fault, under the lines.
type bands []Marker

func (fs bands) Plot(c draw.Canvas, p *plot.Plot) {
	tr, _ := p.Transforms(&c)
	for _, m := range fs {
		if !m.Band() {
			continue
		}
		x0, x1 := clampX(c, tr(m.At)), clampX(c, tr(m.Until))
		if x1 <= x0 {
			continue
		}
		c.SetColor(bandColor)
		c.Fill(vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x1, Y: c.Max.Y}}.Path())
	}
}

// faultLines draws a vertical line at each instant fault and labels every
// fault at the top of the panel, one label per row so they never overlap.
type faultLines []Marker

func (fs faultLines) Plot(c draw.Canvas, p *plot.Plot) {
	tr, _ := p.Transforms(&c)
	ls := draw.LineStyle{Color: faultColor, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	ts := textStyle(faultSize, faultColor)
	ts.YAlign = draw.YTop
	for i, m := range fs {
		x := tr(m.At)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		if !m.Band() {
			c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
		}
		y := c.Max.Y - vg.Length(i)*(faultSize+3) - 2
		w := ts.Rectangle(m.Label).Size().X
		lx := x + 3
		if lx+w > c.Max.X { // no room on the right: put the label left of the mark
			lx = x - 3 - w
		}
		c.FillText(ts, vg.Point{X: lx, Y: y}, m.Label)
	}
}

func clampX(c draw.Canvas, x vg.Length) vg.Length {
	return max(c.Min.X, min(c.Max.X, x))
}

// legendWidth fits the longest legend label.
func legendWidth(ks []Key) vg.Length {
	ts := textStyle(legendSize, color.Black)
	w := vg.Length(0)
	for _, k := range ks {
		w = max(w, ts.Rectangle(" "+k.Label).Size().X)
	}
	return thumbWidth + w + margin
}

// drawLegend draws the keys top-left of c, one per row.
func drawLegend(c draw.Canvas, ks []Key) {
	l := plot.NewLegend()
	l.TextStyle = textStyle(legendSize, color.Black)
	l.ThumbnailWidth = thumbWidth
	l.Top, l.Left = true, true
	l.Padding = 3
	l.YOffs = -2 * margin
	for _, k := range ks {
		l.Add(k.Label, thumb(lineStyle(k.Pen)))
	}
	l.Draw(c)
}

// thumb is a legend key: a short stretch of the line.
type thumb draw.LineStyle

func (t thumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle(t), c.Min.X, y, c.Max.X, y)
}
