package scenario

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/topology"
)

// warnings lists the settings of s that load but probably do not mean what
// they say. They do not stop a run: each is printed and kept in the
// report's notes.
func (ld *loader) warnings(s *Scenario, layers []*layer) []Warning {
	var out []Warning
	design := ""
	warn := func(where, format string, args ...any) {
		w := Warning{Design: design, Text: where + ": " + fmt.Sprintf(format, args...)}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	w := &s.Workload
	if arrive := Arrivable(s); arrive < int64(w.Clients) {
		warn(origin(layers, "workload", "clients"), "%d clients, but only %d can arrive within duration (%v) at arrival_rate %v/s: the rest never start",
			w.Clients, arrive, s.Duration, w.ArrivalRate)
	}
	shortest := time.Duration(float64(w.EventsMin) / w.EventRate * float64(time.Second))
	for _, d := range s.Designs {
		design = d.Name
		all := append(slices.Clone(layers), ld.designLayer(d.Name)...)
		c := d.Client
		if c.Strategy == clients.StrategyNone && c.Jitter != clients.JitterNone {
			warn(origin(all, "client", "jitter"), "%q does nothing with strategy = \"none\" (design %s reconnects at once, with no delay to jitter)", c.Jitter, d.Name)
		}
		if c.CallTimeout < shortest {
			warn(origin(all, "client", "call_timeout"), "%v is shorter than the shortest call (events_min %d at event_rate %v/s: %v): design %s's clients time out every call",
				c.CallTimeout, w.EventsMin, w.EventRate, shortest, d.Name)
		}
		if d.Events == topology.EventsMemory && d.Store.MemoryCapBytes > 0 {
			if one := d.Store.MemoryEventBytes(w.EventBytes); d.Store.MemoryCapBytes < one {
				warn(origin(all, "store", "memory_cap_bytes"), "%d is smaller than one stored event (%d bytes at event_bytes %d): design %s's store purges every event as it is appended",
					d.Store.MemoryCapBytes, one, w.EventBytes, d.Name)
			}
		}
	}
	return out
}

// Arrivable is how many of s's clients arrive before s ends: the clients
// paced at arrival_rate (growing by arrival_slope per second) within
// duration, at most workload.clients.
func Arrivable(s *Scenario) int64 {
	w := &s.Workload
	d := s.Duration.Seconds()
	rate := math.Round(w.ArrivalRate*1000) / 1000 // the pacer's resolution (workload.Arrivals)
	n := rate*d + w.ArrivalSlope*d*d/2
	if w.ArrivalSlope < 0 && rate > 0 {
		// The rate falls to zero at rate/-slope and stays there.
		stop := math.Min(d, rate/-w.ArrivalSlope)
		n = rate*stop + w.ArrivalSlope*stop*stop/2
	}
	if n >= float64(w.Clients) {
		return int64(w.Clients)
	}
	return int64(math.Max(0, math.Ceil(n)))
}
