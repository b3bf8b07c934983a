//go:build !linux

package wire

// Prefault does nothing here: pages are faulted in as they are written
// (prefault_linux.go says why Linux maps them in first).
func Prefault[T any](s []T) {}
