package cli

import (
	"bytes"
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
