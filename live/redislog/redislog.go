// Package redislog sends go-redis's own log lines (a failed dial, a pool
// that gave up, which go-redis prints raw to stderr by default) to the
// run's log instead of the terminal. go-redis has one logger per process;
// this package installs one, at the first To, that hands each line to every
// sink registered at that moment. A line that comes when none is (from a
// client of a run that has ended: go-redis dials in goroutines of its own,
// which can outlive the client's Close) is dropped, not printed.
//
//	stop := redislog.To(func(msg string) { fmt.Fprintf(runLog, "go-redis: %s\n", msg) })
//	defer stop()
package redislog

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

var (
	install sync.Once
	mu      sync.Mutex
	sinks   []*sink // guarded by mu
)

type sink struct{ f func(msg string) }

type logger struct{}

// Printf hands the line, without go-redis's "redis: " prefix and its
// trailing newline, to every sink; the sinks are called one at a time,
// under mu.
func (logger) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(strings.TrimRight(fmt.Sprintf(format, v...), "\n"), "redis: ")
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sinks {
		s.f(msg)
	}
}

// To sends go-redis's log lines to f until stop is called. f is called
// with one line at a time, never concurrently with itself or another
// sink; it must not call To or stop. While several sinks are registered
// (designs run side by side in one process), each gets every line: go-redis
// does not say which client a line is about.
func To(f func(msg string)) (stop func()) {
	install.Do(func() { redis.SetLogger(logger{}) })
	s := &sink{f: f}
	mu.Lock()
	sinks = append(sinks, s)
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			for i, x := range sinks {
				if x == s {
					sinks = append(sinks[:i:i], sinks[i+1:]...)
					return
				}
			}
		})
	}
}

// Capped wraps f so that it is called for the first limit lines only; the
// line after them is replaced by one saying that the rest are not logged.
// Like f, the result is meant to be called one line at a time.
func Capped(limit int, f func(msg string)) func(msg string) {
	n := 0
	return func(msg string) {
		n++
		switch {
		case n <= limit:
			f(msg)
		case n == limit+1:
			f(fmt.Sprintf("(more go-redis lines follow; only the first %d are logged)", limit))
		}
	}
}
