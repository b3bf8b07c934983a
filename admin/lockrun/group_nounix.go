//go:build !unix

package lockrun

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// supported returns why commands cannot be run under a lock here: Run must be able to
// stop everything a command started the moment the lock is lost, and it does that with
// POSIX process groups and signals. Run refuses before it acquires anything.
func supported() error {
	return fmt.Errorf("not supported on %s: stopping a command and all it started when the lock is lost needs POSIX process groups", runtime.GOOS)
}

// The process-group operations are never reached: Run refuses first.

func sysProcAttr() *syscall.SysProcAttr { return nil }
func signalGroup(pgid int, s os.Signal) {}
func groupAlive(pgid int) bool          { return false }
