package redlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

func pttl(t testing.TB, s *redistest.Server, key string) time.Duration {
	t.Helper()
	ms, err := redis.Int64(s.Do("PTTL", key))
	if err != nil {
		t.Fatalf("PTTL %s on %s: %v", key, s.Addr, err)
	}
	return time.Duration(ms) * time.Millisecond
}

func TestExtendWithinValidity(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithMaxExtensions(2))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "ext", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := l.Until()
	if err := c.Extend(ctx, l, 5*time.Second); err != nil {
		t.Fatalf("Extend within validity: %v", err)
	}
	if v := l.Validity(); v <= time.Second || !l.Until().After(before) {
		t.Errorf("after Extend to 5s: Validity %v, Until moved from %v to %v", v, before, l.Until())
	}
	// Extend returned at quorum; the third master's reply may still be in flight.
	waitFor(t, func() bool {
		for _, s := range servers {
			if pttl(t, s, l.Key()) < 4*time.Second {
				return false
			}
		}
		return true
	}, "PTTL below 4s on some master after Extend to 5s")
	if err := c.Extend(ctx, l, 5*time.Second); err != nil {
		t.Fatalf("second Extend: %v", err)
	}
	if err := c.Extend(ctx, l, 5*time.Second); !errors.Is(err, ErrExtensionLimit) {
		t.Fatalf("third Extend with WithMaxExtensions(2): err = %v, want ErrExtensionLimit", err)
	}
	if l.Validity() == 0 {
		t.Error("the extension limit made the lock lose its deadline")
	}
}

// TestExtendAfterExpiry: once the lock expired, Extend fails with ErrLockLost and the
// key is not re-created on any master.
func TestExtendAfterExpiry(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "expiring", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return l.Validity() == 0 && holders(t, servers, l.Key(), "") == 3 }, "key did not expire")
	if err := c.Extend(ctx, l, time.Second); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Extend after expiry: err = %v, want ErrLockLost", err)
	}
	if n := holders(t, servers, l.Key(), ""); n != 3 {
		t.Errorf("key re-created on %d masters", 3-n)
	}
}

// TestExtendAfterKeysVanished: the keys disappear while the local deadline is still
// ahead (force-released): Extend asks the masters, each says absent, and nothing comes back.
func TestExtendAfterKeysVanished(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "vanishing", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "vanishing"); err != nil {
		t.Fatal(err)
	}
	err = c.Extend(ctx, l, 10*time.Second)
	var qe *QuorumError
	if !errors.Is(err, ErrLockLost) || !errors.As(err, &qe) || qe.Result.Count(Absent) != 3 {
		t.Fatalf("Extend after the keys vanished: err = %v, want a QuorumError with 3 absent wrapping ErrLockLost", err)
	}
	if l.Validity() != 0 {
		t.Errorf("Validity %v after a failed Extend, want 0", l.Validity())
	}
	if n := holders(t, servers, l.Key(), ""); n != 3 {
		t.Errorf("key re-created on %d masters", 3-n)
	}
}

// TestExtendAfterRestartWithoutData: a master restarted empty stays out of the lock:
// Extend succeeds on the other two and does not put the key back there.
func TestExtendAfterRestartWithoutData(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "restarted", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return holders(t, servers, l.Key(), l.Value()) == 3 }, "value not on all masters")
	servers[0].Restart(false)
	if err := c.Extend(ctx, l, 10*time.Second); err != nil {
		t.Fatalf("Extend with one master restarted empty: %v", err)
	}
	if err := c.Extend(ctx, l, 10*time.Second); err != nil { // the pipe has reconnected by now
		t.Fatalf("second Extend: %v", err)
	}
	if v := servers[0].Get(t, l.Key()); v != "" {
		t.Errorf("Extend put %q back on the restarted master", v)
	}
	if n := holders(t, servers[1:], l.Key(), l.Value()); n != 2 {
		t.Errorf("value on %d of the other masters, want 2", n)
	}
}

