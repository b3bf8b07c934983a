//go:build unix

package lockrun

import (
	"os"
	"syscall"
)

// supported returns why commands cannot be run under a lock on this system, or nil.
func supported() error { return nil }

// signalGroup sends s to the process group pgid (errors mean the group is gone).
func signalGroup(pgid int, s os.Signal) {
	if n, ok := signalNumber(s); ok {
		syscall.Kill(-pgid, syscall.Signal(n))
	}
}
