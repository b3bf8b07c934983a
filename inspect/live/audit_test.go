package live

import (
	"context"
	"os"
	"path/filepath"
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
