package lb

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
)

// An LB process holds two files for every stream it relays, one on each
// side, and a process may open only so many (RLIMIT_NOFILE). At that limit
// the LB can take no new connection, or reach no replica for one it took,
// and answers 503: the harness's limit, which says nothing of the design
// under test. The process counts both (FilesAnswer) so that the run that
// drove it can say so (the host block of a live run) instead of charging
// the design with the refusals.

// pathFiles is the control endpoint's path for the LB's file counts.
const pathFiles = "/lb/files"

// FilesAnswer is the answer to GET pathFiles.
type FilesAnswer struct {
	// Limit is the process's soft limit on open files; 0 where unknown.
	Limit uint64 `json:"limit"`
	// Refused counts the requests answered 503 because no file was left
	// for the connection to the replica.
	Refused int64 `json:"refused"`
	// AcceptFailed counts the listener's accepts that failed for want of
	// a file (the HTTP server retries, backing off up to a second, and
	// the client waits, or its request times out).
	AcceptFailed int64 `json:"accept_failed"`
}

// Short reports whether the process ran out of files at least once.
func (a FilesAnswer) Short() bool { return a.Refused > 0 || a.AcceptFailed > 0 }

// String says what ran short, for a run's report.
func (a FilesAnswer) String() string {
	return fmt.Sprintf("the LB process ran out of open files (limit %d, two a stream): %d requests refused, %d accepts failed",
		a.Limit, a.Refused, a.AcceptFailed)
}

// FileLimit is this process's soft limit on open files, 0 where unknown.
func FileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}

// OutOfFiles reports whether err says the process, or the machine, has no
// file descriptor left.
func OutOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// countingListener counts the connections Accept could not take for want
// of a file; it returns every error as it came, so that the HTTP server
// retries as it does.
type countingListener struct {
	net.Listener
	failed *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && OutOfFiles(err) {
		l.failed.Add(1)
	}
	return c, err
}

// Files reports what the balancer's process ran short of so far; accept
// is the listener's count (Serve).
func (b *Balancer) Files(accept *atomic.Int64) FilesAnswer {
	return FilesAnswer{Limit: FileLimit(), Refused: b.noFiles.Load(), AcceptFailed: accept.Load()}
}
