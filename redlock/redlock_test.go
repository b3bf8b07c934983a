package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// newClient builds a client over pools with test-friendly defaults (one try, a node
// timeout generous enough for -race on two busy cores, no restart guard: the test
// servers have just started) and closes it at cleanup.
func newClient(t testing.TB, pools []*redis.Pool, opts ...Option) *Client {
	t.Helper()
	base := []Option{WithRetries(0), WithRetryDelay(5 * time.Millisecond), WithOwner("test:1"), WithNodeTimeout(200 * time.Millisecond), WithRestartGuard(0)}
	c, err := New(pools, append(base, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deadPool is a pool for a loopback address nothing listens on: a master that is down.
func deadPool(t testing.TB) *redis.Pool {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return &redis.Pool{Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second))
	}}
}

// holders counts the servers holding value at key.
func holders(t testing.TB, servers []*redistest.Server, key, value string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		if s.Get(t, key) == value {
			n++
		}
	}
	return n
}

func TestNewRejectsBadInput(t *testing.T) {
	p := deadPool(t)
	cases := []struct {
		name    string
		masters []*redis.Pool
		opts    []Option
		want    string
	}{
		{"no masters", nil, nil, "no masters"},
		{"nil pool", []*redis.Pool{p, nil}, nil, "master 1: nil pool"},
		{"same pool twice", []*redis.Pool{p, deadPool(t), p}, nil, "masters 0 and 2 are the same pool"},
		{"negative retries", []*redis.Pool{p}, []Option{WithRetries(-1)}, "WithRetries"},
		{"negative delay", []*redis.Pool{p}, []Option{WithRetryDelay(-time.Second)}, "WithRetryDelay"},
		{"drift too big", []*redis.Pool{p}, []Option{WithDriftFactor(0.5)}, "WithDriftFactor"},
		{"drift NaN", []*redis.Pool{p}, []Option{WithDriftFactor(nanFloat())}, "WithDriftFactor"},
		{"zero node timeout", []*redis.Pool{p}, []Option{WithNodeTimeout(0)}, "WithNodeTimeout"},
		{"empty owner", []*redis.Pool{p}, []Option{WithOwner("")}, "WithOwner"},
		{"owner with space", []*redis.Pool{p}, []Option{WithOwner("a b")}, "WithOwner"},
		{"negative max extensions", []*redis.Pool{p}, []Option{WithMaxExtensions(-1)}, "WithMaxExtensions"},
		{"zero conns", []*redis.Pool{p}, []Option{WithConnsPerMaster(0)}, "connections per master"},
	}
	for _, tc := range cases {
		c, err := New(tc.masters, tc.opts...)
		if err == nil {
			c.Close()
			t.Errorf("%s: New succeeded, want error containing %q", tc.name, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.want)
		}
	}
	c, err := New([]*redis.Pool{p, deadPool(t), deadPool(t)})
	if err != nil {
		t.Fatalf("valid New: %v", err)
	}
	defer c.Close()
	if c.Quorum() != 2 {
		t.Errorf("Quorum() = %d for 3 masters, want 2", c.Quorum())
	}
	ctx := context.Background()
	if _, err := c.Acquire(ctx, "", time.Second); err == nil {
		t.Error("Acquire with an empty resource succeeded")
	}
	if _, err := c.Acquire(ctx, "r", time.Millisecond); err == nil || !strings.Contains(err.Error(), "drift") {
		t.Errorf("Acquire with ttl below the drift allowance: err = %v", err)
	}
}

func nanFloat() float64 { z := 0.0; return z / z }

