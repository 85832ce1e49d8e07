// Package tmpdir makes the live engine's temporary folders. Each is named
// for the process that made it (PREFIX<pid>-<random>) and removed by it at
// exit; a process killed before its cleanup could run (SIGKILL) leaves its
// folder behind, and the next Make with the same prefix removes it, once
// no process has that pid.
package tmpdir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Make creates a new folder in the temporary folder, named for prefix and
// this process, after removing the folders of prefix that dead processes
// left.
func Make(prefix string) (string, error) {
	Sweep(prefix)
	return os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-")
}

// Sweep removes the folders Make made for prefix whose process is gone.
// Folders of living processes, and names Make does not make, are left.
func Sweep(prefix string) {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, m := range matches {
		p, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(m), prefix), "-")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || exists(pid) {
			continue
		}
		os.RemoveAll(m) //nolint:errcheck // someone else's, or already gone
	}
}

// exists reports whether a process with this pid exists, as far as this
// process can tell (EPERM: it exists, and is not ours).
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
