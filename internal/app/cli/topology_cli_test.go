package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/admin/lockrun"
	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// runConfig runs one redlockctl command line against the config file body (written
// into a temporary directory) and returns exit code, stdout and stderr.
func runConfig(t *testing.T, body string, args ...string) (int, string, string) {
	t.Helper()
	path := writeConfig(t, body)
	var out, errb bytes.Buffer
	args = append([]string{args[0], "--config", path}, args[1:]...) // before a "--"
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeConfig writes body as config.toml into a temporary directory and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeSnapshot(t *testing.T, out string) *inspect.Snapshot {
	t.Helper()
	var s inspect.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("dump -o json: %v\n%s", err, out)
	}
	return &s
}

func hasCode(fs []inspect.Finding, code string) bool {
	for _, f := range fs {
		if f.Code == code {
			return true
		}
	}
	return false
}

// A Sentinel group and two plain masters as a 3-instance set: the admin commands and
// dump reach the group's current master, before and after a forced and an automatic
// failover.
func TestTopologyCLISentinelFailover(t *testing.T) {
	const pw = "pw-sentinel-node-Xy7"
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Node: redistest.Options{Password: pw}})
	plain := redistest.StartN(t, 2, redistest.Options{})
	t.Setenv("TOPO_CLI_NODE_PW", pw)
	body := fmt.Sprintf(`[lock]
restart_guard = "0s"
node_timeout = "300ms"
retries = 3
[inspect]
timeout = "1s"
max_ttl = "1m"
[[masters]]
name = "m1"
addr = %q
[[masters]]
name = "m2"
sentinels = [%q, %q, %q]
master_name = %q
password_env = "TOPO_CLI_NODE_PW"
[[masters]]
name = "m3"
addr = %q
`, plain[0].Addr, g.SentinelAddrs()[0], g.SentinelAddrs()[1], g.SentinelAddrs()[2], g.Name, plain[1].Addr)

	code, out, errs := runConfig(t, body, "acquire", "billing", "--ttl", "60s", "-o", "json")
	if code != exitOK {
		t.Fatalf("acquire: exit %d\n%s%s", code, out, errs)
	}
	value := adminDecode(t, out).Value
	first := g.Master()
	if first.Get(t, "billing") != value || plain[0].Get(t, "billing") != value {
		t.Fatalf("acquired value not on the group's master %s and m1", first.Addr)
	}
	code, out, _ = runConfig(t, body, "dump", "-o", "json")
	s := decodeSnapshot(t, out)
	if m2 := s.Masters[1]; m2.Via != "sentinel" || m2.Addr != first.Addr || !m2.Up || s.Resources[0].Holders != 3 || s.Resources[0].State != inspect.StateHeld {
		t.Fatalf("dump: exit %d, m2 %+v, rows %+v", code, m2, s.Resources)
	}
	if strings.Contains(out, pw) {
		t.Fatal("the node password is in the dump")
	}

	// SENTINEL FAILOVER: dump shows the new master and the recent failover; a
	// force-release deletes there.
	next := g.WaitNewMaster(g.Failover(), 15*time.Second)
	_, out, _ = runConfig(t, body, "dump", "-o", "json")
	s = decodeSnapshot(t, out)
	if m2 := s.Masters[1]; m2.Addr != next.Addr || !hasCode(m2.Findings, "failed-over-recently") {
		t.Fatalf("dump after failover: m2 %s findings %+v", m2.Addr, m2.Findings)
	}
	// run on the held lock: nothing runs, and its holder is read on every master, the
	// group's through Sentinel (the new master has the replicated value).
	code, out, errs = runConfig(t, body, "run", "billing", "--", "sh", "-c", "echo ran")
	if code != lockrun.ExitNotAcquired || strings.Contains(out, "ran") || !strings.Contains(errs, "(3 of 3 masters)") {
		t.Fatalf("run on the held lock after failover: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runConfig(t, body, "release", "billing", "--force", "--yes")
	if code != exitOK || next.Get(t, "billing") != "" || plain[1].Get(t, "billing") != "" {
		t.Fatalf("force-release after failover: exit %d, left on the new master %q\n%s%s", code, next.Get(t, "billing"), out, errs)
	}
	if !strings.Contains(errs, next.Addr) || !strings.Contains(out, "m2  sentinel "+g.Name) {
		t.Errorf("force-release plan does not name the new master %s:\n%s%s", next.Addr, out, errs)
	}

	// Kill the master: after Sentinel's own failover, acquire lands on the new one.
	if _, err := first.Do("REPLICAOF", "127.0.0.1", strings.TrimPrefix(next.Addr, "127.0.0.1:")); err != nil {
		t.Fatal(err)
	}
	waitLink(t, first)
	killed := g.KillMaster()
	third := g.WaitNewMaster(killed.Addr, 20*time.Second)
	code, out, errs = runConfig(t, body, "acquire", "reports", "--ttl", "60s", "--wait", "5s", "-o", "json")
	if code != exitOK || third.Get(t, "reports") != adminDecode(t, out).Value {
		t.Fatalf("acquire after automatic failover: exit %d, on %s: %q\n%s%s", code, third.Addr, third.Get(t, "reports"), out, errs)
	}
}

func waitLink(t *testing.T, r *redistest.Server) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; {
		info, _ := redis.String(r.Do("INFO", "replication"))
		if strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replication link not up", r.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A 3-shard cluster as a 1-instance set: acquire, extend and force-release keys that
// live on different shards; dump shows one row per key and the cluster's shards.
func TestTopologyCLICluster(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	body := fmt.Sprintf("[lock]\nrestart_guard = \"0s\"\nnode_timeout = \"300ms\"\nretries = 3\n[inspect]\ntimeout = \"2s\"\n[[masters]]\nname = \"c1\"\ncluster = [%q, %q]\n", c.Seeds()[1], c.Seeds()[0])
	keys := []string{c.KeyOn(c.Shards[0], "jobs:"), c.KeyOn(c.Shards[1], "jobs:"), c.KeyOn(c.Shards[2], "jobs:")}
	values := make([]string, 3)
	for i, k := range keys {
		code, out, errs := runConfig(t, body, "acquire", k, "--ttl", "30s", "-o", "json")
		if code != exitOK {
			t.Fatalf("acquire %s: exit %d\n%s%s", k, code, out, errs)
		}
		values[i] = adminDecode(t, out).Value
		if got := c.Shards[i].Master.Get(t, k); got != values[i] {
			t.Fatalf("%s on shard %d: %q, want %q", k, i, got, values[i])
		}
	}
	code, out, errs := runConfig(t, body, "extend", keys[1], "--value", values[1], "--ttl", "90s")
	if pttl, _ := redis.Int64(c.Shards[1].Master.Do("PTTL", keys[1])); code != exitOK || pttl < 60000 {
		t.Fatalf("extend on shard 1: exit %d, pttl %d\n%s%s", code, pttl, out, errs)
	}
	code, out, errs = runConfig(t, body, "release", keys[2], "--force", "--yes")
	if code != exitOK || c.Shards[2].Master.Get(t, keys[2]) != "" || !strings.Contains(errs, c.Shards[2].Master.Addr) {
		t.Fatalf("force-release on shard 2: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runConfig(t, body, "release", keys[0], "--value", values[0])
	if code != exitOK || c.Shards[0].Master.Get(t, keys[0]) != "" {
		t.Fatalf("release on shard 0: exit %d\n%s%s", code, out, errs)
	}
	// run: the command runs while the lock (on shard 2) is held, through the library.
	code, out, errs = runConfig(t, body, "run", keys[2], "--ttl", "10s", "--", "sh", "-c", "exit 0")
	if code != exitOK || c.Shards[2].Master.Get(t, keys[2]) != "" {
		t.Fatalf("run on shard 2: exit %d\n%s%s", code, out, errs)
	}
	// run while someone else holds the lock, on a shard that is not the first seed:
	// nothing runs (exit 1), and the holder is named, read from the key's shard.
	held := c.KeyOn(c.Shards[2], "held:")
	if code, out, errs = runConfig(t, body, "acquire", held, "--ttl", "30s", "--owner", "nightly-7"); code != exitOK {
		t.Fatalf("acquire %s: exit %d\n%s%s", held, code, out, errs)
	}
	code, out, errs = runConfig(t, body, "run", held, "--", "sh", "-c", "echo ran")
	if code != lockrun.ExitNotAcquired || strings.Contains(out, "ran") || !strings.Contains(errs, "held by nightly-7") {
		t.Fatalf("run on a lock held elsewhere: exit %d\n%s%s", code, out, errs)
	}
	if _, err := c.Shards[2].Master.Do("DEL", held); err != nil {
		t.Fatal(err)
	}
	_, out, _ = runConfig(t, body, "dump", "-o", "json")
	s := decodeSnapshot(t, out)
	if m := s.Masters[0]; m.Via != "cluster" || len(m.Shards) != 3 || !m.Up || s.Quorum != 1 || len(s.Resources) != 1 || s.Resources[0].Resource != keys[1] {
		t.Fatalf("dump: master %+v, rows %+v", m, s.Resources)
	}
	code, out, _ = runConfig(t, body, "dump")
	if !strings.Contains(out, "cluster") || !strings.Contains(out, c.Shards[2].Master.Addr) {
		t.Errorf("dump table (exit %d) does not show the cluster and its shards:\n%s", code, out)
	}

	// Shard 0 paused: keys on the other shards can still be taken; dump says the one
	// instance is down (exit 1) and still shows what the other shards hold.
	c.Shards[0].Master.Pause()
	defer c.Shards[0].Master.Resume()
	code, out, errs = runConfig(t, body, "acquire", c.KeyOn(c.Shards[2], "later:"), "--ttl", "30s")
	if code != exitOK {
		t.Errorf("acquire on shard 2 while shard 0 is paused: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runConfig(t, body, "dump", "-o", "json")
	s = decodeSnapshot(t, out)
	if m := s.Masters[0]; code != exitFailure || m.Up || !strings.Contains(m.Error, c.Shards[0].Master.Addr) || len(s.Resources) != 2 {
		t.Errorf("dump with shard 0 paused: exit %d, up %v, error %q, %d rows", code, m.Up, m.Error, len(s.Resources))
	}
}

// Bad input: config mistakes stop with file:line (exit 2); a cluster seed that is not
// in cluster mode says so (exit 1).
func TestTopologyCLIBadInput(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{"[[masters]]\naddr = \"127.0.0.1:1\"\nsentinels = [\"127.0.0.1:2\"]\nmaster_name = \"x\"\n", ":3: masters[0].sentinels: addr and sentinels both set"},
		{"[[masters]]\nsentinels = [\"127.0.0.1:2\"]\n", ":2: masters[0].sentinels: sentinels without master_name"},
		{"[[masters]]\ncluster = []\n", ":2: masters[0].cluster: empty list"},
	} {
		code, _, errs := runConfig(t, tt.body, "dump")
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("config %q: exit %d, stderr %q; want 2 and %q", tt.body, code, errs, tt.want)
		}
	}
	plain := redistest.Start(t, redistest.Options{})
	code, out, errs := runConfig(t, fmt.Sprintf("[[masters]]\nname = \"c1\"\ncluster = [%q]\n", plain.Addr), "dump")
	if code != exitFailure || !strings.Contains(out+errs, plain.Addr+" is not in cluster mode") {
		t.Errorf("plain server as cluster seed: exit %d\n%s%s", code, out, errs)
	}
}
