package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live/redisd"
)

// procStat reads a process's command name, parent and process group from
// /proc/PID/stat; ok is false when it is gone.
func procStat(pid int) (comm string, ppid, pgrp int, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, 0, false
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	f := strings.Fields(s[end+1:]) // state, ppid, pgrp, …
	if len(f) < 3 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return s[open+1 : end], ppid, pgrp, true
}

// childrenOf lists the live (not zombie) children of pid, by command name.
func childrenOf(pid int) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, ppid, _, ok := procStat(p); ok && ppid == pid && redisd.Alive(p) {
			out[p] = comm
		}
	}
	return out
}

// inGroup lists the live processes of process group pgrp.
func inGroup(pgrp int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, _, g, ok := procStat(p); ok && g == pgrp && redisd.Alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// waitChildren waits until pid has a redis-server child and replicas
// children running bin as `serve`, and returns the redis-server and every
// child running bin (the replicas and the LB, `stormsim lb`); it fails the
// test after limit.
func waitChildren(t *testing.T, pid int, replicas int, limit time.Duration) (redis int, serve []int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		redis, serve = 0, nil
		n := 0
		for p, comm := range childrenOf(pid) {
			switch {
			case comm == "redis-server":
				redis = p
			case comm == filepath.Base(bin)[:min(len(filepath.Base(bin)), 15)]: // comm is cut at 15 bytes
				serve = append(serve, p)
				if args := procArgs(p); len(args) > 1 && args[1] == "serve" {
					n++
				}
			}
		}
		if redis != 0 && n >= replicas {
			return redis, serve
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for pid %d to start a redis-server and %d replicas; it has %v", limit, pid, replicas, childrenOf(pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procArgs reads a process's arguments from /proc/PID/cmdline; nil when it
// is gone.
func procArgs(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}
