package interop

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestOneMasterEveryLibraryHeld: on one master, a healthy lock of every library, real or
// replayed, is a held row naming its library, with no anomaly, and dump exits 0; a
// redis-py lock without a TTL is no-ttl, a real finding (exit 3).
func TestOneMasterEveryLibraryHeld(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	s := ms[0]
	addr := s.Addr
	_, rsValue := redsyncClient(t, addrs, "one:redsync")
	_, nodeValue := nodeClient(t, "acquire", addrs, "one:node", "--ttl", "60000")
	bsm := startClient(t, goClient, "redislock", "-addrs", addr, "-key", "one:bsm", "-ttl", "60s", "-metadata", "worker-9")
	bsmValue := str(bsm.next(t, "acquired", startup), "value")
	py := pyClient(t, "hold", addr, "one:redis-py", "--timeout", "60")
	pyValue := str(py.next(t, "acquired", startup), "value")

	red := loadReplay(t, "redisson")
	lock, fair, fairWaiter, rw, fenced := redissonVars("one:redisson", 1), redissonVars("one:fair", 7), redissonVars("one:fair", 8), redissonVars("one:rw", 3), redissonVars("one:fenced", 4)
	replay(t, s, red, "lock", lock)
	replay(t, s, red, "fair-lock", fair)
	replay(t, s, red, "fair-wait", fairWaiter)
	replay(t, s, red, "read-lock", rw)
	replay(t, s, red, "fenced-lock", fenced)
	prl := map[string]string{"name": "one", "id": pyRedisLockID(), "expire_s": "60"}
	replay(t, s, loadReplay(t, "python-redis-lock"), "lock", prl)
	replay(t, s, loadReplay(t, "redlock-net"), "lock", map[string]string{"name": "one-net", "guid": uuid4(), "ttl_ms": "60000"})
	replay(t, s, loadReplay(t, "pottery"), "lock", map[string]string{"name": "one-pottery", "uuid": uuid4(), "ttl_ms": "60000"})
	spring := map[string]string{"registry": "one-registry", "path": "invoice-7", "client": uuid4(), "ttl_ms": "60000"}
	replay(t, s, loadReplay(t, "spring-integration"), "lock", spring)
	shed := shedlockVars()
	replay(t, s, loadReplay(t, "shedlock"), "lock", shed)

	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump: exit %d, want 0 (every lock healthy); findings %+v\n%s", code, snap.Findings, snap.rows())
	}
	for _, c := range []struct {
		key, lib, kind, value, owner string
	}{
		{key: "one:redsync", lib: "redsync?", value: rsValue},
		{key: "one:node", lib: "node-redlock?", value: nodeValue},
		{key: "one:bsm", lib: "bsm-redislock?", value: bsmValue},
		{key: "one:redis-py", lib: "redis-py?", value: pyValue},
		{key: "one:redisson", lib: "redisson", kind: "lock", owner: lock["uuid"] + ":1"},
		{key: "one:fair", lib: "redisson", kind: "fair-lock", owner: fair["uuid"] + ":7"},
		{key: "one:rw", lib: "redisson", kind: "read-write-lock", owner: rw["uuid"] + ":3"},
		{key: "one:fenced", lib: "redisson", kind: "fenced-lock", owner: fenced["uuid"] + ":4"},
		{key: "lock:one", lib: "python-redis-lock", value: prl["id"]},
		{key: "job-lock:default:nightly-report", lib: "shedlock", owner: shed["host"]},
	} {
		r := snap.find(t, c.key)
		held(t, r, c.lib, 1)
		if c.kind != "" && r.Kind != c.kind {
			t.Errorf("%s: kind %q, want %q", c.key, r.Kind, c.kind)
		}
		if c.value != "" && r.Value != c.value {
			t.Errorf("%s: value %q, want %q", c.key, r.Value, c.value)
		}
		if c.owner != "" && !strings.Contains(r.Owner, c.owner) {
			t.Errorf("%s: owner %q, want it to name %q", c.key, r.Owner, c.owner)
		}
		if r.Evidence == "" {
			t.Errorf("%s: no library_evidence", c.key)
		}
	}
	// RedLock.net and pottery write the same key and value shape: the row names both
	// candidates as a guess.
	for key, libs := range map[string][]string{
		"redlock:one-net":     {"redlock-net", "pottery"},
		"redlock:one-pottery": {"redlock-net", "pottery"},
	} {
		r := snap.find(t, key)
		if r.State != "held" || len(r.Anomalies) != 0 || !oneOf(r, libs) {
			t.Errorf("%s: state %q anomalies %v library %q, want held, naming %v\n%s", key, r.State, r.Anomalies, r.Library, libs, r.Raw)
		}
	}
	// spring-integration writes a UUIDv4 at <registryKey>:<path>, shapes many libraries
	// write (aioredlock, asynq): the row is a lock of library unknown.
	if r := snap.find(t, "one-registry:invoice-7"); r.State != "held" || r.Library != "unknown" {
		t.Errorf("one-registry:invoice-7: state %q library %q, want held, unknown\n%s", r.State, r.Library, r.Raw)
	}
	// Companion keys belong to their lock's row.
	for _, k := range []string{"redisson_lock_queue:{one:fair}", "redisson_lock_timeout:{one:fair}", "redisson_lock_token:{one:fenced}",
		"{one:rw}:" + rw["uuid"] + ":3:rwlock_timeout:1"} {
		if snap.has(k) {
			t.Errorf("companion key %s has a row of its own", k)
		}
	}

	noTTL := pyClient(t, "hold", addr, "one:redis-py-forever")
	noTTL.next(t, "acquired", startup)
	code, snap = dump(t, addrs)
	if r := snap.find(t, "one:redis-py-forever"); code != 3 || r.State != "no-ttl" || r.Library != "redis-py?" {
		t.Errorf("redis-py lock without timeout: exit %d, state %q, library %q; want 3, no-ttl, redis-py", code, r.State, r.Library)
	}
}

