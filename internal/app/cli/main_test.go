package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain keeps the default audit log (admin actions without audit_log) in a
// temporary directory rather than the user's home.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redlockctl-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
