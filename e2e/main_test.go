// Package e2e holds redlockctl's end-to-end tests: the built binary in a real terminal
// (tmux), next to a real Prometheus, against real redis-servers, and the benchmarks
// that measure the binary the way users run it. The binary is built once per run, in
// TestMain.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binPath is the redlockctl binary TestMain built for this run.
var binPath string

// buildBinary returns the binary built for this run.
func buildBinary(t testing.TB) string {
	t.Helper()
	if binPath == "" {
		t.Fatal("no binary: TestMain did not build one")
	}
	return binPath
}

func TestMain(m *testing.M) {
	if os.Getenv(spawnerEnv) == "1" {
		serveSpawns(os.Stdin, os.Stdout)
		return
	}
	dir, err := os.MkdirTemp("", "redlockctl-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// The default audit log (admin actions without audit_log) goes here, not home.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	binPath = filepath.Join(dir, "redlockctl")
	if out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
