package lockrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// groupAlive reports whether a process of group pgid is still running. Zombies do not
// count: a process whose parent is gone may never be reaped where PID 1 does not reap,
// and it runs nothing.
func groupAlive(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return true
	}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold anything but ends at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 4 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
