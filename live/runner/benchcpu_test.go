package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stormsim/stormsim/history"
)

// cpuWatch samples the CPU time of this process's children while a
// benchmark run goes on, by process: /proc/PID/stat's utime + stime of each
// child, kept at its last reading once the child is gone.
type cpuWatch struct {
	self0, kids0 syscall.Rusage
	done         chan struct{}
	wg           sync.WaitGroup

	mu     sync.Mutex
	last   map[int]procCPU // by pid
	series []cpuSample     // every sample's totals, in time order
}

// cpuSample is the CPU seconds by process at one instant, from the watch's
// start: what the window between two samples used is their difference.
type cpuSample struct {
	at     time.Time
	cpu    map[string]float64
	kernel float64
}

type procCPU struct {
	role     string
	sec, sys float64 // CPU seconds, and the kernel's part of them
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

func startCPUWatch() *cpuWatch {
	w := &cpuWatch{done: make(chan struct{}), last: map[int]procCPU{}}
	syscall.Getrusage(syscall.RUSAGE_SELF, &w.self0)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &w.kids0)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			w.sample()
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// sample reads every child's CPU time once.
func (w *cpuWatch) sample() {
	self := filepath.Base(os.Args[0])
	for _, pid := range ownChildren() {
		ppid, user, sys, ok := statCPU(pid)
		sec := user + sys
		if !ok || ppid != os.Getpid() {
			continue
		}
		w.mu.Lock()
		p, seen := w.last[pid]
		if !seen || p.role == self || p.role == "other" {
			// A child read between its fork and its exec still shows this
			// binary's command line, and one read during its exec an empty
			// one: it is named again at the next sample.
			p.role = procRole(pid)
		}
		p.sec, p.sys = max(p.sec, sec), max(p.sys, sys)
		w.last[pid] = p
		w.mu.Unlock()
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	at := cpuSample{at: time.Now(), cpu: map[string]float64{"clients": cpuSec(ru) - cpuSec(w.self0)}, kernel: sysSec(ru) - sysSec(w.self0)}
	w.mu.Lock()
	for _, p := range w.last {
		at.cpu[p.role] += p.sec
		at.kernel += p.sys
	}
	w.series = append(w.series, at)
	w.mu.Unlock()
}

// window returns the CPU seconds by process, and the kernel's part, between
// the last sample at or before from and the first at or after to, with the
// times of those two samples; ok is false when the samples do not span it.
// Call it after stop.
func (w *cpuWatch) window(from, to time.Time) (cpu map[string]float64, kernel float64, t0, t1 time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, j := -1, -1
	for k, s := range w.series {
		if !s.at.After(from) {
			i = k
		}
		if j < 0 && !s.at.Before(to) {
			j = k
		}
	}
	if i < 0 || j <= i {
		return nil, 0, time.Time{}, time.Time{}, false
	}
	a, b := w.series[i], w.series[j]
	cpu = map[string]float64{}
	for k, v := range b.cpu {
		cpu[k] = v - a.cpu[k]
	}
	return cpu, b.kernel - a.kernel, a.at, b.at, true
}

// ownChildren lists this process's children from /proc/self/task/*/children,
// which names the children each thread forked: a few files, where a scan of
// /proc would read every process on the machine and charge it to the
// clients' CPU.
func ownChildren() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// stop ends the sampling and returns the CPU seconds by process: clients
// (this process: the clients and the runner), lb, replica N, redis, and
// unattributed, what the children used that the samples missed (their last
// moments before they were killed); and the kernel's part of the processes'
// sampled seconds (system time).
func (w *cpuWatch) stop() (map[string]float64, float64) {
	close(w.done)
	w.wg.Wait()
	var self1, kids1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids1)
	out := map[string]float64{"clients": cpuSec(self1) - cpuSec(w.self0)}
	kernel := sysSec(self1) - sysSec(w.self0)
	var sampled float64
	w.mu.Lock()
	for _, p := range w.last {
		out[p.role] += p.sec
		sampled += p.sec
		kernel += p.sys
	}
	w.mu.Unlock()
	if rest := cpuSec(kids1) - cpuSec(w.kids0) - sampled; rest > 0 {
		out["unattributed"] = rest
	}
	return out, kernel
}

// statCPU reads a process's parent and CPU seconds in user mode (utime)
// and in the kernel (stime).
func statCPU(pid int) (ppid int, user, sys float64, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, 0, false
	}
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(data[end+1:])) // state, ppid, …; utime and stime are fields 14 and 15 of the line
	if len(f) < 13 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ppid, ut / clockTicks, st / clockTicks, true
}

// procRole names a child by what it runs: lb, replica N, redis, or its
// command.
func procRole(pid int) string {
	args := procArgs(pid)
	switch {
	case len(args) == 0:
		return "other"
	case strings.Contains(filepath.Base(args[0]), "redis-server"):
		return "redis"
	case len(args) > 1 && args[1] == "lb":
		return "lb"
	case len(args) > 1 && args[1] == "serve":
		for i, a := range args {
			if a == "--slot" && i+1 < len(args) {
				return "replica " + args[i+1]
			}
		}
		return "replica"
	}
	return filepath.Base(args[0])
}

func cpuSec(r syscall.Rusage) float64 {
	return sysSec(r) + float64(r.Utime.Sec) + float64(r.Utime.Usec)/1e6
}

