package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestExtendCancelledKeepsNoLongerDeadline: when the context ends while Extend waits,
// the new TTL may already be in force on some masters; with a shorter new TTL the lock's
// deadline must drop to what those masters honour.
func TestExtendCancelledKeepsNoLongerDeadline(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithNodeTimeout(2*time.Second))
	l, err := c.Acquire(context.Background(), "shrink", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return holders(t, servers, l.Key(), l.Value()) == 3 }, "value not on all masters")
	servers[1].Pause()
	servers[2].Pause()
	defer servers[2].Resume()
	defer servers[1].Resume()
	ttl := 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.Extend(ctx, l, ttl)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Extend with two masters paused: %v, want the context's error", err)
	}
	if d := pttl(t, servers[0], l.Key()); d > ttl {
		t.Fatalf("master 0 PTTL %v: the shorter TTL did not land", d)
	}
	if v := l.Validity(); v == 0 || v > ttl-c.drift(ttl) {
		t.Errorf("Validity %v after a cancelled Extend to %v: want (0, %v]", v, ttl, ttl-c.drift(ttl))
	}
	// A longer TTL that may have landed never lengthens the deadline.
	until := l.Until()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := c.Extend(ctx2, l, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Extend: %v, want the context's error", err)
	}
	if u := l.Until(); u.After(until) {
		t.Errorf("a cancelled Extend to 1m moved the deadline from %v to %v", until, u)
	}
}

// TestSubMillisecondTTL: PX carries whole milliseconds, so deadlines are computed from
// the truncated TTL (the drift margin is not eaten), and a TTL that truncates to nothing
// usable is refused.
func TestSubMillisecondTTL(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	plain := newClient(t, redistest.Pools(servers), WithDriftFactor(0))
	fenced := newClient(t, redistest.Pools(servers), WithDriftFactor(0), WithFencing())
	ctx := context.Background()
	ttl := 2*time.Second + 999*time.Microsecond
	sent := 2 * time.Second
	// Until - before = (t0 - before) + sent - drift: t0 follows before within microseconds;
	// the smallest of a few tries is compared, so one preemption cannot decide.
	check := func(name string, run func() (time.Time, error)) {
		best := time.Duration(1<<63 - 1)
		for i := 0; i < 5; i++ {
			before := time.Now()
			until, err := run()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			best = min(best, until.Sub(before))
		}
		if best <= 0 {
			t.Fatalf("%s: deadline %v after the call began", name, best)
		}
		if limit := sent - plain.drift(sent) + 500*time.Microsecond; best > limit {
			t.Errorf("%s with ttl %v (PX %d): deadline %v after the call began, want at most %v",
				name, ttl, sent.Milliseconds(), best, limit)
		}
	}
	for _, c := range []*Client{plain, fenced} {
		name := "acquire"
		if c == fenced {
			name = "fenced acquire"
		}
		check(name, func() (time.Time, error) {
			l, err := c.Acquire(ctx, "subms", ttl)
			if err != nil {
				return time.Time{}, err
			}
			return l.Until(), c.Release(ctx, l)
		})
	}
	l, err := plain.Acquire(ctx, "subms-ext", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	check("extend", func() (time.Time, error) {
		err := plain.Extend(ctx, l, ttl)
		return l.Until(), err
	})

	// 2.999ms truncates to 2ms, which does not exceed the 2ms drift allowance.
	if _, err := plain.Acquire(ctx, "tiny", 2*time.Millisecond+999*time.Microsecond); err == nil || !strings.Contains(err.Error(), "drift") {
		t.Errorf("Acquire with 2.999ms ttl and 2ms drift: %v, want a drift error", err)
	}
	if err := plain.Extend(ctx, l, 2*time.Millisecond+999*time.Microsecond); err == nil || !strings.Contains(err.Error(), "drift") {
		t.Errorf("Extend with 2.999ms ttl and 2ms drift: %v, want a drift error", err)
	}
	for _, bad := range []time.Duration{999 * time.Microsecond, 0, -time.Second} {
		if _, err := plain.Acquire(ctx, "tiny", bad); err == nil {
			t.Errorf("Acquire with ttl %v succeeded", bad)
		}
		if _, err := plain.ExtendValue(ctx, "tiny", "v", bad); err == nil {
			t.Errorf("ExtendValue with ttl %v succeeded", bad)
		}
	}
}

// TestNoScriptRetryKeepsOrder: a script call answered NOSCRIPT after its operation ended
// is not retried behind commands issued later on the same key: an ExtendValue that gave
// up must not execute after the Delete that followed it.
func TestNoScriptRetryKeepsOrder(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	proxy := s.SlowProxy(0)
	c := newClient(t, []*redis.Pool{proxy.Pool}, WithNodeTimeout(50*time.Millisecond))
	ctx := context.Background()
	// Connect first. The node timeout is short for this test's sake: on a loaded
	// machine the first call may miss it while it dials, so it is tried again.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := c.Delete(ctx, "order")
		if err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal(err)
		}
	}
	key := c.Key("order")
	if _, err := s.Do("SET", key, "v", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	mon, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	if _, err := mon.Do("MONITOR"); err != nil {
		t.Fatal(err)
	}
	proxy.SetDelay(200 * time.Millisecond) // replies come after the operations gave up
	res, _ := c.ExtendValue(ctx, "order", "v", 10*time.Minute)
	if res.Count(Timeout) != 1 {
		t.Fatalf("ExtendValue through a slow link: %+v, want a timeout", res)
	}
	if res, _ := c.Delete(ctx, "order"); res.Count(Timeout) != 1 {
		t.Fatalf("Delete through a slow link: %+v, want a timeout", res)
	}
	// The EVALSHA's NOSCRIPT reaches the client ~200ms late; a retry would be sent then.
	time.Sleep(time.Second)
	if _, err := s.Do("ECHO", "end-of-order-test"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	delSeen := false
	for {
		line, err := redis.String(mon.Receive())
		if err != nil {
			t.Fatalf("MONITOR: %v (seen %q)", err, seen)
		}
		seen = append(seen, line)
		switch {
		case strings.Contains(line, "end-of-order-test"):
			if !delSeen {
				t.Fatalf("no DEL seen: %q", seen)
			}
			return
		case strings.Contains(line, `"DEL"`):
			delSeen = true
		case strings.Contains(line, `"EVAL`) && delSeen:
			t.Fatalf("a script call executed after the DEL issued after it: %q", seen)
		}
	}
}
