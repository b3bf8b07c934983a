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

// The console keeps its rows from the live feed (the built binary in tmux, three real
// masters): with a poll_interval of an hour, a lock set and then deleted behind its
// back with plain commands still shows, and goes, because the feed's wake polls the
// changed keys; and those polls, once the masters are read from the feed, are Deltas:
// they read the changed keys alone (no SCAN, no TIME).
func TestConsoleFollowsTheFeedEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	for _, s := range servers {
		for i := range 20 {
			mustDo(t, s, "SET", fmt.Sprintf("jobs:%02d", i), fmt.Sprintf("svc:%d#%032x", i, i), "PX", 600000)
		}
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.toml")
	var cfg strings.Builder
	cfg.WriteString("name = \"feed\"\naudit_log = \"off\"\n\n[inspect]\npatterns = [\"*\"]\npoll_interval = \"1h\"\nreconcile_interval = \"1h\"\n\n")
	for i, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\nname = \"m%d\"\naddr = %q\n\n", i+1, a)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTmux(t, "NO_COLOR=1 "+bin+" --config "+cfgPath)
	tm.waitFor(t, "jobs:19")
	value := "behind-its-back:7#0123456789abcdef0123456789abcdef"
	// The feed starts after the first poll, and sees only what changes once it is up:
	// a lock set before that waits for the hour's poll. A new one each time until one
	// shows (an hour's poll_interval: only a wake shows it).
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("none of 10 locks set behind the console's back, 3 s apart, showed:\n%s", tm.capture(t))
		}
		key := fmt.Sprintf("billing:nightly-%d", i)
		for _, s := range servers {
			mustDo(t, s, "SET", key, value, "PX", 600000)
		}
		if tm.showsWithin(t, 3*time.Second, key) {
			break
		}
	}
	// That wake's poll read the masters whole (the feed had just come up); the next
	// one reads them from the feed, and from there a wake's poll is a Delta.
	for _, s := range servers {
		mustDo(t, s, "SET", "billing:hourly", value, "PX", 600000)
	}
	tm.waitFor(t, "billing:hourly")
	time.Sleep(300 * time.Millisecond) // any poll for the feed's first whole read is over
	before := commandStats(t, servers)
	for _, s := range servers {
		for i := range 10 {
			mustDo(t, s, "DEL", fmt.Sprintf("billing:nightly-%d", i))
		}
		mustDo(t, s, "SET", "billing:weekly", value, "PX", 600000)
	}
	screen := tm.waitFor(t, "billing:weekly")
	for deadline := time.Now().Add(30 * time.Second); strings.Contains(screen, "billing:nightly"); screen = tm.capture(t) {
		if time.Now().After(deadline) {
			t.Fatalf("billing:nightly-*, deleted on every master, still shown:\n%s", screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := commandStats(t, servers)
	for i := range servers {
		if n := after[i]["scan"] - before[i]["scan"]; n != 0 {
			t.Errorf("m%d: %d SCANs for a change the feed reported, want none (only the changed keys read)", i+1, n)
		}
		if after[i]["mget"] <= before[i]["mget"] {
			t.Errorf("m%d: no MGET: no poll read the changed keys", i+1)
		}
		if n := after[i]["time"] - before[i]["time"]; n != 0 {
			t.Errorf("m%d: %d TIMEs: a wake's poll was a whole one, want Deltas (the changed keys alone, no clock)", i+1, n)
		}
	}
	tm.literal(t, "q")
	tm.waitFor(t, "exit status 0")
}
