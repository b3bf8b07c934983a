//go:build unix

package cli

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// untrusted says why a config file found without --config must not be read: owned by
// another user, or writable by others. "" when it may be read.
func untrusted(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Sprintf("owned by uid %d, not by you", st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Sprintf("writable by group or others (mode %v)", fi.Mode().Perm())
	}
	return ""
}
