//go:build !linux

package inspect

// prefault does nothing here: pages are faulted in as they are written
// (prefault_linux.go says why Linux maps them in first).
func prefault[T any](s []T) {}
