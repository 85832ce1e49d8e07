package plots

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/stormsim/stormsim/report"
)

// parsePage renders r and parses its report.html, after checking that
// every element is closed.
func parsePage(t *testing.T, r *report.Report) (*html.Node, map[string][]byte) {
	t.Helper()
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	page := files[PageName]
	if err := wellFormed(page); err != nil {
		t.Fatalf("%s: %v", PageName, err)
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("%s: %v", PageName, err)
	}
	return doc, files
}

// wellFormed checks that every element the page opens it also closes, in
// order; html.Parse alone accepts any tag soup.
func wellFormed(page []byte) error {
	void := map[string]bool{"meta": true, "img": true, "br": true, "link": true}
	z := html.NewTokenizer(bytes.NewReader(page))
	var open []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if len(open) > 0 {
				return &pageError{"unclosed <" + strings.Join(open, "> <") + ">"}
			}
			return nil
		case html.StartTagToken:
			name, _ := z.TagName()
			if !void[string(name)] {
				open = append(open, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(open) == 0 || open[len(open)-1] != string(name) {
				return &pageError{"unexpected </" + string(name) + "> in <" + strings.Join(open, "> <") + ">"}
			}
			open = open[:len(open)-1]
		}
	}
}

type pageError struct{ msg string }

func (e *pageError) Error() string { return e.msg }

// The design table has the same cells as summary.md, row by row.
func TestPageDesignTable(t *testing.T) {
	t.Parallel()
	r := fixture(t)
	doc, _ := parsePage(t, r)
	table := find(doc, func(n *html.Node) bool { return n.Data == "table" && attr(n, "class") == "designs" })
	if table == nil {
		t.Fatal("no table.designs")
	}
	var head []string
	for _, th := range findAll(table, func(n *html.Node) bool { return n.Data == "th" }) {
		head = append(head, textOf(th))
	}
	var rows [][]string
	for _, tr := range findAll(table, func(n *html.Node) bool { return n.Data == "tr" }) {
		var row []string
		for _, td := range findAll(tr, func(n *html.Node) bool { return n.Data == "td" }) {
			row = append(row, textOf(td))
		}
		if row != nil {
			rows = append(rows, row)
		}
	}
	wantHead, wantRows := markdownTable(t, r.Markdown())
	if diff := cmp.Diff(wantHead, head); diff != "" {
		t.Errorf("header (-summary.md +report.html):\n%s", diff)
	}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("rows (-summary.md +report.html):\n%s", diff)
	}
	// And straight from report.json: calls, lost, rate_404.
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q", name)
		return -1
	}
	for i, d := range r.Designs {
		if i >= len(rows) {
			break
		}
		row := rows[i]
		for _, c := range []struct{ col, want string }{
			{"design", d.Name},
			{"calls", strconv.FormatInt(d.Totals.Calls, 10)},
			{"lost", strconv.FormatInt(d.Totals.EventsLost, 10)},
			{"rate_404", strconv.FormatFloat(d.Totals.Rate404, 'f', 3, 64)},
		} {
			if got := row[col(c.col)]; got != c.want {
				t.Errorf("%s: %s is %q, report.json says %q", d.Name, c.col, got, c.want)
			}
		}
	}
}

// markdownTable reads the design table of summary.md.
func markdownTable(t *testing.T, md []byte) ([]string, [][]string) {
	t.Helper()
	_, after, ok := strings.Cut(string(md), "## Designs\n\n")
	if !ok {
		t.Fatal("summary.md has no design table")
	}
	var lines [][]string
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			break
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | "))
	}
	if len(lines) < 1 {
		t.Fatal("summary.md: empty design table")
	}
	return lines[0], lines[1:]
}

// The page names the run, lists the faults, embeds every PNG chart inline
// and refers to nothing outside itself.
func TestPageContents(t *testing.T) {
	t.Parallel()
	r := fixture(t)
	r.Description += " See https://example.com/storms and http://example.org."
	doc, files := parsePage(t, r)
	page := string(files[PageName])
	for _, s := range []string{"http://", "https://"} {
		if strings.Contains(page, s) {
			t.Errorf("page contains %q", s)
		}
	}
	body := textOf(doc)
	for _, want := range []string{r.Scenario, "seed 42", "sim", "Hand-written fixture", "kill replica-1", "partition replica-2"} {
		if !strings.Contains(body, want) {
			t.Errorf("page text lacks %q", want)
		}
	}
	faults := find(doc, func(n *html.Node) bool { return n.Data == "table" && attr(n, "class") == "faults" })
	if got := len(findAll(faults, func(n *html.Node) bool { return n.Data == "tr" })); got != 1+len(r.Faults) {
		t.Errorf("fault table has %d rows, want a header and %d faults", got, len(r.Faults))
	}
	imgs := findAll(doc, func(n *html.Node) bool { return n.Data == "img" })
	if len(imgs) != len(ChartNames) {
		t.Fatalf("%d <img>, want one per chart (%d)", len(imgs), len(ChartNames))
	}
	for i, img := range imgs {
		src := attr(img, "src")
		data, ok := strings.CutPrefix(src, "data:image/png;base64,")
		if !ok {
			t.Errorf("img %d: src %.40q is not an inline PNG", i, src)
			continue
		}
		png, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Errorf("img %d: %v", i, err)
			continue
		}
		if name := ChartNames[i] + ".png"; !bytes.Equal(png, files[name]) {
			t.Errorf("img %d is not %s", i, name)
		}
	}
	for _, tag := range []string{"script", "link", "iframe"} {
		if n := find(doc, func(n *html.Node) bool { return n.Data == tag }); n != nil {
			t.Errorf("page has a <%s>", tag)
		}
	}
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if all := findAll(n, match); len(all) > 0 {
		return all[0]
	}
	return nil
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	if n == nil {
		return nil
	}
	var out []*html.Node
	walk(n, func(c *html.Node) {
		if c != n && c.Type == html.ElementNode && match(c) {
			out = append(out, c)
		}
	})
	return out
}

// walk visits n and its descendants in document order.
func walk(n *html.Node, visit func(*html.Node)) {
	visit(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, visit)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}
