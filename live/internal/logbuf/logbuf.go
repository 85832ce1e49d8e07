// Package logbuf is a production log a replica writes while a test reads
// it: a buffer whose writes and reads hold one lock.
package logbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is safe for one writer and any number of readers at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines is everything written so far, a line each, without the last
// newline.
func (l *Buffer) Lines() []string {
	return strings.Split(strings.TrimSpace(l.String()), "\n")
}
