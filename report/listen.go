package report

import (
	"bytes"
	"strconv"
)

// ListenTitle heads summary.md's table of the listen streams.
const ListenTitle = "Listen streams and notifications"

// ListenTableRows is the table of the notification workload's listen
// streams, one row per design, beside the calls re-issued and cancelled
// and the events cancelling saved; nil when no design has a listen block.
// A design without one (an era before 2026-07-28, whose standalone GET
// stream is not modelled) shows n/a.
func (r *Report) ListenTableRows() ([]string, [][]string) {
	any := false
	for _, d := range r.Designs {
		any = any || d.Listen != nil
	}
	if !any {
		return nil, nil
	}
	head := []string{"design", "era", "re-listen peak /s", "re-listen requests", "streams re-opened", "drops",
		"notifications sent", "received", "lost", "lost%", "calls reissued", "calls cancelled", "events saved"}
	var rows [][]string
	for _, d := range r.Designs {
		row := []string{d.Label(), d.Era}
		if l := d.Listen; l != nil {
			row = append(row, strconv.FormatFloat(l.ReopenPeakPerS, 'f', 1, 64), itoa(l.Reopens), itoa(l.Reopened), itoa(l.Drops),
				itoa(l.Sent), itoa(l.Received), itoa(l.Lost), pct(l.Lost, l.Sent))
		} else {
			row = append(row, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a")
		}
		row = append(row, itoa(d.Totals.CallsReissued))
		if c := d.Cancelled; c != nil {
			row = append(row, itoa(c.Calls), itoa(c.EventsSaved))
		} else {
			row = append(row, "-", "-") // an abandoned call runs on before 2026-07-28
		}
		rows = append(rows, row)
	}
	return head, rows
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// listenMarkdown writes the listen table into summary.md, when there is one.
func (r *Report) listenMarkdown(b *bytes.Buffer) {
	head, rows := r.ListenTableRows()
	if head == nil {
		return
	}
	b.WriteString("\n## " + ListenTitle + "\n\n")
	b.WriteString("Re-listen peak: listen requests sent after a drop, per second, in the step with the most. " +
		"A notification sent while a client's listen stream was down is lost (2026-07-28 has no replay). " +
		"Calls cancelled and events saved are the cancelled block's; - where an abandoned call runs on.\n\n")
	mdTable(b, head, rows)
}
