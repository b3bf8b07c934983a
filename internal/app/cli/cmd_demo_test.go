package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// demoTestGoroutines counts goroutines running demo or miniredis code.
func demoTestGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var hits []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/app/demo.") || strings.Contains(g, "alicebob/miniredis") {
			n++
			hits = append(hits, g)
		}
	}
	return n, strings.Join(hits, "\n\n")
}

// The demo runs redis-server masters where redis-server is installed, embedded ones
// with --embedded; either way it shows held locks, every master up, and stops cleanly.
func TestDemoNoUIShowsLocksAndStopsCleanly(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, tc := range []struct {
		flags []string
		kind  string
	}{{nil, "5 redis-server masters"}, {[]string{"--embedded"}, "5 embedded masters"}} {
		var out, errb bytes.Buffer
		code := run(append([]string{"demo", "--no-ui", "--duration", "3s", "--seed", "42", "--audit-log", ""}, tc.flags...), &out, &errb)
		if code != exitOK {
			t.Fatalf("%v: demo exit %d\n%s", tc.flags, code, errb.String())
		}
		s := out.String()
		if n := strings.Count(s, "masters up 5/5"); n < 2 {
			t.Fatalf("%v: want at least two polls with every master up, got %d:\n%s", tc.flags, n, s)
		}
		if !regexp.MustCompile(`(?m)^\S+\s+held\s+\S+\s+[345]/5`).MatchString(s) {
			t.Fatalf("%v: no held lock in the demo dump:\n%s", tc.flags, s)
		}
		if !strings.Contains(errb.String(), tc.kind) || strings.Contains(errb.String(), "no redis-server installed") {
			t.Fatalf("%v: stderr does not announce the masters: %q", tc.flags, errb.String())
		}
		var left int
		var stacks string
		for i := 0; i < 50; i++ {
			if left, stacks = demoTestGoroutines(); left == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if left != 0 {
			t.Fatalf("%v: %d demo goroutines still running after the demo returned:\n%s", tc.flags, left, stacks)
		}
	}
}

// Without redis-server the demo says, in one line, what it is missing and how to get
// it, and runs on embedded masters.
func TestDemoSaysWhatIsMissing(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "--no-ui", "--duration", "1500ms", "--audit-log", ""}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != 2 || lines[0] != "redlockctl demo: "+demoEmbeddedNotice || !strings.Contains(lines[1], "5 embedded masters") ||
		!strings.Contains(demoEmbeddedNotice, "install redis-server") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

func TestDemoUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--masters-count", "0"},
		{"demo", "--masters-count", "99"},
		{"demo", "--duration", "-1s"},
		{"demo", "--bogus"},
		{"demo", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitUsage || errb.Len() == 0 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

// The demo's audit log is in the user's state directory, or in a private directory
// made for the run when there is none: never a fixed name in the shared temp directory.
func TestDemoAuditLogIsPrivate(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "--no-ui", "--duration", "500ms", "--masters-count", "3"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	want := filepath.Join(state, "redlockctl", "demo-audit.log")
	if !strings.Contains(errb.String(), "audit log "+want+";") {
		t.Errorf("audit log not in the state directory:\n%s", errb.String())
	}
	if fi, err := os.Stat(filepath.Dir(want)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v", fi, err)
	}
	// No home and no XDG_STATE_HOME: a private directory of its own, removed after.
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	errb.Reset()
	if code := run([]string{"demo", "--no-ui", "--duration", "500ms", "--masters-count", "3"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	m := regexp.MustCompile(`audit log (\S+/redlockctl-demo-\d+/demo-audit\.log);`).FindStringSubmatch(errb.String())
	if m == nil || strings.Contains(errb.String(), "redlockctl-demo-audit.log") {
		t.Fatalf("no private directory for the audit log:\n%s", errb.String())
	}
	if _, err := os.Stat(filepath.Dir(m[1])); !os.IsNotExist(err) {
		t.Errorf("the run's private directory is left behind: %v", err)
	}
}
