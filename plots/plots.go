package plots

import (
	"runtime"
	"sync"

	"github.com/stormsim/stormsim/report"
)

// PageName is the file name of the HTML page Render returns.
const PageName = "report.html"

// Render draws every chart of r as PNG and SVG and the page that embeds
// them, returning file name → bytes: "replay-latency.png",
// "replay-latency.svg", ... (see ChartNames) and "report.html". The same
// report gives the same bytes.
func Render(r *report.Report) (map[string][]byte, error) {
	charts, err := Charts(r)
	if err != nil {
		return nil, err
	}
	files, err := encodeAll(charts)
	if err != nil {
		return nil, err
	}
	html, err := page(r, charts, files)
	if err != nil {
		return nil, err
	}
	files[PageName] = html
	return files, nil
}

// Overlay draws the time charts and replay latency of two runs on the same
// axes: each design in its colour, run A solid and run B dashed, labelled
// "<design> (A)" and "<design> (B)". It returns file name → bytes, as
// Render does, without a page.
func Overlay(a, b *report.Report) (map[string][]byte, error) {
	charts, err := OverlayCharts(a, b)
	if err != nil {
		return nil, err
	}
	return encodeAll(charts)
}

// encodeAll draws each chart as <name>.png and <name>.svg. The files are
// drawn concurrently, one per CPU: each has its own canvas, and gonum's
// font cache is safe for concurrent use.
func encodeAll(charts []Chart) (map[string][]byte, error) {
	type job struct {
		chart  Chart
		format string
		data   []byte
		err    error
	}
	var jobs []*job
	for _, ch := range charts {
		for _, format := range []string{"png", "svg"} {
			jobs = append(jobs, &job{chart: ch, format: format})
		}
	}
	next := make(chan *job)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Go(func() {
			for j := range next {
				j.data, j.err = encode(j.chart, j.format)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	files := make(map[string][]byte, len(jobs)+1)
	for _, j := range jobs {
		if j.err != nil {
			return nil, j.err
		}
		files[j.chart.Name+"."+j.format] = j.data
	}
	return files, nil
}
