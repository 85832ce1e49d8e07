//go:build !linux

package sim

// adviseHuge and unadviseHuge are no-ops where the engine knows no
// huge-page advice (hugepages_linux.go).
func adviseHuge[T any](s []T) []byte { return nil }

func unadviseHuge(b []byte) {}