// oneOf reports whether the row is a guess naming exactly libs ("a|b?") and its evidence
// names every one of them.
func oneOf(r resource, libs []string) bool {
	guess, ok := strings.CutSuffix(r.Library, "?")
	names := strings.Split(guess, "|")
	if !ok || len(names) != len(libs) {
		return false
	}
	for _, l := range libs {
		if !slices.Contains(names, l) || !strings.Contains(alnum(r.Evidence), alnum(l)) {
			return false
		}
	}
	return true
}

// alnum lowercases s and keeps only letters and digits: "RedLock.net" -> "redlocknet".
func alnum(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// TestRedissonWaitersWakeOnForceRelease: a replayed Redisson waiter, subscribed on the
// exact channel Redisson uses, receives the unlock message when redlockctl
// force-releases the lock (0; 1 for a read/write lock, to wake every waiter); fair-lock
// waiters get it each on its own channel.
func TestRedissonWaitersWakeOnForceRelease(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	s := ms[0]
	ops := loadReplay(t, "redisson")
	for _, c := range []struct{ name, lock, wait, msg string }{
		{"orders", "lock", "wait", "0"},
		{"{orders}:export", "lock", "wait", "0"},
		{"tokens", "fenced-lock", "wait", "0"},
		{"queue", "fair-lock", "fair-wait", "0"},
		{"catalog", "read-lock", "write-wait", "1"},
		{"ledger", "write-lock", "write-wait", "1"},
	} {
		t.Run(c.lock+" "+c.name, func(t *testing.T) {
			replay(t, s, ops, c.lock, redissonVars(c.name, 1))
			first := replay(t, s, ops, c.wait, redissonVars(c.name, 2))[0]
			second := replay(t, s, ops, c.wait, redissonVars(c.name, 3))[0] // a fair lock queues it behind the first
			out, a := forceRelease(t, addrs, c.name)
			for i, w := range []*waiter{first, second} {
				if got := w.receive(t, 5*time.Second); got != c.msg {
					t.Errorf("waiter %d got %q, want %q\n%s", i+1, got, c.msg, out)
				}
			}
			if a.Library != "redisson" || a.Protocol != "redisson-unlock" {
				t.Errorf("audit: %+v, want library redisson, protocol redisson-unlock", a)
			}
			if n, _ := s.Do("EXISTS", c.name); n != int64(0) {
				t.Errorf("lock key %s still there after force-release", c.name)
			}
		})
	}
}

// TestRedissonShardedWaitersWakeOnForceReleaseInCluster: on a Redis 7 Cluster, Redisson
// (sharded subscriptions on, its default there) waits with SSUBSCRIBE and unlocks with
// SPUBLISH, which a PUBLISH never reaches; with them off it waits with SUBSCRIBE. A
// force-release must wake both kinds. The first case replays Redisson's own sharded
// unlock, to show that the replayed waiter is woken by what Redisson itself sends.
func TestRedissonShardedWaitersWakeOnForceReleaseInCluster(t *testing.T) {
	t.Parallel()
	needTools(t)
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	config, audit := writeClusterConfig(t, c.Seeds())
	ops := loadReplay(t, "redisson")
	for _, tc := range []struct{ name, lock, wait, release, msg string }{
		{"invoices", "lock", "wait-sharded", "unlock-sharded", "0"},
		{"orders", "lock", "wait-sharded", "", "0"},
		{"{orders}:export", "lock", "wait-sharded", "", "0"},
		{"queue", "fair-lock", "fair-wait-sharded", "", "0"},
		{"ledger", "write-lock", "write-wait-sharded", "", "1"},
		{"catalog", "lock", "wait", "", "0"}, // sharded subscriptions off
	} {
		t.Run(tc.wait+" "+tc.name, func(t *testing.T) {
			s := c.ShardOf(tc.name).Master
			holder := redissonVars(tc.name, 1)
			replay(t, s, ops, tc.lock, holder)
			w := replay(t, s, ops, tc.wait, redissonVars(tc.name, 2))[0]
			out := "Redisson's own " + tc.release
			if tc.release != "" {
				replay(t, s, ops, tc.release, holder)
			} else {
				var a auditEntry
				out, a = forceReleaseWith(t, config, audit, tc.name)
				if a.Library != "redisson" || a.Protocol != "redisson-unlock" {
					t.Errorf("audit: %+v, want library redisson, protocol redisson-unlock", a)
				}
			}
			if got := w.receive(t, 5*time.Second); got != tc.msg {
				t.Errorf("waiter got %q, want %q\n%s", got, tc.msg, out)
			}
			if n, _ := s.Do("EXISTS", tc.name); n != int64(0) {
				t.Errorf("lock key %s still there after the release", tc.name)
			}
		})
	}
}

// TestPythonRedisLockWaiterWakesOnForceRelease: python-redis-lock's waiters block in
// BLPOP on the signal list; redlockctl's force-release pushes it as the library's own
// reset does, so a waiter wakes at once (a bare DEL would leave it blocked for good).
func TestPythonRedisLockWaiterWakesOnForceRelease(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	s := ms[0]
	ops := loadReplay(t, "python-redis-lock")
	for _, c := range []struct {
		name, lock, wait string
		flags            []string
	}{
		{"reports", "lock", "wait", nil},
		{"forever", "lock-no-expire", "wait-no-expire", []string{"--any-value"}}, // no TTL: BLPOP without timeout
	} {
		t.Run(c.lock, func(t *testing.T) {
			replay(t, s, ops, c.lock, map[string]string{"name": c.name, "id": pyRedisLockID(), "expire_s": "60"})
			w := replay(t, s, ops, c.wait, map[string]string{"name": c.name, "id": pyRedisLockID(), "expire_s": "60"})[0]
			_, a := forceRelease(t, addrs, "lock:"+c.name, c.flags...)
			if got := w.receive(t, 5*time.Second); got != "1" {
				t.Errorf("BLPOP waiter got %q, want the signal 1", got)
			}
			if a.Library != "python-redis-lock" || a.Protocol != "python-redis-lock-reset" {
				t.Errorf("audit: %+v, want library python-redis-lock, protocol python-redis-lock-reset", a)
			}
		})
	}
}

// TestSpringGuessReleasedByCompareAndDelete: a RedisLockRegistry lock has the key and
// value shape many libraries write (aioredlock, asynq), so redlockctl names no library
// and releases it by compare-and-delete of the exact value: the key goes, nothing is
// published (PUB_SUB_LOCK waiters wake at their own timeout), and the plan says its
// library is unknown.
func TestSpringGuessReleasedByCompareAndDelete(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	s := ms[0]
	ops := loadReplay(t, "spring-integration")
	v := map[string]string{"registry": "orders-registry", "path": "invoice-7", "client": uuid4(), "other": uuid4(), "ttl_ms": "60000"}
	replay(t, s, ops, "lock", v)
	w := replay(t, s, ops, "wait", v)[0]
	out, a := forceRelease(t, addrs, "orders-registry:invoice-7")
	if a.Protocol != "compare-and-delete" || a.Library != "unknown" {
		t.Errorf("audit: %+v, want library unknown, protocol compare-and-delete", a)
	}
	if !strings.Contains(out, "unknown") {
		t.Errorf("plan does not say the library is unknown:\n%s", out)
	}
	w.silent(t, 500*time.Millisecond)
	if n, err := s.Do("EXISTS", "orders-registry:invoice-7"); err != nil || n.(int64) != 0 {
		t.Errorf("key still there after force-release (%v %v)", n, err)
	}
}

// TestRedlockNetForceReleaseWarnsOfRecreation: RedLock.net's extension re-creates a
// deleted key while its holder lives; the force-release plan must say so.
func TestRedlockNetForceReleaseWarnsOfRecreation(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	replay(t, ms[0], loadReplay(t, "redlock-net"), "lock", map[string]string{"name": "billing", "guid": uuid4(), "ttl_ms": "60000"})
	out, _ := forceRelease(t, addrs, "redlock:billing")
	if !strings.Contains(strings.ToLower(out), "re-creat") {
		t.Errorf("force-release of a RedLock.net-shaped lock does not warn that the holder re-creates the key:\n%s", out)
	}
}
