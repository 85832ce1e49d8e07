package cpuprof

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// childEnv makes the test binary a profiled child (TestMain).
const childEnv = "STORMSIM_CPUPROF_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		Start("child")
		os.Stdout.WriteString("ready\n")
		for i := 0; i < 1000; i++ { // a bounded wait: the test kills it first
			time.Sleep(10 * time.Millisecond)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A child started with DirEnv writes a whole profile when Collect asks,
// and serves on after it: the file has its final name, pprof's gzip
// header, and the process is still running.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", DirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the child said %q; want ready", line)
	}
	t.Setenv(DirEnv, dir)
	Collect([]int{cmd.Process.Pid})
	data, err := os.ReadFile(Path(dir, "child", cmd.Process.Pid))
	if err != nil {
		t.Fatalf("no profile after Collect: %v", err)
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Errorf("the profile starts with %x; want gzip's 1f8b", data[:min(len(data), 2)])
	}
	time.Sleep(50 * time.Millisecond) // a SIGUSR1 nobody handled would have ended it by now
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if i := bytes.LastIndexByte(stat, ')'); err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		t.Errorf("the child ended when asked for its profile (stat %q, %v)", stat, err)
	}
}

// Without DirEnv a process writes no profile, and Collect signals nobody.
func TestOffWithoutTheVariable(t *testing.T) {
	t.Setenv(DirEnv, "")
	stop := Start("off")
	stop()
	Collect([]int{os.Getpid()}) // a SIGUSR1 would end this test binary
}
