package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/internal/exitcode"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

var (
	crashBinOnce sync.Once
	crashBin     string
	crashBinErr  error
)

// buildCrashBinary builds, once, the binary with `-tags crashtest`: it panics where
// REDLOCKCTL_CRASHTEST says once the file REDLOCKCTL_CRASHTEST_ARM names exists
// (internal/crashtest).
func buildCrashBinary(t *testing.T) string {
	t.Helper()
	crashBinOnce.Do(func() {
		crashBin = filepath.Join(filepath.Dir(buildBinary(t)), "redlockctl-crashtest")
		out, err := exec.Command("go", "build", "-tags", "crashtest", "-o", crashBin, "..").CombinedOutput()
		if err != nil {
			crashBinErr = fmt.Errorf("go build -tags crashtest: %v\n%s", err, out)
		}
	})
	if crashBinErr != nil {
		t.Fatal(crashBinErr)
	}
	return crashBin
}

// A panic anywhere the console runs code (Update, View, a command, the poll, the live
// feed's goroutine) leaves the terminal as it found it: out of the alternate screen,
// in cooked mode with echo, the cursor shown; then the trace is printed where the
// operator sees it and the process exits with exitcode.Internal.
func TestConsoleCrashRestoresTerminal(t *testing.T) {
	bin, cfg, s := crashSetup(t)
	cases := []struct {
		point string
		frame string // a function the trace must name
	}{
		{"update", "ui.(*Model).Update"},
		{"view", "ui.(*Model).View"},
		{"cmd", "ui.(*Model).startPollFor.func"},
		{"poll", "cli.runConsoleOn.func"},
		{"live", "cli.runLive.func"},
	}
	for _, c := range cases {
		t.Run(c.point, func(t *testing.T) {
			arm := filepath.Join(t.TempDir(), "arm")
			tm := startTmux(t, fmt.Sprintf("REDLOCKCTL_CRASHTEST=%s REDLOCKCTL_CRASHTEST_ARM=%s %s --config %s --read-only; echo \"console exit $?\"; stty -a",
				c.point, arm, bin, cfg))
			tm.waitFor(t, "billing:nightly", "READ-ONLY")
			if on := tm.format(t, "#{alternate_on}"); on != "1" {
				t.Fatalf("the console runs outside the alternate screen (alternate_on %q): the test proves nothing", on)
			}
			if err := os.WriteFile(arm, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var screen string
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; ; i++ {
				// The live feed's point is on its events: a lock taken makes one.
				mustDo(t, s, "SET", fmt.Sprintf("jobs:%d", i), "w:1#0123456789abcdef0123456789abcdef", "PX", 600000)
				screen = tm.history(t)
				if strings.Contains(screen, "console exit") && strings.Contains(screen, "exit status") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the console did not exit within 30 s of the panic; pane:\n%s", screen)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if on := tm.format(t, "#{alternate_on}"); on != "0" {
				t.Errorf("alternate screen still on after the crash (alternate_on %q)", on)
			}
			if cur := tm.format(t, "#{cursor_flag}"); cur != "1" {
				t.Errorf("cursor hidden after the crash (cursor_flag %q)", cur)
			}
			for _, mode := range []string{"icanon", "echo"} {
				if !regexp.MustCompile(`(^|\s)` + mode + `(\s|$)`).MatchString(screen) {
					t.Errorf("stty -a after the crash lacks %s (the terminal is left raw):\n%s", mode, screen)
				}
			}
			want := fmt.Sprintf("console exit %d", exitcode.Internal)
			if !strings.Contains(screen, want) {
				t.Errorf("no %q after the crash:\n%s", want, screen)
			}
			for _, w := range []string{"internal error, please report it: panic: crashtest: injected panic at " + c.point, "goroutine ", c.frame} {
				if !strings.Contains(screen, w) {
					t.Errorf("the trace printed after the crash lacks %q:\n%s", w, screen)
				}
			}
		})
	}
}

// format returns a tmux format (such as #{alternate_on}) for the pane.
func (tm *tmuxSession) format(t testing.TB, f string) string {
	t.Helper()
	return strings.TrimSpace(tm.run(t, "display-message", "-p", "-t", "main", f))
}

// history returns the pane's scrollback and screen, wrapped lines joined.
func (tm *tmuxSession) history(t testing.TB) string {
	t.Helper()
	return tm.run(t, "capture-pane", "-p", "-J", "-S", "-", "-t", "main")
}

// A panic met in one master's read or in its live feed costs that master only: the
// console names it an internal error and runs on, and quits normally.
func TestConsoleContainsMasterPanics(t *testing.T) {
	bin, cfg, s := crashSetup(t)
	for _, point := range []string{"read", "feed"} {
		t.Run(point, func(t *testing.T) {
			arm := filepath.Join(t.TempDir(), "arm")
			tm := startTmux(t, fmt.Sprintf("REDLOCKCTL_CRASHTEST=%s REDLOCKCTL_CRASHTEST_ARM=%s %s --config %s --read-only; echo \"console exit $?\"",
				point, arm, bin, cfg))
			tm.waitFor(t, "billing:nightly", "READ-ONLY")
			tm.keys(t, "L") // the activity pane shows the feed's gaps
			tm.waitFor(t, "ACTIVITY")
			if err := os.WriteFile(arm, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; ; i++ {
				if i%5 == 0 {
					// A change a second for the feed (and the poll) to read: few enough
					// that the gap the feed's panic leaves stays in the activity pane.
					mustDo(t, s, "SET", fmt.Sprintf("jobs:%d", i), "w:1#0123456789abcdef0123456789abcdef", "PX", 600000)
				}
				screen := tm.capture(t)
				if strings.Contains(screen, "internal error, please report it") {
					t.Logf("console after the panic:\n%s", screen)
					break
				}
				if strings.Contains(screen, "console exit") || time.Now().After(deadline) {
					t.Fatalf("the console did not name the internal error within 30 s (or exited); pane:\n%s", tm.history(t))
				}
				time.Sleep(200 * time.Millisecond)
			}
			if on := tm.format(t, "#{alternate_on}"); on != "1" {
				t.Errorf("the console left the alternate screen after a contained panic (alternate_on %q)", on)
			}
			tm.literal(t, "q")
			tm.waitFor(t, "console exit 0")
		})
	}
}

// crashSetup builds the crashtest binary and starts a master holding one lock, with a
// config of it; it fails at once without tmux.
func crashSetup(t *testing.T) (bin, cfg string, s *redistest.Server) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the console crash test (make test installs it)")
	}
	bin = buildCrashBinary(t)
	s = redistest.Start(t, redistest.Options{})
	mustDo(t, s, "SET", "billing:nightly", "worker-7:4242#0123456789abcdef0123456789abcdef", "PX", 600000)
	// A poll a second: a contained panic's "master down" stays on the screen until the
	// next poll, long enough to be seen on a loaded machine.
	cfg = writeConfig(t, fmt.Sprintf("[inspect]\npatterns = [\"*\"]\npoll_interval = \"1s\"\ntimeout = \"1s\"\n\n[[masters]]\nname = \"m1\"\naddr = %q\n", s.Addr))
	return bin, cfg, s
}
