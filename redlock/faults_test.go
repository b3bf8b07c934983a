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

// TestACLRefused: a user without script rights (or without write rights) gets a
// refused outcome naming each master and the Redis error, at once, not a hang.
func TestACLRefused(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{Users: []string{
		"noeval on >pw ~* +@all -@scripting",
		"readonly on >pw ~* +@read +ping",
	}})
	pools := func(user string) []*redis.Pool {
		p := make([]*redis.Pool, len(servers))
		for i, s := range servers {
			p[i] = s.NewPool(user, "pw")
		}
		return p
	}
	ctx := context.Background()

	c := newClient(t, pools("noeval"))
	l, err := c.Acquire(ctx, "acl", 5*time.Second) // SET is allowed
	if err != nil {
		t.Fatal(err)
	}
	err = c.Release(ctx, l)
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Result.Count(Refused) != 3 {
		t.Fatalf("Release without EVAL rights: %v, want 3 refused", err)
	}
	for i, nr := range qe.Result.Nodes {
		if nr.Master != i || nr.Err == nil || !strings.Contains(nr.Err.Error(), "NOPERM") {
			t.Errorf("master %d: %+v, want a NOPERM refusal", i, nr)
		}
	}
	if msg := err.Error(); !strings.Contains(msg, "master 2 refused") || !strings.Contains(msg, "NOPERM") {
		t.Errorf("error does not name the masters and the refusal: %s", msg)
	}
	res, err := c.ReleaseValue(ctx, "acl", l.Value())
	if err != nil || res.Count(Refused) != 3 {
		t.Errorf("ReleaseValue without EVAL rights: %+v, %v; want 3 refused, nil error", res, err)
	}

	ro := newClient(t, pools("readonly"), WithFencing())
	_, err = ro.Acquire(ctx, "acl2", time.Second)
	if !errors.As(err, &qe) || qe.Result.Count(Refused) != 3 || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("fenced Acquire without write rights: %v, want 3 refused", err)
	}
	ro2 := newClient(t, pools("readonly"))
	_, err = ro2.Acquire(ctx, "acl3", time.Second)
	if !errors.As(err, &qe) || qe.Result.Count(Refused) != 3 {
		t.Fatalf("Acquire without write rights: %v, want 3 refused", err)
	}
}

// TestSkewedClocks documents what the library can and cannot guarantee when masters'
// clocks run fast. Validity is computed from the TTL on the local monotonic clock; a
// master whose clock runs 2× fast expires the key in half the TTL, and the client cannot
// see that. With one fast master of three, the lock is still held by the other two (a
// second acquirer fails) while the holder's Validity says time is left. When a majority
// runs fast, the key is gone from a quorum while Validity still says the lock is held,
// and a second acquirer succeeds: two holders at once. Nothing in the protocol can
// detect this; the inspector measures each master's clock rate and reports it.
func TestSkewedClocks(t *testing.T) {
	t.Parallel()
	servers := []*redistest.Server{
		redistest.Start(t, redistest.Options{Skew: true}),
		redistest.Start(t, redistest.Options{Skew: true}),
		redistest.Start(t, redistest.Options{}),
	}
	servers[0].SetClock(0, 2)
	a := newClient(t, redistest.Pools(servers), WithOwner("a:1"))
	b := newClient(t, redistest.Pools(servers), WithOwner("b:1"))
	ctx := context.Background()
	ttl := 3 * time.Second
	l, err := a.Acquire(ctx, "skew", ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return holders(t, servers, l.Key(), l.Value()) == 3 }, "value not on all masters")
	waitFor(t, func() bool { return servers[0].Get(t, l.Key()) == "" }, "the fast master kept the key")
	if v := l.Validity(); v < ttl/4 {
		t.Fatalf("fast master expired the key early, but Validity is already %v", v)
	}
	if n := holders(t, servers[1:], l.Key(), l.Value()); n != 2 {
		t.Fatalf("normal masters hold the value on %d, want 2", n)
	}
	if _, err := b.Acquire(ctx, "skew", ttl); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("one fast master of three: a second acquirer got the lock (%v)", err)
	}
	// Now a majority runs fast: the key vanishes from a quorum, Validity cannot know.
	servers[1].SetClock(0, 20)
	waitFor(t, func() bool { return servers[1].Get(t, l.Key()) == "" }, "the second fast master kept the key")
	l2, err := b.Acquire(ctx, "skew", ttl)
	if err != nil {
		t.Fatalf("with a majority of fast masters the second acquirer failed too (%v): the test's premise changed", err)
	}
	if l.Validity() == 0 {
		t.Fatalf("the first holder's Validity already ran out; the overlap this test documents did not happen")
	}
	t.Logf("documented limit: %q still has %v of validity while %q holds the lock", l.Value(), l.Validity().Round(time.Millisecond), l2.Value())
}
