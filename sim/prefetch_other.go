//go:build !amd64

package sim

import "unsafe"

// prefetchLines does nothing where no prefetch instruction is wired up.
func prefetchLines(unsafe.Pointer, int) {}
