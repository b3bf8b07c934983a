package poll

import (
	"context"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

const (
	rsHolder = "6f1c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41:57"
	rsWaiter = "0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3:12"
)

// uuid1Now is a redis-py token (uuid.uuid1().hex) stamped at t.
func uuid1Now(t time.Time) string {
	ticks := uint64(t.Unix()+12219292800)*1e7 + uint64(t.Nanosecond()/100)
	b := []byte{byte(ticks >> 24), byte(ticks >> 16), byte(ticks >> 8), byte(ticks),
		byte(ticks >> 40), byte(ticks >> 32), byte(ticks>>56)&0x0f | 0x10, byte(ticks >> 48),
		0x92, 0x34, 0x02, 0x42, 0xac, 0x11, 0x00, 0x02}
	return hex.EncodeToString(b)
}

// On one master, healthy locks of every library are held, carry no anomaly, and the
// dump exits 0; their companion keys are not rows.
func TestRecogniseOneMaster(t *testing.T) {
	// appendfsync always: a master just started is no restarted-recently finding.
	srv := redistest.StartN(t, 1, redistest.Options{AOF: true})
	s := srv[:1]
	nowMs := time.Now().UnixMilli()
	// Redisson fair lock with one waiter (RedissonFairLock.tryLockInnerAsync).
	do(t, s, "HSET", "orders", rsHolder, 2)
	do(t, s, "PEXPIRE", "orders", 30000)
	do(t, s, "RPUSH", "redisson_lock_queue:{orders}", rsWaiter)
	do(t, s, "ZADD", "redisson_lock_timeout:{orders}", nowMs+300000, rsWaiter)
	// Redisson write lock with its reader's rwlock_timeout key.
	do(t, s, "HSET", "doc", "mode", "write", rsHolder+":write", 1, rsHolder, 1)
	do(t, s, "PEXPIRE", "doc", 30000)
	do(t, s, "SET", "{doc}:"+rsHolder+":rwlock_timeout:1", 1, "PX", 30000)
	do(t, s, "SET", "redsync-job", "q83vEjRWeJCrze8SNFZ4kA==", "PX", 30000)
	do(t, s, "SET", "node-job", hex32, "PX", 30000)
	do(t, s, "SET", "node-job-2", hex32, "PX", 30000) // one node-redlock lock on two resources
	do(t, s, "SET", "py-job", uuid1Now(time.Now()), "PX", 30000)
	do(t, s, "SET", "lock:report", "AAECAwQFBgcICQoLDA0ODxAR", "EX", 30)
	do(t, s, "RPUSH", "lock-signal:report", 1)
	do(t, s, "SET", "job-lock:default:nightly", "ADDED:2026-11-23T08:55:01.123Z@app-3:6f1c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41", "PX", 30000)
	do(t, s, "SET", "mine", "w-1@h#"+hex32, "PX", 30000)

	p := newPoller(t, testConfig(t, s, nil))
	snap := p.Poll(context.Background())
	want := map[string][3]string{ // resource: library, kind, owner
		"orders":                   {locks.Redisson, "fair-lock", rsHolder},
		"doc":                      {locks.Redisson, "read-write-lock", rsHolder + " (write)"},
		"redsync-job":              {"redsync?", "", ""},
		"node-job":                 {"node-redlock?", "", ""},
		"node-job-2":               {"node-redlock?", "", ""},
		"py-job":                   {"redis-py?", "", ""},
		"lock:report":              {locks.PythonRedisLock, "", ""},
		"job-lock:default:nightly": {locks.ShedLock, "", "app-3 at 2026-11-23T08:55:01Z"},
		"mine":                     {locks.Redlockctl, "", "w-1@h"},
	}
	if len(snap.Resources) != len(want) {
		var keys []string
		for _, r := range snap.Resources {
			keys = append(keys, r.Key)
		}
		t.Fatalf("rows %v, want exactly %d (companion keys are not rows)", keys, len(want))
	}
	for name, w := range want {
		r := row(t, snap, name)
		if r.State != inspect.StateHeld || len(r.Anomalies) != 0 || r.Library != w[0] || r.Kind != w[1] {
			t.Errorf("%s: state %s anomalies %v library %q kind %q, want held, none, %q %q (evidence %q)",
				name, r.State, r.Anomalies, r.Library, r.Kind, w[0], w[1], r.LibraryEvidence)
		}
		if w[2] != "" && r.Owner != w[2] {
			t.Errorf("%s: owner %q, want %q", name, r.Owner, w[2])
		}
		if r.LibraryEvidence == "" {
			t.Errorf("%s: no evidence", name)
		}
	}
	if r := row(t, snap, "orders"); r.Count != 2 || r.Nodes[0].Type != "hash" {
		t.Errorf("orders: count %d type %q", r.Count, r.Nodes[0].Type)
	}
	if l, ok := row(t, snap, "orders").Decoded(time.Now()); !ok || !slices.Equal(l.Waiters, []string{rsWaiter}) {
		t.Errorf("orders waiters %v (ok %v), want the queued waiter", l.Waiters, ok)
	}
	if ev := row(t, snap, "node-job").LibraryEvidence; !strings.Contains(ev, "the same value holds 2 keys") {
		t.Errorf("node-job evidence %q does not say one value locks two keys", ev)
	}
	if code := inspect.ExitCode(snap); code != 0 {
		t.Errorf("exit code %d, want 0 for healthy locks (findings %+v)", code, snap.Masters[0].Findings)
	}

	// Then what is not fine: redis-py without a TTL, a hash nobody knows, and a
	// Redisson-looking hash with a field Redisson never writes.
	do(t, s, "SET", "py-forever", uuid1Now(time.Now()))
	do(t, s, "HSET", "user:1", "name", "ada")
	do(t, s, "HSET", "odd", rsHolder, 1, "owner", "x")
	snap = p.Poll(context.Background())
	if r := row(t, snap, "py-forever"); r.State != inspect.StateNoTTL || r.Library != "redis-py?" {
		t.Errorf("py-forever: %s %q, want no-ttl redis-py", r.State, r.Library)
	}
	if r := row(t, snap, "user:1"); r.State != inspect.StateForeign || r.Library != locks.Unknown || !hasAnomaly(r, inspect.AnomalyWrongType, "m1") {
		t.Errorf("user:1: %s %q %v, want foreign unknown with wrongtype", r.State, r.Library, r.Anomalies)
	}
	r := row(t, snap, "odd")
	if r.State != inspect.StateForeign || !strings.Contains(r.LibraryEvidence, "Redisson-looking") ||
		!strings.Contains(r.Anomalies[0].Message, `unexpected field "owner"`) {
		t.Errorf("odd: %s %q %v, want foreign with the reason", r.State, r.LibraryEvidence, r.Anomalies)
	}
	if code := inspect.ExitCode(snap); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
}

// A library's bookkeeping keys belong to it and are no lock: simple-redis-mutex's
// fencing counter (INCR, no TTL) is no no-ttl lock and leaves the exit code at 0, while
// an unknown key without TTL is still no-ttl, and so is a string at the counter's
// name that is no counter.
func TestBookkeepingKeysAreNoLocks(t *testing.T) {
	srv := redistest.StartN(t, 1, redistest.Options{AOF: true})
	s := srv[:1]
	do(t, s, "INCR", "@simple-redis-mutex:fencing-tokens")
	do(t, s, "INCR", "@simple-redis-mutex:fencing-tokens")
	do(t, s, "SET", "@simple-redis-mutex:lock-report", "0.5820641185470427", "PX", 30000)
	do(t, s, "ZADD", "uniquejobs:digests", 1, "uniquejobs:abc")
	p := newPoller(t, testConfig(t, s, nil))
	snap := p.Poll(context.Background())
	r := row(t, snap, "@simple-redis-mutex:fencing-tokens")
	if r.State != inspect.StateBookkeeping || r.Library != locks.SimpleRedisMutex || !strings.Contains(r.LibraryEvidence, "fencing counter") || len(r.Anomalies) != 0 {
		t.Errorf("fencing counter: %s %q %q %v, want bookkeeping of simple-redis-mutex", r.State, r.Library, r.LibraryEvidence, r.Anomalies)
	}
	if r := row(t, snap, "uniquejobs:digests"); r.State != inspect.StateBookkeeping || r.Library != locks.SidekiqUniqueJobs || len(r.Anomalies) != 0 {
		t.Errorf("digests: %s %q %v, want bookkeeping of sidekiq-unique-jobs", r.State, r.Library, r.Anomalies)
	}
	if r := row(t, snap, "@simple-redis-mutex:lock-report"); r.State != inspect.StateHeld || r.Library != locks.SimpleRedisMutex {
		t.Errorf("lock: %s %q, want held simple-redis-mutex", r.State, r.Library)
	}
	if snap.Summary.NoTTL != 0 || snap.Summary.SingleSummary.Held != 1 || snap.Summary.SingleSummary.NoTTL != 0 {
		t.Errorf("summary %+v: the counter counted as a lock", snap.Summary)
	}
	if code := inspect.ExitCode(snap); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	do(t, s, "SET", "counter", 7)
	do(t, s, "DEL", "@simple-redis-mutex:fencing-tokens")
	do(t, s, "SET", "@simple-redis-mutex:fencing-tokens", "not a counter")
	snap = p.Poll(context.Background())
	for _, k := range []string{"counter", "@simple-redis-mutex:fencing-tokens"} {
		if r := row(t, snap, k); r.State != inspect.StateNoTTL {
			t.Errorf("%s: %s, want no-ttl", k, r.State)
		}
	}
	if code := inspect.ExitCode(snap); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
}

// A Redisson hash is judged by its holder field like a string lock. The same holder on
// several masters is a RedissonRedLock or MultiLock, judged by the quorum; on one
// master it is an RLock, single-instance: held there, and holders that differ per
// master are independent RLocks, never a split.
func TestRecogniseRedissonQuorum(t *testing.T) {
	srv := redistest.StartN(t, 3, redistest.Options{})
	do(t, srv[:2], "HSET", "held", rsHolder, 1)
	do(t, srv[:2], "PEXPIRE", "held", 30000)
	do(t, srv[:1], "HSET", "partial", rsHolder, 1)
	do(t, srv[:1], "PEXPIRE", "partial", 30000)
	do(t, srv[:1], "HSET", "split", rsHolder, 1)
	do(t, srv[1:2], "HSET", "split", rsWaiter, 1)
	do(t, srv[:2], "PEXPIRE", "split", 30000)
	snap := newPoller(t, testConfig(t, srv, nil)).Poll(context.Background())
	for name, want := range map[string]struct {
		state, scope string
		on           []string
	}{
		"held":    {inspect.StateHeld, locks.ScopeRedlock, nil},
		"partial": {inspect.StateHeld, locks.ScopeSingle, []string{"m1"}},
		"split":   {inspect.StateHeld, locks.ScopeSingle, []string{"m1", "m2"}},
	} {
		r := row(t, snap, name)
		if r.State != want.state || r.Scope != want.scope || !slices.Equal(r.Instances, want.on) || r.Library != locks.Redisson || len(r.Anomalies) != 0 {
			t.Errorf("%s: %s %s on %v %q %v, want %s %s on %v redisson without anomalies", name, r.State, r.Scope, r.Instances, r.Library, r.Anomalies, want.state, want.scope, want.on)
		}
	}
	if snap.Summary.Partial != 0 || snap.Summary.Split != 0 || snap.Summary.Held != 1 || snap.Summary.SingleSummary.Held != 2 {
		t.Errorf("summary %+v, want 1 held by the quorum and 2 single-instance", snap.Summary)
	}
	if r := row(t, snap, "held"); r.Holders != 2 || r.Value != rsHolder || r.ValidityMs <= 0 {
		t.Errorf("held: holders %d value %q validity %d", r.Holders, r.Value, r.ValidityMs)
	}
}

// Hashes that are no lock cost one HSCAN; only Redisson-looking ones get their
// companions read. Nothing the poller sends for them writes.
func TestHashReadsAreBoundedAndReadOnly(t *testing.T) {
	srv := redistest.StartN(t, 1, redistest.Options{})
	for i := range 20 {
		do(t, srv, "HSET", "user:"+strconv.Itoa(i), "name", "ada", "cart", "3")
	}
	do(t, srv, "CONFIG", "RESETSTAT")
	p := newPoller(t, testConfig(t, srv, nil))
	p.Poll(context.Background())
	stats := srv[0].CommandCalls(t)
	if stats["hscan"] != 20 || stats["lrange"]+stats["zrange"] != 0 {
		t.Errorf("plain hashes: %v, want 20 HSCAN and no companion reads", stats)
	}
	do(t, srv, "HSET", "orders", rsHolder, 1)
	do(t, srv, "CONFIG", "RESETSTAT")
	p.Poll(context.Background())
	stats = srv[0].CommandCalls(t)
	if stats["lrange"] != 1 || stats["zrange"] != 1 {
		t.Errorf("a Redisson hash: %v, want its queue and timeouts read once", stats)
	}
	for cmd := range stats {
		switch cmd {
		case "hscan", "lrange", "zrange", "get", "mget", "pttl", "type", "scan", "time", "info", "config|get", "config", "dbsize", "ping", "select", "auth", "hello", "client|setinfo", "client", "config|resetstat":
		default:
			t.Errorf("the poller sent %s", cmd)
		}
	}
}
