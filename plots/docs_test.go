package plots

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	xdraw "golang.org/x/image/draw"
)

var docs = flag.Bool("docs", false, "rewrite ../docs/designs.png, the README's example chart, from the fixture")

// docsImageLimit keeps the README's example chart small.
const docsImageLimit = 80 << 10

// TestDocsImage writes docs/designs.png with -docs: the designs chart of
// the fixture, scaled to 960×560 to keep the repository small.
func TestDocsImage(t *testing.T) {
	if !*docs {
		t.Skip("run with -docs to rewrite ../docs/designs.png")
	}
	files, err := Render(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(files["designs.png"]))
	if err != nil {
		t.Fatal(err)
	}
	small := image.NewRGBA(image.Rect(0, 0, Width*4/5, Height*4/5))
	xdraw.CatmullRom.Scale(small, small.Bounds(), img, img.Bounds(), xdraw.Src, nil)
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, small); err != nil {
		t.Fatal(err)
	}
	if b.Len() > docsImageLimit {
		t.Fatalf("designs.png is %d bytes, over %d", b.Len(), docsImageLimit)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "designs.png"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
