package sim

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkMillionWork runs BenchmarkMillion's two children, deploy-restart
// with all six designs at 100,000 and at 1,000,000 clients, under
// valgrind's cachegrind without its cache model, which counts the
// instructions a process executes whatever its caches and TLBs do. It
// reports the instructions per queue event at each size and the 1M run's
// instructions over the 100k run's:
//   - instr-1m/100k: the whole process, setup, collector and engine loops;
//   - instr-engine-1m/100k: only the code outside the Go runtime (the
//     engine, the client brain, the protocol rules, the standard library);
//   - instr-runtime-1m/100k: only the runtime's (the collector, allocation,
//     memmove and memclr).
//
// wall-1m/100k (BenchmarkMillion) is this ratio times the ratio of the
// time each instruction takes: a ratio near 10 here beside a larger wall
// ratio says the work grows linearly and each instruction waits longer at
// 1M; a ratio above 10.5 here says the engine does more work per client at
// 1M. Only the code outside the runtime is a measure of the work: valgrind
// runs one thread at a time, and the runtime's count includes its
// scheduler's spinning and the collector's idle workers, which run for as
// long as the other threads leave them, so it moves between runs of the same
// tree. valgrind is required; the wall times under it mean nothing.
func BenchmarkMillionWork(b *testing.B) {
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		b.Fatalf("BenchmarkMillionWork counts instructions with valgrind, which is not on PATH (Debian: apt-get install valgrind): %v", err)
	}
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		small, big := workChild(b, vg, dir, 100_000), workChild(b, vg, dir, 1_000_000)
		for _, r := range []struct {
			name string
			w    childWork
		}{{"100k", small}, {"1m", big}} {
			q := float64(r.w.run.queue)
			b.ReportMetric(float64(r.w.total)/q, "instr/queue-event-"+r.name)
			b.ReportMetric(float64(r.w.total-r.w.runtime)/q, "instr-engine/queue-event-"+r.name)
		}
		b.ReportMetric(float64(big.total)/float64(small.total), "instr-1m/100k")
		b.ReportMetric(float64(big.total-big.runtime)/float64(small.total-small.runtime), "instr-engine-1m/100k")
		b.ReportMetric(float64(big.runtime)/float64(small.runtime), "instr-runtime-1m/100k")
		b.ReportMetric(float64(big.run.queue)/float64(small.run.queue), "queue-events-1m/100k")
		printGrowth(small, big, 12)
	}
}

// printGrowth prints the n functions whose own instructions per queue
// event grew the most from the 100k run to the 1M run, with both counts:
// where the work that is not linear in the clients is.
func printGrowth(small, big childWork, n int) {
	qs, qb := float64(small.run.queue), float64(big.run.queue)
	type row struct {
		fn     string
		at, to float64
	}
	var rows []row
	for fn, ir := range big.fns {
		rows = append(rows, row{fn, float64(small.fns[fn]) / qs, float64(ir) / qb})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.to-b.at, a.to-a.at) })
	fmt.Printf("instructions per queue event, the %d functions whose own count grew most from 100k to 1M:\n", n)
	fmt.Printf("%10s %10s %8s  %s\n", "100k", "1M", "growth", "function")
	for _, r := range rows[:min(n, len(rows))] {
		fmt.Printf("%10.1f %10.1f %+8.1f  %s\n", r.at, r.to, r.to-r.at, r.fn)
	}
}

// childWork is what one child counted under cachegrind.
type childWork struct {
	run childRun
	cgCounts
}

// cgCounts is a cachegrind output file's instruction counts.
type cgCounts struct {
	total, runtime int64            // all, and in functions of package runtime
	fns            map[string]int64 // each function's own
}

func workChild(b *testing.B, vg, dir string, n int) childWork {
	b.Helper()
	out := filepath.Join(dir, fmt.Sprintf("cachegrind.%d.out", n))
	// valgrind 3.19 does not decode RDTSCP, which the runtime's cputicks
	// uses where the CPU has it; without it the runtime reads RDTSC.
	godebug := "cpu.rdtscp=off"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	run := benchChildUnder(b, n, []string{vg, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=" + out, "--quiet"}, []string{"GODEBUG=" + godebug})
	cg, err := readCachegrind(out)
	if err != nil {
		b.Fatalf("the run at %d clients under cachegrind: %v", n, err)
	}
	return childWork{run: run, cgCounts: cg}
}

// readCachegrind sums a cachegrind output file's instruction counts (its
// only event, --cache-sim=no): over every function, over the functions of
// package runtime, and per function. The file lists, under each fn= line,
// lines of a source line number and the instructions counted there; its
// summary line is the total, which the sum must equal.
func readCachegrind(path string) (cgCounts, error) {
	out := cgCounts{fns: map[string]int64{}}
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	var inRuntime bool
	var fn string
	summary := int64(-1)
	named := 0 // functions with a name
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "fn="); ok {
			fn = name
			if fn != "???" {
				named++
			}
			inRuntime = strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/internal") || strings.HasPrefix(fn, "internal/runtime")
			continue
		}
		if v, ok := strings.CutPrefix(line, "summary: "); ok {
			if summary, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return out, fmt.Errorf("%s: summary %q: %v", path, v, err)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || line[0] < '0' || line[0] > '9' {
			continue
		}
		ir, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return out, fmt.Errorf("%s: %q: %v", path, line, err)
		}
		out.total += ir
		out.fns[fn] += ir
		if inRuntime {
			out.runtime += ir
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %v", path, err)
	}
	if summary < 0 || summary != out.total {
		return out, fmt.Errorf("%s: the functions' counts sum to %d, the summary says %d", path, out.total, summary)
	}
	if named == 0 {
		return out, fmt.Errorf("%s: no function has a name: the binary has no symbol table (go test strips it; build with go test -c)", path)
	}
	return out, nil
}

func TestReadCachegrind(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "cg.out")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "desc: I1 cache: 32768 B\ncmd: x\nevents: Ir\nfl=a.go\n"
	p := write(head + "fn=runtime.scanobject\n1 700\n2 50\nfn=github.com/x/sim.(*engine).run\n3 200\nfl=b.go\nfn=internal/runtime/maps.(*Map).Get\n4 25\nfn=main.main\n0 25\nsummary: 1000\n")
	cg, err := readCachegrind(p)
	if err != nil || cg.total != 1000 || cg.runtime != 775 || cg.fns["main.main"] != 25 || cg.fns["runtime.scanobject"] != 750 {
		t.Fatalf("%+v, err %v; want 1000 in all, 775 in the runtime, main.main 25, runtime.scanobject 750", cg, err)
	}
	if _, err := readCachegrind(write(head + "fn=main.main\n1 10\nsummary: 11\n")); err == nil || !strings.Contains(err.Error(), "sum to 10, the summary says 11") {
		t.Errorf("a summary that is not the sum: err %v", err)
	}
	if _, err := readCachegrind(write(head + "fn=main.main\n1 10\n")); err == nil {
		t.Error("a file with no summary read without an error")
	}
	if _, err := readCachegrind(write(head + "fn=???\n1 10\nsummary: 10\n")); err == nil || !strings.Contains(err.Error(), "no symbol table") {
		t.Errorf("a stripped binary's file: err %v", err)
	}
	if _, err := readCachegrind(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file read without an error")
	}
}
