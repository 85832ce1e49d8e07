package runner

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/live/replica"
)

// BenchmarkRelayFloor measures what the live engine's process layout
// costs before any of its own work: the same processes (3 replicas, an
// LB of its own, the clients in this process) and the same hops (clients
// to the LB over loopback TCP, the LB to the replicas over Unix sockets),
// with every stream a bare byte relay. A replica writes one frame of
// floorFrame bytes a second to each of its connections, from a goroutine
// of their own paced as the reference replica paces a call
// (replica.Pacer, on its 5 ms grid); the LB copies each upstream connection to its
// client through a buffer; a client reads and counts. No HTTP, no SSE
// parsing, no store, no log, no history.
//
// It prints the CPU time per delivered event, split by process as
// BenchmarkLiveStreams splits it, for STORMSIM_FLOOR_STREAMS streams
// (default 6000 and 9000), once with the children at Go's default
// GOMAXPROCS and once at 1. BenchmarkLiveStreams's figure less this one is
// what HTTP, SSE, the stores and the recording cost on top of the layout.
// It also prints the part of the floor spent in the kernel (system time,
// all processes together).
func BenchmarkRelayFloor(b *testing.B) {
	levels := []int{6000, 9000}
	if v := os.Getenv("STORMSIM_FLOOR_STREAMS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 9500 {
			b.Fatalf("STORMSIM_FLOOR_STREAMS=%q: want a count of streams from 1 to 9500 (the LB holds two files per stream)", v)
		}
		levels = []int{n}
	}
	for range b.N {
		for _, n := range levels {
			for _, procs := range []string{"", "1"} {
				r := floorRun(b, n, procs)
				label, metric := "default", "default"
				if procs != "" {
					label, metric = procs, "gomaxprocs"+procs
				}
				fmt.Printf("relay floor at %d streams, children at GOMAXPROCS %s: %.1f µs per delivered event, all processes together (%d events in %.0f s, %.1f%% of those due)\n",
					n, label, r.total(), r.events, floorWindow.Seconds(), 100*float64(r.events)/(float64(n)*floorWindow.Seconds()))
				for _, k := range []string{"clients", "lb", "replicas", "kernel"} {
					fmt.Printf("  %-14s %7.1f µs\n", k, r.cpu[k]/float64(max(r.events, 1))*1e6)
				}
				b.ReportMetric(r.total(), fmt.Sprintf("cpu-µs/event-%d-%s", n, metric))
			}
		}
	}
}

// floorFrame is about the size of one of BenchmarkLiveStreams's SSE
// frames: an id line, a progress notification padded with 256 bytes, and
// the chunked encoding's framing.
const floorFrame = 448

// floorWindow is how long a floor run measures, once every stream is up.
const floorWindow = 20 * time.Second

type floorResult struct {
	events int64
	cpu    map[string]float64 // CPU seconds in the window: clients, lb, replicas; kernel, their part in the kernel
}

func (r floorResult) total() float64 {
	return (r.cpu["clients"] + r.cpu["lb"] + r.cpu["replicas"]) / float64(max(r.events, 1)) * 1e6
}

