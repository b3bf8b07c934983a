package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestConsoleKeepsPausedHolderEndToEnd: the built console in tmux (NO_COLOR) against
// three real masters. lock:x is held on m1 only; m1 is paused (SIGSTOP) and the row
// stays, with its PTTL projected (≈) and "last seen on m1" in the status line; pausing
// the console puts "PAUSED: figures as of" in the header; m1 resumed, the row is
// normal again.
func TestConsoleKeepsPausedHolderEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	mustDo(t, servers[0], "SET", "lock:x", "worker-1:1#0123456789abcdef0123456789abcdef", "PX", 120000)
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("name = \"stay\"\n[inspect]\npoll_interval = \"300ms\"\ntimeout = \"500ms\"\n")
	for i, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, a)
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTmux(t, "NO_COLOR=1 "+bin+" --config "+cfgPath)
	tm.waitFor(t, "lock:x", "masters 3/3 up")
	servers[0].Pause()
	defer servers[0].Resume()
	screen := tm.waitFor(t, "masters 2/3 up", "last seen on m1, ", "≈")
	if !strings.Contains(screen, "down timeout: ") || !strings.Contains(screen, "lock:x") {
		t.Fatalf("paused holder: row or kind missing:\n%s", screen)
	}
	tm.keys(t, "p")
	tm.waitFor(t, "PAUSED: figures as of ")
	tm.keys(t, "p")
	servers[0].Resume()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		screen = tm.capture(t)
		if strings.Contains(screen, "masters 3/3 up") && !strings.Contains(screen, "≈") && !strings.Contains(screen, "last seen") && strings.Contains(screen, "lock:x") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after resume the row is not normal again:\n%s", screen)
		}
	}
	tm.keys(t, "q")
}
