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
		if strings.Contains(g, "inspect/demo.") || strings.Contains(g, "alicebob/miniredis") {
			n++
			hits = append(hits, g)
		}
	}
	return n, strings.Join(hits, "\n\n")
}

func TestDemoNoUIShowsLocksAndStopsCleanly(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"demo", "--no-ui", "--duration", "3s", "--seed", "42", "--audit-log", ""}, &out, &errb)
	if code != exitOK {
		t.Fatalf("demo exit %d\n%s", code, errb.String())
	}
	s := out.String()
	if n := strings.Count(s, "masters up 5/5"); n < 2 {
		t.Fatalf("want at least two polls with every master up, got %d:\n%s", n, s)
	}
	if !regexp.MustCompile(`(?m)^\S+\s+held\s+\S+\s+[345]/5`).MatchString(s) {
		t.Fatalf("no held lock in the demo dump:\n%s", s)
	}
	if !strings.Contains(errb.String(), "5 embedded masters") {
		t.Fatalf("stderr does not announce the masters: %q", errb.String())
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
		t.Fatalf("%d demo goroutines still running after the demo returned:\n%s", left, stacks)
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