// TestReleaseForeignValue: releasing with a value that is not there deletes nothing.
func TestReleaseForeignValue(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "foreign", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ReleaseValue(ctx, "foreign", "someone-else#"+strings.Repeat("0", 32))
	if err != nil || res.Count(Taken) != 3 {
		t.Fatalf("ReleaseValue with a foreign value: %+v, %v; want 3 taken", res, err)
	}
	if n := holders(t, servers, l.Key(), l.Value()); n != 3 {
		t.Fatalf("value left on %d masters after a foreign release, want 3", n)
	}
	// The lock's own Release when another value replaced it: the other value stays.
	for _, s := range servers {
		if _, err := s.Do("SET", l.Key(), "intruder"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Release(ctx, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := holders(t, servers, l.Key(), "intruder"); n != 3 {
		t.Errorf("Release deleted another holder's value on %d masters", 3-n)
	}
	res, err = c.ReleaseValue(ctx, "foreign", "intruder")
	if err != nil || res.Count(OK) != 3 || holders(t, servers, l.Key(), "") != 3 {
		t.Errorf("ReleaseValue with the value present: %+v, %v; want 3 ok and no key left", res, err)
	}
	res, err = c.ReleaseValue(ctx, "foreign", "intruder")
	if err != nil || res.Count(Absent) != 3 {
		t.Errorf("ReleaseValue of a missing key: %+v, %v; want 3 absent", res, err)
	}
}

// TestLateReplyAfterFailedAcquire: a master paused while an acquire fails gets the
// release queued behind the SET on the same connection, so when it resumes it executes
// the SET and then deletes the key at once (long before its TTL); this holds whether the
// pause is shorter or longer than the stall timeout (the client then closed the
// connection, but the server still runs what it had received, scripts included).
func TestLateReplyAfterFailedAcquire(t *testing.T) {
	t.Parallel()
	for _, pause := range []time.Duration{150 * time.Millisecond, 900 * time.Millisecond} {
		t.Run(pause.String(), func(t *testing.T) {
			t.Parallel()
			servers := redistest.StartN(t, 3, redistest.Options{})
			c := newClient(t, redistest.Pools(servers), WithNodeTimeout(DefaultNodeTimeout)) // stall timeout 500ms
			ctx := context.Background()
			// warm the connections so that the paused master's pipe is established
			if l, err := c.Acquire(ctx, "warm", time.Second); err != nil {
				t.Fatal(err)
			} else {
				c.Release(ctx, l)
			}
			// Acquire and Release return at a quorum: wait until master 0 has run the
			// warm release too (queued behind its SET), so that no warm-up SET lands in
			// the count below.
			waitFor(t, func() bool {
				calls := servers[0].CommandCalls(t)
				return calls["set"] >= 1 && calls["evalsha"]+calls["eval"] >= 1
			}, "master 0 never ran the warm-up's SET and release")
			key := c.Key("late")
			if _, err := servers[1].Do("SET", key, "other", "PX", 60000); err != nil {
				t.Fatal(err)
			}
			setsBefore := servers[0].CommandCalls(t)["set"]
			servers[0].Pause()
			paused := time.Now()
			_, err := c.Acquire(ctx, "late", time.Minute)
			var qe *QuorumError
			if !errors.As(err, &qe) {
				t.Fatalf("Acquire with one master paused and one taken: %v", err)
			}
			if o := qe.Result.Nodes; o[0].Outcome != Timeout || o[1].Outcome != Taken || o[2].Outcome == Taken {
				t.Errorf("outcomes %v, want the paused master timeout and master 1 taken", qe)
			}
			time.Sleep(pause - time.Since(paused))
			servers[0].Resume()
			waitFor(t, func() bool {
				return servers[0].Get(t, key) == "" && servers[2].Get(t, key) == ""
			}, "key left behind after the paused master resumed")
			if d := pttl(t, servers[1], key); d < 50*time.Second {
				t.Errorf("the other holder's key was touched: PTTL %v", d)
			}
			if n := servers[0].CommandCalls(t)["set"]; n != setsBefore+1 {
				t.Errorf("the paused master ran %d SETs after resuming, want 1 (the late one)", n-setsBefore)
			}
		})
	}
}

// TestAdminCalls: ExtendValue, ReleaseValue and Delete report per-master outcomes and
// return an error only when fewer than a quorum of masters answered.
func TestAdminCalls(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	pools := append(redistest.Pools(servers[:2]), deadPool(t))
	c := newClient(t, pools, WithKeyPrefix("lock:"))
	ctx := context.Background()
	key := "lock:admin"
	servers[0].Do("SET", key, "v1", "PX", 1000)
	servers[1].Do("SET", key, "v2", "PX", 1000)
	res, err := c.ExtendValue(ctx, "admin", "v1", time.Minute)
	want := []Outcome{OK, Taken, Failed}
	if err != nil || !sameOutcomes(res, want) {
		t.Fatalf("ExtendValue: %+v, %v; want %v", res, err, want)
	}
	if d := pttl(t, servers[0], key); d < 50*time.Second {
		t.Errorf("ExtendValue did not extend master 0: PTTL %v", d)
	}
	if d := pttl(t, servers[1], key); d > time.Second {
		t.Errorf("ExtendValue extended another value on master 1: PTTL %v", d)
	}
	res, err = c.Delete(ctx, "admin")
	if err != nil || !sameOutcomes(res, []Outcome{OK, OK, Failed}) || holders(t, servers[:2], key, "") != 2 {
		t.Fatalf("Delete: %+v, %v", res, err)
	}
	res, err = c.Delete(ctx, "admin")
	if err != nil || !sameOutcomes(res, []Outcome{Absent, Absent, Failed}) {
		t.Fatalf("Delete of a missing key: %+v, %v", res, err)
	}
	servers[1].Kill()
	res, err = c.ReleaseValue(ctx, "admin", "v1")
	var qe *QuorumError
	if !errors.Is(err, ErrNoQuorum) || !errors.As(err, &qe) || res.Reachable() != 1 {
		t.Fatalf("ReleaseValue with 1 of 3 reachable: %+v, %v; want ErrNoQuorum", res, err)
	}
	if _, err := c.ExtendValue(ctx, "", "v", time.Second); err == nil {
		t.Error("ExtendValue with an empty resource succeeded")
	}
}

// TestValues: GET on every master, a raw key (no prefix): each master's value, Absent
// where there is none, Refused for a key that is not a string, Failed for a dead master
// and, after Close, for every one.
func TestValues(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 4, redistest.Options{})
	pools := append(redistest.Pools(servers), deadPool(t))
	c := newClient(t, pools, WithKeyPrefix("lock:"))
	servers[0].Do("SET", "jobs:7", "v1", "PX", 60000)
	servers[1].Do("SET", "jobs:7", "v2")
	servers[3].Do("HSET", "jobs:7", "f", "1")
	values, res := c.Values(context.Background(), "jobs:7")
	if want := []string{"v1", "v2", "", "", ""}; !slices.Equal(values, want) || !sameOutcomes(res, []Outcome{OK, OK, Absent, Refused, Failed}) {
		t.Fatalf("Values: %q %+v; want %q, OK OK Absent Refused Failed", values, res, want)
	}
	if !strings.Contains(res.Nodes[3].Err.Error(), "WRONGTYPE") {
		t.Errorf("hash key: %v, want WRONGTYPE", res.Nodes[3].Err)
	}
	c.Close()
	values, res = c.Values(context.Background(), "jobs:7")
	if !slices.Equal(values, make([]string, 5)) || !sameOutcomes(res, []Outcome{Failed, Failed, Failed, Failed, Failed}) || !errors.Is(res.Nodes[0].Err, ErrClosed) {
		t.Fatalf("Values after Close: %q %+v", values, res)
	}
}

func sameOutcomes(r Result, want []Outcome) bool {
	if len(r.Nodes) != len(want) {
		return false
	}
	for i, nr := range r.Nodes {
		if nr.Outcome != want[i] || nr.Master != i {
			return false
		}
	}
	return true
}

// TestNoScriptFallback: after SCRIPT FLUSH, EVALSHA answers NOSCRIPT and the call is
// retried as EVAL; release and extend still work.
func TestNoScriptFallback(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "flushed", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Extend(ctx, l, 10*time.Second); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
	}
	if err := c.Release(ctx, l); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v", err)
	}
	waitFor(t, func() bool { return holders(t, servers, l.Key(), "") == 3 }, "key left after Release")
}

