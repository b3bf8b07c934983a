package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The audit log need not exist when the feed starts: the force-release that creates
// it is read from the file's start, and the lifecycle it ends is force-released.
func TestEventsNameForceReleaseInANewAuditLog(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	audit := filepath.Join(t.TempDir(), "audit.log")
	body := fmt.Sprintf("audit_log = %q\n\n[lock]\nrestart_guard = \"0s\"\n\n[inspect]\npatterns = [\"fr:*\"]\n\n", audit)
	for i, s := range servers {
		body += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	cfg := writeConfig(t, body)
	ev := startEvents(t, cfg)
	time.Sleep(500 * time.Millisecond)
	// Taken by the library, which audits nothing: the force-release is the log's
	// first line.
	client, err := redlock.New(redistest.Pools(servers), redlock.WithRestartGuard(0), redlock.WithOwner("job:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Acquire(context.Background(), "fr:first", time.Minute); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, 5*time.Second, "acquired", func(e liveEvent) bool { return e.Event == "acquired" && e.Resource == "fr:first" })
	if _, err := os.Stat(audit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the audit log exists before the force-release: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the follower has looked for the file since
	var out, errOut strings.Builder
	if code := run([]string{"release", "fr:first", "--force", "--yes", "--config", cfg}, &out, &errOut); code != exitOK {
		t.Fatalf("release --force: exit %d: %s", code, errOut.String())
	}
	e := ev.waitFor(t, 5*time.Second, "the end", func(e liveEvent) bool { return e.Resource == "fr:first" && e.Event != "acquired" })
	if e.Event != "force-released" {
		t.Errorf("the force-release that created the audit log ended the lifecycle as %q, want force-released", e.Event)
	}
	ev.stop(t)
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ Phase, Action string }
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &first); err != nil || first.Phase != "intent" || !strings.HasPrefix(first.Action, "force-release") {
		t.Errorf("the audit log's first line is %+v (%v), want the force-release's intent:\n%s", first, err, b)
	}
}