func TestParseValue(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 2)
	digits := strings.Repeat("1234567890", 3) + "12" // 32 digits: random part, not a token
	cases := []struct {
		v     string
		owner string
		token int64
		ok    bool
	}{
		{"host:12#" + hex, "host:12", 0, true},
		{"host:12#" + hex + "#42", "host:12", 42, true},
		{"a#b#" + hex + "#7", "a#b", 7, true},
		{"x#" + digits, "x", 0, true},
		{"#" + hex, "", 0, false},
		{hex, "", 0, false},
		{"o#" + strings.ToUpper(hex), "", 0, false},
		{"o#" + hex + "#0", "", 0, false},
		{"o#" + hex + "#-3", "", 0, false},
		{"o#" + hex + "#007", "", 0, false},
		{"o#" + hex + "#99999999999999999999", "", 0, false},
		{"o#" + hex[:31], "", 0, false},
		{"Zm9vYmFyYmF6cXV4", "", 0, false}, // redsync base64
		{"550e8400-e29b-41d4-a716-446655440000", "", 0, false},
		{"", "", 0, false},
		{"a#b#" + hex, "a#b", 0, true},
		{"o#" + hex + "#", "", 0, false},
		{"o#" + hex + "#x", "", 0, false},
		{"\x00\xff#" + hex, "\x00\xff", 0, true},
	}
	for _, tc := range cases {
		owner, token, ok := ParseValue(tc.v)
		if owner != tc.owner || token != tc.token || ok != tc.ok {
			t.Errorf("ParseValue(%q) = %q, %d, %v; want %q, %d, %v", tc.v, owner, token, ok, tc.owner, tc.token, tc.ok)
		}
	}
	v := newValue("me:1")
	if owner, token, ok := ParseValue(v); !ok || owner != "me:1" || token != 0 {
		t.Errorf("ParseValue(newValue) = %q, %d, %v", owner, token, ok)
	}
	if owner, token, ok := ParseValue(fencedValue(v, 12)); !ok || owner != "me:1" || token != 12 {
		t.Errorf("ParseValue(fencedValue) = %q, %d, %v", owner, token, ok)
	}
	if v == newValue("me:1") {
		t.Error("two values are equal")
	}
}

// TestQuorumMasks: with N masters of which any subset is up (the others refuse
// connections), Acquire succeeds iff at least N/2+1 are up, and the key lands exactly on
// the masters that are up.
func TestQuorumMasks(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 5, redistest.Options{})
	dead := []*redis.Pool{deadPool(t), deadPool(t), deadPool(t), deadPool(t), deadPool(t)}
	ctx := context.Background()
	for _, n := range []int{1, 3, 5} {
		for mask := 0; mask < 1<<n; mask++ {
			pools := make([]*redis.Pool, n)
			up := 0
			for i := range pools {
				if mask&(1<<i) != 0 {
					pools[i] = servers[i].Pool
					up++
				} else {
					pools[i] = dead[i]
				}
			}
			c := newClient(t, pools)
			resource := fmt.Sprintf("mask:%d:%d", n, mask)
			l, err := c.Acquire(ctx, resource, 5*time.Second)
			want := up >= n/2+1
			if (err == nil) != want {
				t.Fatalf("N=%d mask %0*b (%d up): Acquire err = %v, want success %v", n, n, mask, up, err, want)
			}
			if err != nil {
				var qe *QuorumError
				if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) {
					t.Fatalf("N=%d mask %b: error %v is not a *QuorumError wrapping ErrNotAcquired", n, mask, err)
				}
				for i, nr := range qe.Result.Nodes {
					wantOut := Failed
					if mask&(1<<i) != 0 {
						wantOut = OK
					}
					if nr.Outcome != wantOut {
						t.Errorf("N=%d mask %b: master %d outcome %v, want %v", n, mask, i, nr.Outcome, wantOut)
					}
				}
				// the failed attempt was released on the masters that took it
				waitFor(t, func() bool { return holders(t, servers[:n], c.Key(resource), "") == n },
					"N=%d mask %b: keys left behind after a failed acquire", n, mask)
				c.Close()
				continue
			}
			waitFor(t, func() bool { return holders(t, servers[:n], l.Key(), l.Value()) == up },
				"N=%d mask %b: value not on the %d masters that are up", n, mask, up)
			if err := c.Release(ctx, l); err != nil {
				t.Errorf("N=%d mask %b: Release: %v", n, mask, err)
			}
			c.Close()
		}
	}
}

// waitFor polls cond for up to 3 s (replies in flight, background releases).
func waitFor(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf(format, args...)
}