// TestPausedMasterStaysBounded: with one master stopped, operations keep succeeding on
// the others, the client's goroutines do not grow with the number of operations, and
// Close stops them all. Not parallel: it counts the process's goroutines.
func TestPausedMasterStaysBounded(t *testing.T) {
	servers := redistest.StartN(t, 5, redistest.Options{})
	c, err := New(redistest.Pools(servers), WithRetries(0), WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if l, err := c.Acquire(ctx, "warm", time.Second); err != nil { // dial every master
		t.Fatal(err)
	} else {
		c.Release(ctx, l)
	}
	base := runtime.NumGoroutine()
	servers[0].Pause()
	defer servers[0].Resume()
	var wg sync.WaitGroup
	var failed atomic.Int32
	peak := atomic.Int32{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 60; i++ {
				l, err := c.Acquire(ctx, fmt.Sprintf("bounded:%d", w), 5*time.Second)
				if err != nil {
					failed.Add(1)
					continue
				}
				c.Release(ctx, l)
				if g := int32(runtime.NumGoroutine()); g > peak.Load() {
					peak.Store(g)
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d acquires failed with 4 of 5 masters up", n)
	}
	// 8 workers and a few runtime goroutines on top of the base; nothing per operation.
	if p := int(peak.Load()); p > base+8+4 {
		t.Errorf("goroutines peaked at %d with %d before the pause: they grow with operations", p, base)
	}
	before := base - 2*len(servers) // the client's writer and reader per master
	c.Close()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+2 }, "goroutines left after Close: %d, want about %d", runtime.NumGoroutine(), before)
	if _, err := c.Acquire(ctx, "closed", time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
}

// TestStalledQueueIsBounded: with a master stopped, its queue fills and further calls
// fail at once ("queue full") instead of waiting in memory; the other masters answer.
func TestStalledQueueIsBounded(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	small := func(o *options) { o.queueLen = 4 }
	c := newClient(t, redistest.Pools(servers), small)
	ctx := context.Background()
	if _, err := c.Delete(ctx, "warm"); err != nil { // connect every master
		t.Fatal(err)
	}
	servers[0].Pause()
	defer servers[0].Resume()
	var wg sync.WaitGroup
	results := make([]Result, 64)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.Delete(ctx, "stalled")
		}()
	}
	wg.Wait()
	full, timedOut, answered := 0, 0, 0
	for _, r := range results {
		switch n := r.Nodes[0]; {
		case n.Outcome == Failed && errors.Is(n.Err, errQueueFull):
			full++
		case n.Outcome == Timeout:
			timedOut++
		default:
			t.Errorf("paused master: %v (%v)", n.Outcome, n.Err)
		}
		answered += r.Reachable()
	}
	// What may wait on the paused master: the queue, the pending list, and one call each
	// in the writer's and the reader's hands.
	if full == 0 || timedOut == 0 || timedOut > 2*4+2 {
		t.Errorf("paused master: %d calls failed fast on a full queue, %d waited; want both, at most %d waiting", full, timedOut, 2*4+2)
	}
	if answered == 0 {
		t.Error("the healthy masters answered nothing")
	}
}

// TestIdleConnectionAfterRestart: a master restarts while the client is idle; the next
// call is not failed by the dead connection (it is checked and replaced first).
func TestIdleConnectionAfterRestart(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	if res, err := c.Delete(ctx, "idle"); err != nil || res.Count(Absent) != 3 {
		t.Fatalf("Delete: %+v, %v", res, err)
	}
	servers[0].Restart(false)
	time.Sleep(idleCheck + 100*time.Millisecond)
	res, err := c.Delete(ctx, "idle")
	if err != nil || res.Count(Absent) != 3 {
		t.Fatalf("Delete after the idle restart: %+v, %v; want 3 absent", res, err)
	}
}
