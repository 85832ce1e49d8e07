package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// launchEnv makes the test binary a small launcher instead of running the
// tests: it runs the JSON-encoded command line it holds and prints the
// child's exit code and peak RSS as JSON. A child forked from a test binary
// that has been running simulations inherits its high-water mark (Linux
// counts the memory before exec in ru_maxrss); forked from a fresh launcher,
// its peak RSS is its own.
const launchEnv = "STORMSIM_TEST_LAUNCH"

// launched is what the launcher prints.
type launched struct {
	Exit   int    `json:"exit"`
	MaxKiB int64  `json:"max_rss_kib"`
	Stderr string `json:"stderr"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(launchEnv); spec != "" {
		var argv []string
		if err := json.Unmarshal([]byte(spec), &argv); err != nil || len(argv) == 0 {
			os.Stderr.WriteString(launchEnv + ": want a JSON list of the command line\n")
			os.Exit(3)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a killed launcher takes the command with it
		var stderr limitedBuffer
		cmd.Stderr = &stderr
		cmd.Run()
		if cmd.ProcessState == nil {
			os.Stderr.WriteString(launchEnv + ": the command did not start\n")
			os.Exit(3)
		}
		json.NewEncoder(os.Stdout).Encode(launched{
			Exit: cmd.ProcessState.ExitCode(), MaxKiB: cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, Stderr: string(stderr),
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer []byte

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(*b); room > 0 {
		*b = append(*b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}