// floorRun runs one level: it starts the replicas and the LB, opens n
// streams through the LB, lets them run 2 s, then measures floorWindow.
func floorRun(b *testing.B, n int, procs string) floorResult {
	b.Helper()
	dir := b.TempDir()
	var kids []*exec.Cmd
	defer func() {
		for _, c := range kids {
			c.Process.Kill()
			c.Wait()
		}
	}()
	start := func(role string, args ...string) (*exec.Cmd, *bufio.Reader) {
		c := exec.Command(os.Args[0], args...)
		c.Env = append(os.Environ(), floorRoleEnv+"="+role)
		if procs != "" {
			c.Env = append(c.Env, "GOMAXPROCS="+procs)
		}
		out, err := c.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		c.Stderr = os.Stderr
		if err := child.Start(c); err != nil { // dies with this process, however it ends
			b.Fatal(err)
		}
		kids = append(kids, c)
		rd := bufio.NewReader(out)
		if _, err := rd.ReadString('\n'); err != nil { // each role says "ready" once it listens
			b.Fatalf("relay floor: the %s did not start: %v", role, err)
		}
		return c, rd
	}
	var socks []string
	for i := range 3 {
		socks = append(socks, filepath.Join(dir, fmt.Sprintf("r%d.sock", i)))
		start("replica", socks[i])
	}
	_, lbOut := start("lb", socks...)
	addr, err := lbOut.ReadString('\n')
	if err != nil {
		b.Fatalf("relay floor: the LB gave no address: %v", err)
	}
	var frames atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for i := range n {
		c, err := net.Dial("tcp", addr[:len(addr)-1])
		if err != nil {
			b.Fatalf("relay floor: stream %d of %d: %v", i+1, n, err)
		}
		wg.Add(1)
		go floorClient(c, &frames, stop, &wg)
	}
	time.Sleep(2 * time.Second) // every replica's tickers under way
	cpu0, ev0 := floorCPU(kids), frames.Load()
	time.Sleep(floorWindow)
	cpu1, ev1 := floorCPU(kids), frames.Load()
	r := floorResult{events: (ev1 - ev0) / floorFrame, cpu: map[string]float64{}}
	for k, v := range cpu1 {
		r.cpu[k] = v - cpu0[k]
	}
	return r
}

// floorClient reads one stream until stop, counting its bytes.
func floorClient(c net.Conn, bytes *atomic.Int64, stop chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	go func() { <-stop; c.Close() }()
	buf := make([]byte, 16<<10)
	for {
		k, err := c.Read(buf)
		bytes.Add(int64(k))
		if err != nil {
			return
		}
	}
}

// floorCPU reads the CPU seconds so far of this process and of the
// children, kids[:3] the replicas and kids[3] the LB, and the part of them
// all spent in the kernel.
func floorCPU(kids []*exec.Cmd) map[string]float64 {
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	out := map[string]float64{"clients": cpuSec(self), "kernel": sysSec(self)}
	for i, c := range kids {
		_, user, sys, _ := statCPU(c.Process.Pid)
		if i < 3 {
			out["replicas"] += user + sys
		} else {
			out["lb"] += user + sys
		}
		out["kernel"] += sys
	}
	return out
}

// floorRoleEnv names the role a child of BenchmarkRelayFloor runs, when
// TestMain finds it set.
const floorRoleEnv = "STORMSIM_FLOOR_ROLE"

// floorChild runs this test binary as one of the floor's children, when
// floorRoleEnv asks for it, and never returns then.
func floorChild() {
	role := os.Getenv(floorRoleEnv)
	if role == "" {
		return
	}
	args := os.Args[1:]
	var err error
	switch role {
	case "replica":
		err = floorReplica(args[0])
	case "lb":
		err = floorLB(args)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	fmt.Fprintf(os.Stderr, "relay floor %s: %v\n", role, err)
	os.Exit(1)
}

// floorReplica serves on the Unix socket at path: one frame a second to
// every connection, from the first at a random phase.
func floorReplica(path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	frame := make([]byte, floorFrame)
	for i := range frame {
		frame[i] = 'x'
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			// A random phase, on the reference replica's schedule and grid.
			p := replica.NewPacer(time.Now().Add(rand.N(time.Second)-time.Second), time.Second)
			defer p.Stop()
			for now := range p.C() {
				if _, err := c.Write(frame); err != nil {
					return
				}
				p.After(now)
			}
		}()
	}
}

// floorLB listens on loopback TCP, says its address, and relays every
// connection from the next of the replicas' sockets, in turn.
func floorLB(socks []string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("ready\n%s\n", ln.Addr())
	for i := 0; ; i++ {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		up, err := net.Dial("unix", socks[i%len(socks)])
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			defer up.Close()
			buf := make([]byte, 32<<10)
			io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{up}, buf) // a read and a write per frame, as the LB's proxy does: no splice
		}()
	}
}