// sysSec is the kernel's part of cpuSec.
func sysSec(r syscall.Rusage) float64 { return float64(r.Stime.Sec) + float64(r.Stime.Usec)/1e6 }

// steadyCPU is the CPU a level used while every one of its streams was
// open: from 2 s after the last arrival to 2 s before the first call's
// last event, the part of the run the relay floor's 20 s correspond to.
// The whole-run figure also carries the arrivals (a connection, an
// initialize and a call per stream), the calls' ends and the judging.
type steadyCPU struct {
	from, to  float64 // the window, s into the run (the samples' own times)
	cpu       map[string]float64
	kernel    float64
	delivered int64      // events received in the window
	phases    []cpuPhase // the whole run in three stretches, the window the middle one
	streams   int
}

// cpuPhase is the CPU all processes used in one stretch of a run, and the
// events received in it.
type cpuPhase struct {
	name      string
	from, to  float64 // s into the run
	cpu       float64
	delivered int64
}

// steadyWindow measures the steady window of a run that started at
// started, its calls events long, from the watch's samples and the
// receipts' times; zero when the calls are too short to have one.
func steadyWindow(w *cpuWatch, started time.Time, h *history.History, events int) steadyCPU {
	from, to := started.Add(time.Duration(benchRamp+2)*time.Second), started.Add(time.Duration(events-2)*time.Second)
	if !to.After(from.Add(5 * time.Second)) {
		return steadyCPU{}
	}
	cpu, kernel, t0, t1, ok := w.window(from, to)
	if !ok {
		return steadyCPU{}
	}
	st := steadyCPU{from: t0.Sub(started).Seconds(), to: t1.Sub(started).Seconds(), cpu: cpu, kernel: kernel, streams: len(h.Calls)}
	st.delivered = receivedIn(h, int64(t0.Sub(started)), int64(t1.Sub(started)))
	st.phases = w.phases(started, h, []string{"arrivals", "steady", "ends"}, []time.Time{t0, t1})
	return st
}

// receivedIn counts the events (not the priming ones) received in (lo, hi],
// ns into the run.
func receivedIn(h *history.History, lo, hi int64) int64 {
	var n int64
	for _, r := range h.Receipts {
		if r.Index >= 1 && r.T > lo && r.T <= hi {
			n++
		}
	}
	return n
}

// phases splits the watch's samples at cuts (each rounded to the last
// sample at or before it) into len(cuts)+1 stretches, from the first
// sample to the last. Call it after stop.
func (w *cpuWatch) phases(started time.Time, h *history.History, names []string, cuts []time.Time) []cpuPhase {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.series) < 2 {
		return nil
	}
	idx := []int{0}
	for _, c := range cuts {
		i := idx[len(idx)-1]
		for i+1 < len(w.series) && !w.series[i+1].at.After(c) {
			i++
		}
		idx = append(idx, i)
	}
	idx = append(idx, len(w.series)-1)
	total := func(s cpuSample) (t float64) {
		for _, v := range s.cpu {
			t += v
		}
		return t
	}
	var out []cpuPhase
	for k := range names {
		a, b := w.series[idx[k]], w.series[idx[k+1]]
		p := cpuPhase{name: names[k], from: a.at.Sub(started).Seconds(), to: b.at.Sub(started).Seconds(), cpu: total(b) - total(a)}
		p.delivered = receivedIn(h, int64(a.at.Sub(started)), int64(b.at.Sub(started)))
		out = append(out, p)
	}
	return out
}

func (s steadyCPU) total() float64 {
	var t float64
	for _, v := range s.cpu {
		t += v
	}
	return t
}

func (s steadyCPU) roles() []string {
	var out []string
	for k := range s.cpu {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// print prints the window's CPU per delivered event, split by process.
func (s steadyCPU) print(n int) {
	if s.delivered == 0 {
		return
	}
	d := float64(s.delivered)
	fmt.Printf("  steady, %.1f to %.1f s into the run, all %d streams open: %.1f µs per delivered event (%d events)\n", s.from, s.to, n, s.total()/d*1e6, s.delivered)
	for _, k := range s.roles() {
		fmt.Printf("    %-12s %7.1f µs\n", k, s.cpu[k]/d*1e6)
	}
	fmt.Printf("    %-12s %7.1f µs  (the kernel's part)\n", "kernel", s.kernel/d*1e6)
	s.printPhases()
}

// printPhases prints the run's CPU in its three stretches (the arrivals, the
// window, and the calls' ends with the run's close) and, for each, what
// it used beyond the steady window's CPU per event for the events it
// carried, per stream: an estimate of what a stream's arrival, its end and
// the work after the calls cost once, on the assumption that an event costs
// the same in every stretch (fewer streams open batch fewer wake-ups, so
// the events outside the window cost more and the estimate is high).
func (s steadyCPU) printPhases() {
	if len(s.phases) == 0 || s.streams == 0 {
		return
	}
	per := s.total() / float64(s.delivered)
	fmt.Printf("  by stretch of the run (CPU of all processes; beyond the steady rate per event, per stream):\n")
	for _, p := range s.phases {
		extra := "" // the window's own is zero by construction
		if p.name != "steady" {
			extra = fmt.Sprintf(", %+.2f ms per stream", (p.cpu-per*float64(p.delivered))/float64(s.streams)*1e3)
		}
		fmt.Printf("    %-9s %5.1f to %5.1f s: %6.1f s CPU, %8d events%s\n", p.name, p.from, p.to, p.cpu, p.delivered, extra)
	}
}
