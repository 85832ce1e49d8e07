//go:build unix

package child

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// guardScript ignores the signals a graceful stop sends the group, waits
// for end of file on its stdin, then kills its whole process group.
const guardScript = `trap '' TERM INT HUP QUIT USR1 USR2 PIPE; read _; kill -KILL 0`

// GuardGroup puts a watchdog in the process group pgid, which a command
// started with Setpgid leads: a /bin/sh that reads a pipe only this
// process holds open and kills the group at end of file. When this process
// dies without cleaning up (SIGKILL), the kernel closes the pipe and the
// watchdog takes down the whole group, whatever the command started that
// Pdeathsig cannot reach (the server `go run` builds and starts, the
// processes of a shell line). Closing the returned Closer does the same at
// once; the caller closes it once the group is gone. The watchdog is killed
// with the group.
func GuardGroup(pgid int) (io.Closer, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = cmd.Start() // no Pdeathsig: it must outlive this process to act
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	go cmd.Wait() //nolint:errcheck // reaped; it ends with its group
	return w, nil
}
