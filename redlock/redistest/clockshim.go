package redistest

import (
	"crypto/sha256"
	_ "embed" // the shim's C source
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

//go:embed clockshim.c.src
var clockShimSource []byte

var (
	shimOnce sync.Once
	shimPath string
	shimErr  error
)

// clockShim compiles clockshim.c.src (C) with cc into the user cache (once per source
// version) and returns the path of the shared object.
func clockShim(t testing.TB) string {
	t.Helper()
	shimOnce.Do(func() { shimPath, shimErr = buildShim() })
	if shimErr != nil {
		t.Fatalf("redistest: clock shim: %v", shimErr)
	}
	return shimPath
}

func buildShim() (string, error) {
	sum := sha256.Sum256(clockShimSource)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "redlockctl-redistest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	so := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(so); err == nil {
		return so, nil
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("no C compiler (cc) to build it: install gcc (make test does)")
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "clockshim.c")
	if err := os.WriteFile(src, clockShimSource, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "clockshim.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("cc: %v: %s", err, b)
	}
	// Rename is atomic: concurrent test binaries never see a half-written file.
	if err := os.Rename(out, so); err != nil {
		return "", err
	}
	return so, nil
}
