//go:build unix && !linux

package lockrun

import "syscall"

// groupAlive reports whether process group pgid still has a member (zombies included).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
