//go:build unix

package cli

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// untrusted says why a config file found without --config must not be read: owned by
// another user than you or root, or writable by others. "" when it may be read: the
// group bits do not count (umask 002 makes every new file group-writable).
func untrusted(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return fmt.Sprintf("owned by uid %d, not by you or root", st.Uid)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Sprintf("writable by others (mode %v)", fi.Mode().Perm())
	}
	return ""
}
