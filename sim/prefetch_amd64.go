package sim

import "unsafe"

// prefetchLines asks the CPU to start loading n cache lines from p
// (prefetch_amd64.s); it has no effect a program can observe.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)
