package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormsim/stormsim/workload"
)

// TestListenLive runs testdata/listen.toml live: every client holds a
// listen stream through the LB; a hard restart and a graceful one drop
// them, and the clients re-open them. The listen block reconciles with the
// replicas' counters (no note), the restarts lost notifications, and what
// was sent is the schedule's count from each client's arrival to the end
// of the duration, computed here from the arrivals and the rate, less the
// tail of a stream that dropped and never re-opened (at most 10%).
func TestListenLive(t *testing.T) {
	abs, _ := filepath.Abs("testdata/listen.toml")
	sc, err := loadFile(t, abs, "lv", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs})
	if err != nil {
		t.Fatal(err)
	}
	skipSaturated(t, out.Report)
	d := out.Report.Designs[0]
	l := d.Listen
	if l == nil {
		t.Fatalf("no listen block; notes %v", d.Notes)
	}
	for _, n := range d.Notes {
		if len(n) > 7 && n[:7] == "listen:" {
			t.Errorf("note: %s", n)
		}
	}
	var want float64
	for _, at := range workload.Arrivals(sc) {
		want += (sc.Duration - time.Duration(at)).Seconds() * sc.Workload.NotificationRate
	}
	if s := float64(l.Sent); s > want+float64(sc.Workload.Clients) || s < 0.9*want {
		t.Errorf("sent %d, the schedule has %.0f from the arrivals to the end", l.Sent, want)
	}
	if l.Drops < 1 || l.Reopened < 1 || l.Lost < 1 || l.Sent != l.Received+l.Lost || l.ReopenPeakPerS <= 0 {
		t.Errorf("listen block %+v: want drops, re-opens, a peak and losses, and sent = received + lost", *l)
	}
	t.Logf("listen %+v", *l)
}
