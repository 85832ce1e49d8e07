package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/listen"
	"github.com/stormsim/stormsim/protocol"
	"github.com/stormsim/stormsim/report"
)

// listeners are a live run's listening clients under the notification
// workload (workload.notification_rate) at 2026-07-28: one listen.Client
// per virtual client of the shard, from its arrival to the end of the
// scenario's duration, against the design's endpoint (the LB). They run
// beside the clients' calls, not inside their brains: the listen stream is
// a second connection of the same client (sim/listen.go models it so).
type listeners struct {
	iv      int64
	cl      []*listen.Client
	id      []string
	reopens []atomic.Int64 // re-open requests per series step, for the peak
}

// listening reports whether the run's clients hold listen streams: the
// workload is on, the era has them, and the server is stormsim's reference
// replica, whose counters say what it sent.
func (r *liveRun) listening() bool {
	d := r.d
	return r.sc.Workload.NotificationRate > 0 && protocol.CapsOf(d.Era, d.Sessions, d.Events).Listen &&
		d.Own == nil && d.Server == "" && !r.opts.sharded()
}

// startListeners starts a listener per client, each at its arrival; they
// end with the scenario's duration (or ctx).
func (r *liveRun) startListeners(ctx context.Context, wg *sync.WaitGroup) {
	if !r.listening() {
		return
	}
	dr := r.dr
	steps := int((r.horizon + r.sc.Step - 1) / r.sc.Step)
	r.ls = &listeners{iv: protocol.NotifyInterval(r.sc.Workload.NotificationRate), reopens: make([]atomic.Int64, steps+1)}
	end, cancel := context.WithDeadline(ctx, dr.t0.Add(r.sc.Duration))
	var mine sync.WaitGroup
	s1, s2 := dr.seed()
	for _, c := range r.cl {
		i := c.ident()
		id := "c" + strconv.Itoa(int(i))
		at := dr.t0.Add(time.Duration(r.arrivals[i]))
		l := listen.New(dr.endpoint, id, at.UnixNano(), &dr.client, rand.New(rand.NewPCG(s1^uint64(i), s2)), dr.http)
		l.OnReopen = func() {
			if b := int(time.Since(dr.t0) / r.sc.Step); b >= 0 && b < len(r.ls.reopens) {
				r.ls.reopens[b].Add(1)
			}
		}
		r.ls.cl, r.ls.id = append(r.ls.cl, l), append(r.ls.id, id)
		wg.Add(1)
		mine.Add(1)
		go func() {
			defer wg.Done()
			defer mine.Done()
			t := time.NewTimer(time.Until(at))
			defer t.Stop()
			select {
			case <-end.Done():
				return
			case <-t.C:
			}
			l.Run(end, r.ls.iv)
		}()
	}
	go func() { mine.Wait(); cancel() }()
}

// listenRow is the design's listen block from its listeners and the
// replicas' counters, and a note when they do not reconcile (or could not
// be read).
func listenRow(ls *listeners, sc *check.ServerCounts, step time.Duration) (*report.Listen, string) {
	if ls == nil {
		return nil, ""
	}
	if sc == nil {
		return nil, "listen: the replicas' counters could not be read, so the notifications sent are unknown and the design has no listen block"
	}
	out := &report.Listen{}
	var bad []string
	for i, l := range ls.cl {
		got := l.Counts()
		out.Opens += got.Opens
		out.Reopens += got.Reopens
		out.Reopened += got.Reopened
		out.Drops += got.Drops
		out.Received += got.Received
		lc := sc.Listeners[ls.id[i]]
		sent, written := lc.Due, lc.Written
		lost, err := listen.Reconcile(ls.id[i], got, sent, written)
		if err != nil {
			bad = append(bad, err.Error())
		}
		out.Sent += sent
		out.Lost += lost
	}
	var peak int64
	for i := range ls.reopens {
		peak = max(peak, ls.reopens[i].Load())
	}
	out.ReopenPeakPerS = float64(peak) / step.Seconds()
	if len(bad) > 0 {
		sort.Strings(bad)
		return out, fmt.Sprintf("listen: %d listeners do not reconcile with the replicas' counters, first: %s", len(bad), bad[0])
	}
	return out, ""
}
