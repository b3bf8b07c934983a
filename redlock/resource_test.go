package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestReservedResourceNames: names that would land on a fence counter (or no name at
// all) are refused by every entry point that takes a resource, before anything is sent,
// so a counter is never overwritten with a lock value nor deleted.
func TestReservedResourceNames(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithFencing())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "job", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	counter := FenceKey(c.Key("job"))
	// settled reads s's counter once it holds want: an acquisition returns at a quorum,
	// and a slow master's INCR may land after it. A master that missed it stays as it
	// was (a quorum is enough to acquire): after 2 s, what it holds is the answer.
	settled := func(s *redistest.Server, want string) string {
		v := s.Get(t, counter)
		for deadline := time.Now().Add(2 * time.Second); v != want && time.Now().Before(deadline); v = s.Get(t, counter) {
			time.Sleep(5 * time.Millisecond)
		}
		return v
	}
	// What each master's counter holds now; the refused calls must leave it as it is.
	before := map[string]string{}
	for _, s := range servers {
		before[s.Addr] = settled(s, "1")
	}
	for _, name := range []string{"job" + FenceSuffix, "", FenceSuffix} {
		calls := map[string]func() error{
			"acquire": func() error { _, err := c.Acquire(ctx, name, time.Second); return err },
			"do": func() error {
				return c.Do(ctx, name, time.Second, func(context.Context) error { return nil })
			},
			"extend-value":  func() error { _, err := c.ExtendValue(ctx, name, "v", time.Second); return err },
			"release-value": func() error { _, err := c.ReleaseValue(ctx, name, "v"); return err },
			"delete":        func() error { _, err := c.Delete(ctx, name); return err },
		}
		for op, call := range calls {
			err := call()
			if !errors.Is(err, ErrInvalidResource) {
				t.Errorf("%s %q: %v, want ErrInvalidResource", op, name, err)
				continue
			}
			if !strings.Contains(err.Error(), op) || !strings.Contains(err.Error(), `"`+name+`"`) {
				t.Errorf("%s %q: error %q does not name the operation and the resource", op, name, err)
			}
		}
	}
	for _, s := range servers {
		if v := s.Get(t, counter); v != before[s.Addr] {
			t.Errorf("%s: counter %s = %q after the refused calls, want %q as before them", s.Addr, counter, v, before[s.Addr])
		}
	}
	l, err = c.Acquire(ctx, "job", time.Second)
	if err != nil || l.Token() != 2 {
		t.Fatalf("job after the refused calls: %v, %v; want token 2", l, err)
	}
	held := settled(servers[0], "2")
	if held == "" {
		t.Fatalf("counter %s is missing on %s", counter, servers[0].Addr)
	}
	// A prefix that, with the resource, forms a counter's name is refused too.
	pc := newClient(t, redistest.Pools(servers), WithKeyPrefix("job:"))
	if _, err := pc.Delete(ctx, "fence"); !errors.Is(err, ErrInvalidResource) || !strings.Contains(err.Error(), counter) {
		t.Errorf("Delete of key %s through a prefix: %v, want ErrInvalidResource naming the key", counter, err)
	}
	if v := servers[0].Get(t, counter); v != held {
		t.Errorf("counter %s = %q after the refused Delete, want %q as before it", counter, v, held)
	}
}
