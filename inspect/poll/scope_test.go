package poll

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Single-instance locks are judged on their own master: a redis-py lock on one master
// of five is held there (validity its PTTL), two with one name on two masters are two
// independent locks (never split), and neither makes the exit code non-zero. A value
// nobody recognises is still judged by the quorum, and a scope rule overrides both.
func TestSingleInstanceScope(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{AOF: true})
	now := time.Now()
	do(t, srv[2:3], "SET", "report", uuid1Now(now), "PX", 30000)
	do(t, srv[0:1], "SET", "shared", uuid1Now(now.Add(-time.Second)), "PX", 30000)
	do(t, srv[3:4], "SET", "shared", uuid1Now(now.Add(-2*time.Second)), "PX", 20000)
	do(t, srv[0:1], "SET", "opaque", "no-library-writes-this", "PX", 30000)
	do(t, srv[0:1], "SET", "billing:run", "no-library-writes-this", "PX", 30000)
	do(t, srv[0:3], "SET", "lib-forced", uuid1Now(now), "PX", 30000)
	cfg := testConfig(t, srv, func(c *config.Config) {
		c.Inspect.Scopes = []config.ScopeRule{{Pattern: "billing:*", Scope: "single"}, {Pattern: "lib-forced", Scope: "redlock"}}
	})
	snap := newPoller(t, cfg).Poll(context.Background())

	r := row(t, snap, "report")
	if r.State != inspect.StateHeld || r.Scope != locks.ScopeSingle || !slices.Equal(r.Instances, []string{"m3"}) || r.ValidityMs < 25000 || r.ValidityMs > 30000 || len(r.Anomalies) != 0 {
		t.Errorf("redis-py on m3: %s %s on %v validity %d %v, want held single on m3 with its PTTL", r.State, r.Scope, r.Instances, r.ValidityMs, r.Anomalies)
	}
	r = row(t, snap, "shared")
	if r.State != inspect.StateHeld || r.Scope != locks.ScopeSingle || !slices.Equal(r.Instances, []string{"m1", "m4"}) || len(r.Anomalies) != 0 {
		t.Errorf("two redis-py locks on m1 and m4: %s %s on %v %v, want held single on both", r.State, r.Scope, r.Instances, r.Anomalies)
	}
	if r := row(t, snap, "opaque"); r.State != inspect.StatePartial || r.Scope != locks.ScopeRedlock || r.Library != locks.Unknown {
		t.Errorf("unknown value on 1 of 5: %s %s %q, want partial redlock unknown", r.State, r.Scope, r.Library)
	}
	if r := row(t, snap, "billing:run"); r.State != inspect.StateHeld || r.Scope != locks.ScopeSingle {
		t.Errorf("billing:run under a scope rule: %s %s, want held single", r.State, r.Scope)
	}
	if r := row(t, snap, "lib-forced"); r.State != inspect.StateHeld || r.Scope != locks.ScopeRedlock || r.Holders != 3 {
		t.Errorf("lib-forced: %s %s holders %d, want held redlock on 3", r.State, r.Scope, r.Holders)
	}
	want := inspect.Summary{Resources: 5, Held: 1, Partial: 1, SingleSummary: inspect.SingleSummary{Held: 3}, MastersUp: 5, Findings: snap.Summary.Findings}
	if snap.Summary != want {
		t.Errorf("summary %+v, want %+v", snap.Summary, want)
	}
	do(t, srv, "DEL", "opaque")
	if code := inspect.ExitCode(newPoller(t, cfg).Poll(context.Background())); code != 0 {
		t.Errorf("exit code %d on healthy single-instance locks, want 0", code)
	}
}

