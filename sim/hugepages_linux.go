package sim

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on linux/amd64 and arm64
// (with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole 2 MiB pages of s's backing
// array with transparent huge pages (madvise MADV_HUGEPAGE), for arrays of
// at least 4 MiB, and returns the range it advised (nil when none), for
// unadviseHuge once the array is let go. s must be all zero (just made).
//
// The engine's per-client and per-attempt arrays are read at random, a
// record or two per event; on 4 KiB pages nearly every such read of a large
// run also misses the TLB and walks the page tables. The advice changes no
// value and no order, only where the pages come from; a kernel set never to
// use huge pages declines it, and then nothing changes at all.
func adviseHuge[T any](s []T) []byte {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < 2*hugePage {
		return nil
	}
	base := unsafe.Pointer(unsafe.SliceData(s))
	p := uintptr(base)
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + n) &^ (hugePage - 1)
	if hi <= lo {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo)
	if unix.Madvise(b, unix.MADV_HUGEPAGE) != nil {
		return nil // declined: the same as not asked
	}
	// The advice governs only the pages faulted in after it. A fresh array
	// on pages the collector reused (a design that starts after another
	// finished) was already zeroed by the allocator on the 4 KiB pages
	// those had, and would keep them; dropping the pages makes the next
	// touch fault in zeroed huge pages. s is all zero, so what it reads
	// does not change.
	_ = unix.Madvise(b, unix.MADV_DONTNEED) // declined: the pages stay as they are
	return b
}

// unadviseHuge takes the advice back from a range adviseHuge returned,
// before the array is let go. The collector hands the pages to other
// objects; left advised, the first touch of any 2 MiB of them would make
// the whole 2 MiB resident, and the peak RSS of the designs that follow
// would grow by up to the size of the array.
func unadviseHuge(b []byte) {
	if b != nil {
		_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE) // advice: declined leaves the pages as they are
	}
}
