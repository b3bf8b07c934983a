package interop

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Real clients of other libraries, run as separate processes from the harnesses under
// testdata, take real locks; redlockctl must name them and release them so that
// their holders and waiters notice.

const startup = 20 * time.Second // a client process's start on a loaded machine

func redsyncClient(t *testing.T, addrs, key string) (*client, string) {
	t.Helper()
	c := startClient(t, goClient, "redsync", "-addrs", addrs, "-key", key, "-ttl", "30s", "-extend-every", "300ms")
	return c, str(c.next(t, "acquired", startup), "value")
}

func nodeClient(t *testing.T, mode, addrs, resources string, extra ...string) (*client, string) {
	t.Helper()
	args := append([]string{nodeDir + "/lock.mjs", mode, "--addrs", addrs, "--resources", resources}, extra...)
	c := startClient(t, "node", args...)
	return c, str(c.next(t, "acquired", startup), "value")
}

func pyClient(t *testing.T, mode, addr, key string, extra ...string) *client {
	t.Helper()
	return startClient(t, pythonBin, append([]string{pyScript, mode, "--addr", addr, "--key", key}, extra...)...)
}

// forceRelease runs `redlockctl release KEY --force --yes` as an operator would, fails
// unless it was done on every master, and returns its output and audit log entry.
func forceRelease(t *testing.T, addrs, key string, extra ...string) (string, auditEntry) {
	t.Helper()
	config, audit := writeConfig(t, addrs)
	return forceReleaseWith(t, config, audit, key, extra...)
}

// forceReleaseWith is forceRelease with a config already written (audit: its audit log).
func forceReleaseWith(t *testing.T, config, audit, key string, extra ...string) (string, auditEntry) {
	t.Helper()
	args := append([]string{"release", key, "--force", "--yes", "--config", config}, extra...)
	code, out, errOut := cli(t, args...)
	if code != 0 {
		t.Fatalf("redlockctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var e auditEntry
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatalf("audit log line %q: %v", lines[len(lines)-1], err)
	}
	return out + errOut, e
}

// auditEntry is the part of an audit log line these tests read.
type auditEntry struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
	Library  string `json:"library"`
	Protocol string `json:"protocol"`
	Done     int    `json:"done"`
}

// held checks that row r is a healthy lock of library lib on holders masters.
func held(t *testing.T, r resource, lib string, holders int) {
	t.Helper()
	if r.Library != lib || r.State != "held" || r.Holders != holders || len(r.Anomalies) != 0 {
		t.Errorf("%s: library %q state %q holders %d anomalies %v, want %s held on %d with none\n%s",
			r.Key, r.Library, r.State, r.Holders, r.Anomalies, lib, holders, r.Raw)
	}
}

// TestRealClientsOnFiveMasters: redsync and node-redlock lock on 5 masters; the dump
// names them, and a force-release by redlockctl reaches their holders: redsync's Extend
// fails and node-redlock's using() routine sees its abort signal.
func TestRealClientsOnFiveMasters(t *testing.T) {
	t.Parallel()
	_, addrs := masters(t, 5)
	rs, rsValue := redsyncClient(t, addrs, "jobs:redsync")
	_, nodeValue := nodeClient(t, "acquire", addrs, "jobs:node-a,jobs:node-b", "--ttl", "30000")
	using, usingValue := nodeClient(t, "using", addrs, "jobs:node-using", "--ttl", "3000", "--threshold", "2000")

	// Clients that extend every few hundred milliseconds on a loaded machine may reach
	// the 5 masters far enough apart for a ttl-spread anomaly: that one is tolerated
	// here (the one-master test requires no anomaly at all).
	code, snap := dump(t, addrs)
	spread := snap.dropAnomaly("ttl-spread")
	if code != 0 && (code != 3 || !spread || len(snap.Findings) != 0) {
		t.Errorf("dump of healthy locks: exit %d, want 0; findings %+v\n%s", code, snap.Findings, snap.rows())
	}
	r := snap.find(t, "jobs:redsync")
	held(t, r, "redsync?", 5)
	if r.Value != rsValue || !regexp.MustCompile(`^[A-Za-z0-9+/]{22}==$`).MatchString(r.Value) {
		t.Errorf("redsync value %q, client says %q (24-char base64 of 16 bytes)", r.Value, rsValue)
	}
	for _, k := range []string{"jobs:node-a", "jobs:node-b", "jobs:node-using"} {
		r := snap.find(t, k)
		held(t, r, "node-redlock?", 5)
		if want := map[bool]string{true: usingValue, false: nodeValue}[k == "jobs:node-using"]; r.Value != want {
			t.Errorf("%s value %q, client says %q", k, r.Value, want)
		}
	}

	t.Run("redsync Extend fails after force-release", func(t *testing.T) {
		if _, a := forceRelease(t, addrs, "jobs:redsync"); a.Library != "redsync?" || a.Protocol != "compare-and-delete" || a.Done != 5 {
			t.Errorf("audit: %+v, want library redsync? (a guess), protocol compare-and-delete, done on 5", a)
		}
		ev := rs.next(t, "extend-failed", 10*time.Second)
		t.Logf("redsync: %s", str(ev, "error"))
	})
	t.Run("node-redlock using() aborts after force-release", func(t *testing.T) {
		if _, a := forceRelease(t, addrs, "jobs:node-using"); a.Library != "node-redlock?" || a.Done != 5 {
			t.Errorf("audit: %+v, want library node-redlock? (a guess), done on 5", a)
		}
		ev := using.next(t, "aborted", 15*time.Second)
		t.Logf("node-redlock: %s", str(ev, "error"))
	})
	_, snap = dump(t, addrs)
	for _, k := range []string{"jobs:redsync", "jobs:node-using"} {
		if snap.has(k) {
			t.Errorf("%s still shown after force-release: %+v", k, snap.find(t, k))
		}
	}
}

// TestRedisPyWaiterGetsLockAfterForceRelease: a redis-py waiter blocked in
// Lock.acquire() polls (every 0.1 s by default) and must hold the lock within a second
// of redlockctl's force-release.
func TestRedisPyWaiterGetsLockAfterForceRelease(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	holder := pyClient(t, "hold", ms[0].Addr, "py:report", "--timeout", "60")
	value := str(holder.next(t, "acquired", startup), "value")
	waiter := pyClient(t, "wait", ms[0].Addr, "py:report", "--timeout", "60")
	waiter.next(t, "waiting", startup)
	waiter.quiet(t, 300*time.Millisecond) // blocked while the lock is held

	_, snap := dump(t, addrs)
	r := snap.find(t, "py:report")
	held(t, r, "redis-py?", 1)
	if r.Value != value {
		t.Errorf("value %q, holder says %q", r.Value, value)
	}
	forceRelease(t, addrs, "py:report")
	got := str(waiter.next(t, "acquired", time.Second), "value")
	if got == value || !regexp.MustCompile(`^[0-9a-f]{12}1[0-9a-f]{19}$`).MatchString(got) {
		t.Errorf("waiter's value %q: want a fresh uuid1().hex", got)
	}
	holder.stdin.Close() // the holder releases now, and finds the lock gone
	holder.next(t, "release-failed", 5*time.Second)
}