// A semaphore is held by several holders by design: state semaphore with its permits,
// no anomaly, whatever it holds.
func TestSemaphoreState(t *testing.T) {
	srv := redistest.StartN(t, 3, redistest.Options{AOF: true})
	ms := float64(time.Now().UnixMilli())
	ids := []string{"1f0c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41", "2a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3", "3a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3"}
	do(t, srv[1:2], "ZADD", "semaphore:pool", ms, ids[0], ms, ids[1], ms, ids[2])
	do(t, srv[1:2], "PEXPIRE", "semaphore:pool", 30000)
	do(t, srv, "ZADD", "semaphore:fleet", ms, ids[0], ms, ids[1])
	do(t, srv, "PEXPIRE", "semaphore:fleet", 30000)
	snap := newPoller(t, testConfig(t, srv, nil)).Poll(context.Background())
	for name, want := range map[string]struct {
		scope   string
		permits int
	}{"semaphore:pool": {locks.ScopeSingle, 3}, "semaphore:fleet": {locks.ScopeRedlock, 2}} {
		r := row(t, snap, name)
		if r.State != inspect.StateSemaphore || r.Scope != want.scope || r.Permits != want.permits || len(r.Anomalies) != 0 || r.Reportable() {
			t.Errorf("%s: %s %s permits %d %v, want semaphore %s with %d permits", name, r.State, r.Scope, r.Permits, r.Anomalies, want.scope, want.permits)
		}
	}
	if s := snap.Summary; s.Semaphore != 1 || s.SingleSummary.Semaphore != 1 || inspect.ExitCode(snap) != 0 {
		t.Errorf("summary %+v exit %d, want one semaphore of each scope and exit 0", s, inspect.ExitCode(snap))
	}
}

// A Redisson RPermitExpirableSemaphore's permit count, an integer at its bare name, is
// folded into its {name}:timeout row on the master that holds both, with the count on
// the row; read with GET, never written. The same integer without the set beside it on
// its master (alone, or on another master than the set) stays a row of its own.
func TestRedissonPermitCountFolds(t *testing.T) {
	srv := redistest.StartN(t, 3, redistest.Options{AOF: true})
	exp := time.Now().Add(time.Minute).UnixMilli()
	permit := "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
	do(t, srv[1:2], "SET", "pool", 2)
	do(t, srv[1:2], "ZADD", "{pool}:timeout", exp, permit)
	do(t, srv[1:2], "SET", "mixed", 1)
	do(t, srv[1:2], "ZADD", "{mixed}:timeout", exp, permit)
	do(t, srv[0:1], "SET", "mixed", 4) // no set beside it on m1
	do(t, srv[2:3], "SET", "counter", 5)
	do(t, srv[2:3], "SET", "words", "not a count")
	do(t, srv[2:3], "ZADD", "{words}:timeout", exp, permit)
	do(t, srv, "CONFIG", "RESETSTAT")
	cfg := testConfig(t, srv, nil)
	snap := newPoller(t, cfg).Poll(context.Background())

	for _, r := range snap.Resources {
		if r.Key == "pool" {
			t.Errorf("pool, the semaphore's permit count, has a row of its own: %s %s %v", r.State, r.Library, r.Anomalies)
		}
	}
	r := row(t, snap, "{pool}:timeout")
	if r.State != inspect.StateSemaphore || r.Library != locks.Redisson || r.Permits != 1 || r.AvailablePermits == nil || *r.AvailablePermits != 2 ||
		!slices.Equal(r.Instances, []string{"m2"}) || len(r.Anomalies) != 0 {
		t.Errorf("{pool}:timeout: %s %s permits %d available %v on %v %v, want a redisson semaphore of 1 permit, 2 available, on m2",
			r.State, r.Library, r.Permits, r.AvailablePermits, r.Instances, r.Anomalies)
	}
	if r := row(t, snap, "{words}:timeout"); r.State != inspect.StateSemaphore || r.AvailablePermits != nil {
		t.Errorf("{words}:timeout beside a non-integer: %s available %v, want a semaphore with no count", r.State, r.AvailablePermits)
	}
	for _, k := range []string{"mixed", "counter", "words"} {
		if r := row(t, snap, k); r.Library != locks.Unknown || !r.Reportable() {
			t.Errorf("%s: %s %q %v, want an unknown row with its finding", k, r.State, r.Library, r.Anomalies)
		}
	}
	stats := srv[1].CommandCalls(t)
	for cmd := range stats {
		switch cmd {
		case "zrange", "get", "mget", "pttl", "type", "scan", "time", "info", "config|get", "dbsize", "ping", "select", "hello", "client|setinfo", "config|resetstat":
		default:
			t.Errorf("the poller sent %s", cmd)
		}
	}

	do(t, srv, "DEL", "mixed", "counter", "words", "{words}:timeout")
	if snap := newPoller(t, cfg).Poll(context.Background()); inspect.ExitCode(snap) != 0 {
		t.Errorf("exit %d on a healthy Redisson semaphore, want 0", inspect.ExitCode(snap))
	}
}
