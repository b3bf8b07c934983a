package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The console end to end: the built binary runs in a real terminal (tmux, 120×40)
// against five real masters. A read-only session is driven through every key while
// the masters' command statistics prove that no write arrived; then a normal session
// filters, opens a planted lock and force-releases it with the typed confirmation.
func TestConsoleEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the console end-to-end test (make test installs it)")
	}
	bin := buildBinary(t)
	// "ro" may run everything but writes: a write it attempts, directly or inside a
	// script, is refused and lands in the masters' ACL LOG.
	servers := redistest.StartN(t, 5, redistest.Options{Users: []string{"ro on >ro-secret ~* &* +@all -@write"}})
	const resource = "billing:nightly"
	value := "worker-7:4242#0123456789abcdef0123456789abcdef"
	for _, s := range servers {
		mustDo(t, s, "SET", resource, value, "PX", 120000)
		for i := 0; i < 30; i++ {
			mustDo(t, s, "SET", fmt.Sprintf("jobs:%02d", i), fmt.Sprintf("svc-%d:%d#%032x", i%3, 100+i, i), "PX", 120000)
		}
	}
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.log")
	cfgPath := filepath.Join(dir, "config.toml")
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "name = \"e2e\"\nlabel_color = \"green\"\naudit_log = %q\n\n", audit)
	cfg.WriteString("[lock]\nrestart_guard = \"0s\"\ndefault_ttl = \"30s\"\nnode_timeout = \"200ms\"\nretries = 2\n\n")
	cfg.WriteString("[inspect]\npatterns = [\"*\"]\npoll_interval = \"300ms\"\ntimeout = \"1s\"\n\n")
	for i, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\nname = \"m%d\"\naddr = %q\n\n", i+1, a)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	roPath := filepath.Join(dir, "readonly.toml")
	roCfg := strings.ReplaceAll(cfg.String(), "\n\n[[masters]]", "\n\n[[masters]]\nusername = \"ro\"\npassword_env = \"E2E_RO_PASSWORD\"")
	if err := os.WriteFile(roPath, []byte(roCfg), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("read-only sends no write", func(t *testing.T) {
		for _, s := range servers {
			mustDo(t, s, "ACL", "LOG", "RESET")
		}
		before := commandStats(t, servers)
		dirty := dirtyCounts(t, servers)
		tm := startTmux(t, "NO_COLOR=1 E2E_RO_PASSWORD=ro-secret "+bin+" --config "+roPath+" --read-only")
		tm.waitFor(t, resource, "READ-ONLY")
		// NO_COLOR: attributes (bold, reverse) may remain, colours must not.
		if c := colourSGR(tm.captureANSI(t)); c != "" {
			t.Errorf("NO_COLOR set, but the screen has colour %q", c)
		}
		// Every key of the keymap, including the action keys a writable console
		// binds, from the table, the detail and the filter; typing a resource name
		// and enter after each, as a dialog would want.
		keys := []string{"a", "e", "x", "D", "j", "k", "Down", "Up", "PageDown", "PageUp", "Home", "End",
			"g", "G", "s", "S", "o", "!", "p", "r", "?", "Enter", "Tab", "BTab", "Space"}
		for round := 0; round < 2; round++ {
			for _, k := range keys {
				tm.keys(t, k)
				tm.literal(t, resource)
				tm.keys(t, "Enter")
			}
			for i := 0; i < 3; i++ { // out of help/detail, then clear the filter
				tm.keys(t, "Escape")
				time.Sleep(150 * time.Millisecond) // a lone Escape reads as esc, not alt+
			}
			tm.literal(t, "/")
			tm.literal(t, "billing")
			tm.keys(t, "Enter")
			tm.keys(t, "Enter") // into the detail
			tm.waitFor(t, "History")
		}
		screen := tm.capture(t)
		for _, gone := range []string{"FORCE-RELEASE", "ACQUIRE", "EXTEND", "acquire", "force-release"} {
			if strings.Contains(screen, gone) {
				t.Errorf("read-only console shows %q:\n%s", gone, screen)
			}
		}
		tm.keys(t, "Escape")
		time.Sleep(100 * time.Millisecond)
		tm.literal(t, "q")
		tm.waitFor(t, "exit status 0")
		after := commandStats(t, servers)
		if got := dirtyCounts(t, servers); !slices.Equal(got, dirty) {
			t.Errorf("data changed on the masters during the read-only session: changes since save %v -> %v", dirty, got)
		}
		for i, s := range servers {
			if log, err := redis.Values(s.Do("ACL", "LOG")); err != nil || len(log) != 0 {
				t.Errorf("m%d: ACL LOG has %d refused command(s) (%v): the read-only console attempted a write", i+1, len(log), err)
			}
		}
		for i := range servers {
			for cmd, n := range after[i] {
				if n <= before[i][cmd] {
					continue
				}
				if isWrite(t, servers[i], cmd) {
					t.Errorf("master m%d received %d %s command(s) from the read-only console", i+1, n-before[i][cmd], cmd)
				}
			}
			if after[i]["scan"] <= before[i]["scan"] {
				t.Errorf("master m%d saw no SCAN either: the check proves nothing", i+1)
			}
		}
		for _, s := range servers {
			if v, _ := redis.String(s.Do("GET", resource)); v != value {
				t.Fatalf("%s: lock changed during the read-only session: %q", s.Addr, v)
			}
		}
	})

	t.Run("filter, detail, force-release", func(t *testing.T) {
		tm := startTmux(t, bin+" --config "+cfgPath)
		tm.waitFor(t, resource, "31 locks")
		if colourSGR(tm.captureANSI(t)) == "" {
			t.Error("no colour on screen without NO_COLOR: the NO_COLOR check above proves nothing")
		}
		tm.literal(t, "/")
		tm.literal(t, "billing")
		tm.waitFor(t, "/billing", "1/1 of 31")
		tm.keys(t, "Enter") // close the filter
		tm.keys(t, "Enter") // open the detail
		tm.waitFor(t, "History", `value "`+value+`"`)
		tm.literal(t, "D")
		tm.waitFor(t, "FORCE-RELEASE "+resource, "Type the resource name to confirm")
		if got := strings.Count(tm.capture(t), "DELETE"); got != 5 {
			t.Errorf("force-release dialog plans %d deletes, want 5", got)
		}
		tm.literal(t, "billing:nightl") // a wrong name is refused
		tm.keys(t, "Enter")
		tm.waitFor(t, "type the resource name exactly")
		tm.literal(t, "y")
		tm.keys(t, "Enter")
		screen := tm.waitFor(t, "RESULT FORCE-RELEASE "+resource, "done on 5/5 masters")
		t.Logf("console after the force-release (120x40):\n%s", screen)
		if n := strings.Count(screen, " ok "); n < 5 {
			t.Errorf("per-master results: %d ok, want 5", n)
		}
		for _, s := range servers {
			if n, err := redis.Int(s.Do("EXISTS", resource)); err != nil || n != 0 {
				t.Errorf("%s: %s still exists (%d, %v)", s.Addr, resource, n, err)
			}
			if n, _ := redis.Int(s.Do("EXISTS", "jobs:07")); n != 1 {
				t.Errorf("%s: jobs:07 is gone: force-release touched another key", s.Addr)
			}
		}
		b, err := os.ReadFile(audit)
		if err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if !regexp.MustCompile(`"action":"force-release".*"resource":"billing:nightly".*"value":"` + regexp.QuoteMeta(value) + `"`).Match(b) {
			t.Errorf("audit log lacks the force-release line:\n%s", b)
		}
		tm.keys(t, "Escape") // close the result
		time.Sleep(150 * time.Millisecond)
		tm.keys(t, "Escape") // leave the detail
		time.Sleep(150 * time.Millisecond)
		tm.keys(t, "Escape") // clear the filter
		tm.waitFor(t, "jobs:07", "30 locks")
		for _, line := range strings.Split(tm.capture(t), "\n") {
			if strings.Contains(line, resource) && strings.Contains(line, "held") {
				t.Errorf("%s still listed after the force-release: %q", resource, line)
			}
		}

		// A stopped master shows as down on a following poll while the console keeps
		// answering keys.
		servers[4].Pause()
		defer servers[4].Resume()
		tm.waitFor(t, "masters 4/5 up")
		tm.literal(t, "?")
		tm.waitFor(t, "Legend")
		tm.keys(t, "Escape")
		time.Sleep(150 * time.Millisecond)
		tm.literal(t, "G")
		tm.waitFor(t, ">   jobs:29")
		servers[4].Resume()
		tm.waitFor(t, "masters 5/5 up")
		tm.literal(t, "q")
		tm.waitFor(t, "exit status 0")
	})
}

// Without a terminal, redlockctl (no subcommand) and console print the dump table.
func TestConsoleWithoutTerminalPrintsTable(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	for _, s := range servers {
		mustDo(t, s, "SET", "reports:daily", "cron:7#0123456789abcdef0123456789abcdef", "PX", 60000)
	}
	masters := strings.Join(redistest.Addrs(servers), ",")
	for _, args := range [][]string{{"--masters", masters}, {"console", "--masters", masters, "--read-only"}} {
		var out, errb strings.Builder
		code := run(args, &out, &errb)
		if code != exitOK && code != exitFindings {
			t.Errorf("%v: exit %d, stderr %s", args, code, errb.String())
		}
		if !strings.Contains(out.String(), "reports:daily") || strings.Contains(out.String(), "\x1b[?1049") {
			t.Errorf("%v: not a dump table:\n%s", args, out.String())
		}
	}
	var errb strings.Builder
	if code := run([]string{"console", "--masters", masters, "extra"}, &strings.Builder{}, &errb); code != exitUsage {
		t.Errorf("an extra argument: exit %d, want %d", code, exitUsage)
	}
}
