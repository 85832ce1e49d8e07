package tmpdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A folder made for a process that has exited is removed by the next Make;
// the folders of living processes (this one's, a running child's), and
// names Make does not make, are kept.
func TestMakeSweepsTheDead(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const prefix = "stormsim-tmpdir-test-"
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	alive := exec.Command("sleep", "30")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { alive.Process.Kill(); alive.Wait() }()
	mk := func(name string) string {
		p := filepath.Join(os.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deadDir := mk(prefix + strconv.Itoa(dead.Process.Pid) + "-1")
	aliveDir := mk(prefix + strconv.Itoa(alive.Process.Pid) + "-2")
	oldName := mk(prefix + "123456789")
	mine, err := Make(prefix)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Make(prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want bool
	}{{deadDir, false}, {aliveDir, true}, {oldName, true}, {mine, true}, {again, true}} {
		if _, err := os.Stat(c.dir); (err == nil) != c.want {
			t.Errorf("%s: exists %v, want %v", c.dir, err == nil, c.want)
		}
	}
	if want := prefix + strconv.Itoa(os.Getpid()) + "-"; filepath.Dir(mine) != os.TempDir() || len(filepath.Base(mine)) <= len(want) || filepath.Base(mine)[:len(want)] != want {
		t.Errorf("Make made %s, want %s<random> in %s", mine, want, os.TempDir())
	}
}
