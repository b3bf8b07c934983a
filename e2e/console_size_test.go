package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The console at 80×24 and 160×45, as a new user meets it (--masters on five masters
// started a moment ago, no config): the header keeps its lock summary, in agreeing
// number; the ? help keeps every key column, quit included; an acquisition refused by
// the restart guard explains itself in a result box whose words wrap whole; and pause
// freezes the screen, the LIVE column and the activity pane included, while locks come
// and go on the masters.
func TestConsoleSizes(t *testing.T) {
	bin := buildBinary(t)
	for _, size := range [][2]int{{80, 24}, {160, 45}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			servers := redistest.StartN(t, 5, redistest.Options{})
			for _, s := range servers {
				mustDo(t, s, "SET", "held:one", "w-1:1#0123456789abcdef0123456789abcdef", "PX", 120000)
			}
			masters := strings.Join(redistest.Addrs(servers), ",")
			tm := startTmuxSize(t, size[0], size[1], fmt.Sprintf("NO_COLOR=1 XDG_STATE_HOME=%s %s --masters %s", t.TempDir(), bin, masters))
			screen := tm.waitFor(t, "held:one")
			header := strings.SplitN(screen, "\n", 2)[0]
			if !strings.Contains(header, "1 lock: 1 held") || strings.Contains(screen, "1 locks") {
				t.Errorf("the header's lock summary:\n%s", screen)
			}

			tm.keys(t, "?")
			screen = tm.waitFor(t, "Legend")
			for _, want := range []string{"p pause/resume", "r refresh now", "? help", "q quit", "a acquire", "D force-release", "? uncertain"} {
				if !strings.Contains(screen, want) {
					t.Errorf("the help lacks %q:\n%s", want, screen)
				}
			}
			tm.keys(t, "Escape")
			tm.waitFor(t, "held:one")

			// Fresh masters: the restart guard refuses the acquisition, and says why.
			tm.keys(t, "a")
			tm.waitFor(t, "ACQUIRE")
			tm.keys(t, "C-u")
			tm.literal(t, "fresh:job")
			tm.keys(t, "Enter")
			screen = tm.waitFor(t, "RESULT ACQUIRE fresh:job", "esc/enter close", "not counted", "throw-away")
			for _, word := range []string{"restarted", "forgotten", "granted", "counted", "quorum", "another", "lock.restart_guard", "--restart-guard", "throw-away"} {
				if !strings.Contains(screen, word) {
					t.Errorf("the result box breaks or lacks %q:\n%s", word, screen)
				}
			}
			if strings.Contains(screen, "timeout") || strings.Contains(screen, "WithRestartGuard") {
				t.Errorf("the result blames a timeout or names a Go option:\n%s", screen)
			}
			tm.keys(t, "Escape")
			tm.waitFor(t, "held:one")

			// Paused means frozen: nothing on the screen moves while locks come and go.
			tm.keys(t, "L")
			tm.waitFor(t, "ACTIVITY")
			tm.keys(t, "p")
			tm.waitFor(t, "PAUSED")
			time.Sleep(500 * time.Millisecond)
			frozen := tm.capture(t)
			for i := range 3 {
				lockOn(t, servers, fmt.Sprintf("paused:%d", i), "w-2:2#0123456789abcdef0123456789abcdef", 100*time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond)
			if now := tm.capture(t); now != frozen {
				t.Errorf("the paused screen moved:\nthen\n%s\nnow\n%s", frozen, now)
			}
			tm.keys(t, "p")
			tm.waitFor(t, "paused:2") // the held events count on resume
			tm.keys(t, "q")
			tm.waitFor(t, "exit status 0")
		})
	}
}
