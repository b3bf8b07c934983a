package live

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// watchAudit sends the force-release intents written after it started: from the end
// of a log that exists, from the start of one created later.
func TestWatchAuditFollowsALogCreatedLater(t *testing.T) {
	for _, exists := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "audit.log")
		intent := func(resource string) string {
			return `{"phase":"intent","time":"2026-11-28T03:12:00Z","action":"force-release","resource":"` + resource + `"}` + "\n"
		}
		if exists {
			if err := os.WriteFile(path, []byte(intent("before:start")), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan signal, 4)
		done := make(chan struct{})
		go func() { defer close(done); watchAudit(ctx, path, out) }()
		time.Sleep(3 * auditEvery) // it has looked for the file
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(intent("first") + `{"phase":"outcome","action":"force-release","resource":"first"}` + "\n" + intent("second"))
		f.Close()
		var got []string
		for len(got) < 2 {
			select {
			case s := <-out:
				got = append(got, s.keys[0])
			case <-time.After(5 * time.Second):
				t.Fatalf("exists %v: %q after 5 s, want [first second]", exists, got)
			}
		}
		cancel()
		<-done
		if got[0] != "first" || got[1] != "second" || len(out) != 0 {
			t.Errorf("exists %v: force-releases %q (and %d more), want [first second]", exists, got, len(out))
		}
	}
}

// watchAudit follows the path as `tail -F` does: a log renamed away and created anew
// (with or without lines written to the old one after the rename), renamed away and
// created later by the next write, or truncated in place, is read on, each new file
// from its start, and no intent is read twice or missed.
func TestWatchAuditFollowsARotatedLog(t *testing.T) {
	intent := func(resource string) string {
		return `{"phase":"intent","time":"2026-11-28T03:12:00Z","action":"force-release","resource":"` + resource + `"}` + "\n"
	}
	appendTo := func(path, s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	// A long log before the follower starts: a truncated log shorter than it must
	// still be seen as truncated.
	appendTo(path, strings.Repeat(intent("before:start"), 50))
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan signal, 16)
	done := make(chan struct{})
	go func() { defer close(done); watchAudit(ctx, path, out) }()
	defer func() { cancel(); <-done }()
	next := func(step, want string) {
		t.Helper()
		select {
		case s := <-out:
			if s.keys[0] != want {
				t.Fatalf("%s: force-release of %q, want %q", step, s.keys[0], want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no force-release of %q within 5 s", step, want)
		}
	}
	settle := func() { time.Sleep(3 * auditEvery) } // the follower has looked since

	settle()
	appendTo(path, intent("a"))
	next("before any rotation", "a")

	// Renamed away and created anew (logrotate's create), the old file still written
	// to by a writer that had it open: its last line is read, then the new file's.
	old, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, filepath.Join(dir, "audit.log.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := old.WriteString(intent("b:old")); err != nil {
		t.Fatal(err)
	}
	old.Close()
	appendTo(path, intent("b:new"))
	next("renamed and created", "b:old")
	next("renamed and created", "b:new")
	settle()
	appendTo(path, intent("c"))
	next("after the rename", "c")

	// Renamed away; the next write creates the file (logrotate's nocreate).
	if err := os.Rename(path, filepath.Join(dir, "audit.log.2")); err != nil {
		t.Fatal(err)
	}
	settle()
	appendTo(path, intent("d"))
	next("renamed, created by the next line", "d")

	// Truncated in place (logrotate's copytruncate), then written to.
	appendTo(path, intent("e"))
	next("before the truncation", "e")
	settle()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	settle()
	appendTo(path, intent("f"))
	next("truncated", "f")
	settle()
	appendTo(path, intent("g"))
	next("after the truncation", "g")

	settle()
	if len(out) != 0 {
		t.Errorf("%d force-releases more than written: %+v", len(out), <-out)
	}
}
