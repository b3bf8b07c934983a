package redlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Close sends what callers queued before it: the release of a failed acquisition and
// the stragglers of a Release that returned at quorum reach the masters, so a process
// that closes its client right after leaves no key behind. Repeated, because the
// queued command and Close race.
func TestCloseSendsWhatWasQueued(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	live := servers[0]
	pools := []*redis.Pool{live.Pool, deadPool(t), deadPool(t)}
	for i := 0; i < 20; i++ {
		c, err := New(pools, WithRetries(0), WithNodeTimeout(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("failed:%d", i)
		if _, err := c.Acquire(context.Background(), key, 10*time.Second); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("acquire with a quorum down: %v", err)
		}
		c.Close()
		if v := live.Get(t, key); v != "" {
			t.Fatalf("round %d: the failed acquisition's value %q is still on the live master after Close", i, v)
		}
	}
	all := redistest.Pools(servers)
	for i := 0; i < 20; i++ {
		c, err := New(all, WithRetries(0), WithNodeTimeout(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("released:%d", i)
		l, err := c.Acquire(context.Background(), key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		c.Close()
		for j, s := range servers {
			if v := s.Get(t, key); v != "" {
				t.Fatalf("round %d: master %d still holds %q after Release and Close", i, j, v)
			}
		}
	}
}
