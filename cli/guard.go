package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
)

// probeOut checks, before anything runs, that results can be written under
// dir: the nearest folder of dir that exists must be a folder in which a
// file can be created. It creates and removes one probe file and leaves
// nothing behind, not even dir. A run whose results cannot be written
// fails at once, rather than after the run.
func probeOut(dir string) error {
	at := filepath.Clean(dir)
	for {
		st, err := os.Stat(at)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("--out: %s is not a folder: results under %s cannot be written", at, dir)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--out: %w", err)
		}
		parent := filepath.Dir(at)
		if parent == at {
			return fmt.Errorf("--out: no folder of %s exists", dir)
		}
		at = parent
	}
	f, err := os.CreateTemp(at, ".stormsim-probe-*")
	if err != nil {
		return fmt.Errorf("--out: results under %s cannot be written: %w", dir, errors.Unwrap(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// memoryShare is the share of the machine's memory a simulation may be
// estimated to need before the run warns.
const memoryShare = 0.5

// memoryWarning warns when the simulator's estimated need for sc with n
// designs is above memoryShare of the machine's memory; "" when it is not,
// or the memory is unknown.
func memoryWarning(sc *scenario.Scenario, n int) string {
	total := machineMemory()
	if total <= 0 {
		return ""
	}
	est := sim.MemoryEstimate(sc, n)
	if float64(est) <= memoryShare*float64(total) {
		return ""
	}
	return fmt.Sprintf("workload: the simulation needs an estimated %s of memory for %d arriving clients × %s (the machine has %s): fewer clients, or --designs, keep it within reach",
		gib(est), scenario.Arrivable(sc), plural(n, "design"), gib(total))
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// machineMemory is the machine's memory in bytes from /proc/meminfo, or 0
// where that is not available.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
