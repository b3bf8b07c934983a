//go:build !linux

package history

// lockHolder names the process that holds the lock on path; only Linux says
// (/proc/locks).
func lockHolder(string) string { return "" }
