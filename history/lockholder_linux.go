package history

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHolder names the process that holds the flock on path, as /proc/locks says:
// "pid 4242 (redlockctl)"; "" when it cannot tell. Only the process's name is
// read (/proc/PID/comm), never its command line, which may carry secrets.
func lockHolder(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	return holderIn(string(locks), st.Ino, os.Getpid())
}

// holderIn finds in /proc/locks text the FLOCK on inode ino held (not waited for)
// by a process other than self, and names it.
func holderIn(locks string, ino uint64, self int) string {
	suffix := ":" + strconv.FormatUint(ino, 10)
	for _, line := range strings.Split(locks, "\n") {
		f := strings.Fields(line)
		// "1: FLOCK  ADVISORY  WRITE 17635 fe:00:5374939 0 EOF"; a waiter has "->" after the id.
		if len(f) < 6 || f[1] != "FLOCK" || !strings.HasSuffix(f[5], suffix) {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil || pid == self {
			continue
		}
		name := "pid " + f[4]
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			name += " (" + strings.TrimSpace(string(comm)) + ")"
		}
		return name
	}
	return ""
}
