package plots

import (
	"bytes"
	"image/png"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stormsim/stormsim/report"
)

// Render returns a PNG and an SVG of every chart, 1200×700 pixels, and the
// page.
func TestRenderFiles(t *testing.T) {
	t.Parallel()
	files, err := Render(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{PageName}
	for _, n := range ChartNames {
		want = append(want, n+".png", n+".svg")
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names(files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	checkImages(t, files)
}

func names(files map[string][]byte) []string {
	var ns []string
	for n := range files {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// checkImages decodes every PNG at exactly Width×Height and checks that
// every SVG declares that size.
func checkImages(t *testing.T, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		switch {
		case strings.HasSuffix(name, ".png"):
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if b := img.Bounds(); b.Dx() != Width || b.Dy() != Height {
				t.Errorf("%s: %d×%d, want %d×%d", name, b.Dx(), b.Dy(), Width, Height)
			}
		case strings.HasSuffix(name, ".svg"):
			if !bytes.Contains(data[:min(len(data), 300)], []byte(`<svg width="1200" height="700" viewBox="0 0 900 525"`)) {
				t.Errorf("%s: does not declare 1200×700: %.200s", name, data)
			}
			if !bytes.HasSuffix(bytes.TrimSpace(data), []byte("</svg>")) {
				t.Errorf("%s: does not end with </svg>", name)
			}
		}
	}
}

// The same report gives the same bytes.
func TestRenderDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Render(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two renders of the same report", name)
		}
	}
}

func TestFormatTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"},                     // zero
		{0.30000000000000004, "0.3"}, // float noise is hidden
		{250, "250"},                 // small numbers as they are
		{1500, "1.5k"},               // thousands
		{2.5e6, "2.5M"},              // millions
		{3e9, "3G"},                  // billions
	} {
		if got := formatNum(tc.v); got != tc.want {
			t.Errorf("formatNum(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
	var got []string
	for _, tk := range (bytesTicks{}).Ticks(0, 3<<20) {
		if tk.Label != "" {
			got = append(got, tk.Label)
		}
	}
	if diff := cmp.Diff([]string{"0", "0.5 MiB", "1 MiB", "1.5 MiB", "2 MiB", "2.5 MiB", "3 MiB"}, got); diff != "" {
		t.Errorf("bytes ticks (-want +got):\n%s", diff)
	}
}

// longReport is the fixture stretched to 420 steps, the size of a 300 s run
// with its drain.
func longReport(tb testing.TB) *report.Report {
	tb.Helper()
	r := fixture(tb)
	stretch := func(v []int64) []int64 {
		out := make([]int64, 420)
		for i := range out {
			out[i] = v[i%len(v)]
		}
		return out
	}
	r.DurationS = 840
	for i := range r.Designs {
		s := &r.Designs[i].Series
		s.ActiveStreams, s.Reconnects, s.SessionRequests = stretch(s.ActiveStreams), stretch(s.Reconnects), stretch(s.SessionRequests)
		s.HTTP404, s.EventsLost, s.StoreOps, s.StoreBytes = stretch(s.HTTP404), stretch(s.EventsLost), stretch(s.StoreOps), stretch(s.StoreBytes)
	}
	return r
}

// BenchmarkRender draws every chart and the page of a run with 6 designs
// and 420 steps; the goal is well under 2 s per run.
func BenchmarkRender(b *testing.B) {
	r := longReport(b)
	for b.Loop() {
		if _, err := Render(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPNGLevel encodes one drawn chart of the fixture at zlib's
// default level and at the fastest one (pngFast's), and reports the bytes
// of each: the time and size that choice trades.
func BenchmarkPNGLevel(b *testing.B) {
	cs, err := Charts(fixture(b))
	if err != nil {
		b.Fatal(err)
	}
	c := vgimg.NewWith(vgimg.UseWH(canvasW, canvasH), vgimg.UseDPI(dpi))
	drawChart(draw.New(c), cs[0])
	img := c.Image()
	for _, lv := range []struct {
		name string
		enc  *png.Encoder
	}{{"default", &png.Encoder{}}, {"fastest", pngFast}} {
		b.Run(lv.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := lv.enc.Encode(&buf, img); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes")
		})
	}
}

// Ticks stay few on any axis, even one far narrower than its magnitude.
func TestTicksBounded(t *testing.T) {
	t.Parallel()
	for _, r := range [][2]float64{{0, 1}, {0, 7}, {1e300, 1e300 * (1 + 1e-15)}, {-5, 5}} {
		ts := numTicks{}.Ticks(r[0], r[1])
		if len(ts) == 0 || len(ts) > 100 {
			t.Errorf("Ticks(%g, %g): %d ticks", r[0], r[1], len(ts))
		}
	}
}
