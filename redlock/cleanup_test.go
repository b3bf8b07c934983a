package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestFailedAcquireCleansUp: an Acquire fails with 2 of 5 masters saying OK, behind links
// that delay every request and every reply by 30 ms; the moment it returns, no live
// master holds the attempt's value any more (its release was answered before Acquire
// returned). Without that wait the release is still on the wire and the value visible.
// Plain: 2 of 5 masters up. Fenced: 3 up (a quorum reads the counters), one of them
// holding another value, so the write round fails.
func TestFailedAcquireCleansUp(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	live := make([]*redis.Pool, len(servers))
	for i, s := range servers {
		p := s.SlowProxy(30 * time.Millisecond)
		p.SetRequestDelay(30 * time.Millisecond)
		live[i] = p.Pool
	}
	for _, tc := range []struct {
		name  string
		pools []*redis.Pool
		opts  []Option
	}{
		{"plain", []*redis.Pool{live[0], live[1], deadPool(t), deadPool(t), deadPool(t)}, nil},
		{"fenced", []*redis.Pool{live[0], live[1], live[2], deadPool(t), deadPool(t)}, []Option{WithFencing()}},
	} {
		c := newClient(t, tc.pools, append([]Option{WithNodeTimeout(500 * time.Millisecond)}, tc.opts...)...)
		key := c.Key("cleanup-" + tc.name)
		if _, err := servers[2].Do("SET", key, "other#1", "PX", 60000); err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 3; round++ {
			_, err := c.Acquire(context.Background(), "cleanup-"+tc.name, 10*time.Second)
			var qe *QuorumError
			if !errors.As(err, &qe) || qe.Result.Count(OK) != 2 {
				t.Fatalf("%s: Acquire: %v, want ErrNotAcquired with 2 masters OK", tc.name, err)
			}
			for i, s := range servers[:2] {
				if v, err := s.Do("GET", key); err != nil || v != nil {
					t.Errorf("%s round %d: right after the failed Acquire master %d holds %q (err %v), want nothing", tc.name, round, i, v, err)
				}
			}
		}
	}
}
