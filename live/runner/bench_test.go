package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
)

// BenchmarkLiveStreams measures what the live engine holds on this machine:
// memory-sticky with 3 replicas behind the proxy, every client one call of
// 62 events at 1 event/s. For each level of concurrent streams it counts the
// streams that got at least 99% of their events within 1 s of production
// over the call's 60 s and more, and the CPU time (this process: clients and
// LB; the replicas: reaped children) per delivered event. At the highest
// At the level that held the most streams it then cuts every stream at once
// and times how long the reconnect storm takes to absorb: from the cut to the
// first new event of the last stream to recover.
//
// STORMSIM_BENCH_STREAMS sets the levels (default 1000,2000,3000,4000,5000:
// each stream holds three sockets in this process, the clients' end and the
// LB's two, so the 20,000 open files a process gets here cap a level at
// about 6,500).
func BenchmarkLiveStreams(b *testing.B) {
	raiseNoFile(b)
	levels := []int{1000, 2000, 3000, 4000, 5000}
	if v := os.Getenv("STORMSIM_BENCH_STREAMS"); v != "" {
		levels = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				b.Fatalf("STORMSIM_BENCH_STREAMS: %q is not a list of positive counts", v)
			}
			levels = append(levels, n)
		}
	}
	for range b.N {
		best, bestN := 0, levels[0]
		for _, n := range levels {
			held, total, cpuPerEv, _ := benchRun(b, n, false)
			fmt.Printf("streams %6d: held %6d (%.1f%%) with >=99%% of events within 1 s; CPU %.1f µs per delivered event\n",
				n, held, 100*float64(held)/float64(total), cpuPerEv*1e6)
			b.ReportMetric(float64(held), fmt.Sprintf("held@%d", n))
			b.ReportMetric(cpuPerEv*1e6, fmt.Sprintf("cpu-µs/event@%d", n))
			if held > best {
				best, bestN = held, n
			}
		}
		b.ReportMetric(float64(best), "streams-held")
		fmt.Printf("most streams held: %d (of %d)\n", best, bestN)
		n := bestN
		_, _, _, storm := benchRun(b, n, true)
		fmt.Printf("storm of %d reconnects: absorbed in %.2f s (recovery p50 %.2f s, p99 %.2f s)\n", n, storm[2], storm[0], storm[1])
		b.ReportMetric(storm[2], "storm-absorb-s")
	}
}

// benchRun runs one level: n clients arriving over 10 s. With storm, every
// open stream is cut at 40 s. It returns the streams held, the calls, the
// CPU seconds per delivered event, and the storm's recovery p50, p99 and
// max in seconds.
func benchRun(b *testing.B, n int, storm bool) (int, int, float64, [3]float64) {
	b.Helper()
	sets := []string{
		"replicas=3", "duration=75s", "drain=5s",
		"workload.clients=" + strconv.Itoa(n), "workload.arrival_rate=" + strconv.Itoa(max(n/10, 1)),
		"workload.calls_per_client=1", "workload.think=0s", "workload.events_min=62", "workload.events_max=62",
		"workload.event_rate=1", "workload.drop_every=0s",
		"store.memory_cap_bytes=1073741824",
	}
	sc := load(b, "steady", sets)
	if storm {
		sc.Faults = append(sc.Faults, &faults.ClientDrop{Kind_: "client-drop", At: 40 * time.Second, Fraction: 1})
	}
	abs, _ := filepath.Abs("../../scenarios.toml")
	var self0, kids0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids0)
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Set: sets, Designs: []string{"memory-sticky"}})
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the replicas be reaped
	var self1, kids1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids1)
	cpu := cpuSec(self1) - cpuSec(self0) + cpuSec(kids1) - cpuSec(kids0)
	fmt.Printf("CPU: clients and LB %.1f s, replicas and Redis %.1f s\n", cpuSec(self1)-cpuSec(self0), cpuSec(kids1)-cpuSec(kids0))
	h := out.Histories["memory-sticky"]
	d := out.Report.Design("memory-sticky")
	cpuPerEv := cpu / float64(max(d.Totals.EventsDelivered, 1))

	prod := map[[4]int32]int64{}
	for _, p := range h.Produced {
		if !p.Start {
			prod[[4]int32{p.Client, p.Seq, p.Attempt, p.Index}] = p.T
		}
	}
	onTime := map[[2]int32]int32{}
	for _, r := range h.Receipts {
		if t0, ok := prod[[4]int32{r.Client, r.Seq, r.Attempt, r.Index}]; ok && r.Index >= 1 && r.T-t0 <= int64(time.Second) {
			onTime[[2]int32{r.Client, r.Seq}]++
		}
	}
	held := 0
	for _, c := range h.Calls {
		if c.Outcome == clients.Completed && float64(onTime[[2]int32{c.Client, c.Seq}]) >= 0.99*float64(c.E) {
			held++
		}
	}
	var st [3]float64
	if storm {
		var cut int64 = -1
		for _, a := range h.Faults {
			if a.Kind == "client-drop" {
				cut = a.At
			}
		}
		var rec []float64
		for _, dr := range h.Drops {
			if dr.Cause != history.DropFault {
				continue
			}
			first := int64(math.MaxInt64)
			for _, r := range h.Receipts {
				if r.Client == dr.Client && r.Seq == dr.Seq && r.T > dr.T && r.Index >= 1 && r.T < first {
					first = r.T
				}
			}
			if first == math.MaxInt64 {
				first = int64(sc.Duration + sc.Drain) // never recovered within the run
			}
			rec = append(rec, float64(first-cut)/1e9)
		}
		if len(rec) == 0 {
			b.Fatal("the storm cut no stream")
		}
		slices.Sort(rec)
		st = [3]float64{rec[len(rec)/2], rec[min(len(rec)-1, len(rec)*99/100)], rec[len(rec)-1]}
		fmt.Printf("storm: %d streams cut\n", len(rec))
	}
	return held, len(h.Calls), cpuPerEv, st
}

func cpuSec(r syscall.Rusage) float64 {
	return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
}

// raiseNoFile lifts the open-file limit: 10,000 streams through an
// in-process LB hold three sockets each in this process.
func raiseNoFile(b *testing.B) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	want := uint64(1 << 17)
	if lim.Cur >= want {
		return
	}
	nl := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nl); err != nil {
		nl = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nl)
		fmt.Printf("open-file limit stays at %d (%v): fewer streams may fit\n", lim.Max, err)
	}
}
