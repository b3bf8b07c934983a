package redlock

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// hold is one holder's tenure on the local monotonic clock: from Acquire's return to the
// earlier of its deadline and the moment it decided to release.
type hold struct {
	who        int
	start, end time.Time
}

// TestContention: 32 contenders, each with its own Client and its own pools (so their
// commands race on separate connections to every master, as separate processes' would),
// take one resource in turns; no two tenures overlap, with all masters healthy and with
// one master paused, killed, or slow.
func TestContention(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name string
		// pool returns a new pool to master 0 for one contender
		apply func(t *testing.T, s []*redistest.Server) (pool func() *redis.Pool)
	}{
		{"healthy", func(t *testing.T, s []*redistest.Server) func() *redis.Pool { return nil }},
		{"paused", func(t *testing.T, s []*redistest.Server) func() *redis.Pool {
			s[0].Pause()
			t.Cleanup(s[0].Resume)
			return nil
		}},
		{"killed", func(t *testing.T, s []*redistest.Server) func() *redis.Pool { s[0].Kill(); return nil }},
		{"slow", func(t *testing.T, s []*redistest.Server) func() *redis.Pool {
			return func() *redis.Pool { return s[0].SlowProxy(20 * time.Millisecond).Pool }
		}},
	}
	const workers, rounds = 32, 3
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			servers := redistest.StartN(t, 5, redistest.Options{})
			first := f.apply(t, servers)
			clients := make([]*Client, workers)
			for w := range clients {
				pools := make([]*redis.Pool, len(servers))
				for i, s := range servers {
					pools[i] = s.NewPool("", "")
				}
				if first != nil {
					pools[0] = first()
				}
				// A generous node timeout: -race on two busy cores delays replies. Retries
				// are bounded by contend's context, not by a count: with random retry
				// delays one contender can lose many times in a row to 31 others.
				clients[w] = newClient(t, pools, WithRetries(1<<30), WithRetryDelay(10*time.Millisecond),
					WithNodeTimeout(250*time.Millisecond), WithOwner(fmt.Sprintf("w%d", w)))
			}
			holds := contend(t, clients, rounds)
			if len(holds) != workers*rounds {
				t.Fatalf("%d tenures recorded, want %d", len(holds), workers*rounds)
			}
			checkNoOverlap(t, holds)
		})
	}
}

// contend runs len(clients) × rounds acquire/hold/release cycles on one resource, one
// worker per client.
func contend(t *testing.T, clients []*Client, rounds int) []hold {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var holds []hold
	var wg sync.WaitGroup
	for w, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				l, err := c.Acquire(ctx, "contended", 2*time.Second)
				if err != nil {
					t.Errorf("worker %d round %d: %v", w, r, err)
					return
				}
				start := time.Now()
				time.Sleep(200 * time.Microsecond) // the critical section
				end := time.Now()
				if u := l.Until(); u.Before(end) {
					end = u
				}
				mu.Lock()
				holds = append(holds, hold{w, start, end})
				mu.Unlock()
				// A release none of whose replies came within the node timeout (the
				// whole machine paused: -race, every package's tests at once) is sent
				// again, as a client would: the compare-and-delete is idempotent. What
				// the test holds is that no two tenures overlap.
				err = c.Release(ctx, l)
				for try := 1; err != nil && try < 5 && ctx.Err() == nil; try++ {
					t.Logf("worker %d round %d: release, try %d: %v", w, r, try, err)
					time.Sleep(50 * time.Millisecond)
					err = c.Release(ctx, l)
				}
				if err != nil {
					t.Errorf("worker %d round %d: release: %v", w, r, err)
				}
			}
		}()
	}
	wg.Wait()
	return holds
}

func checkNoOverlap(t *testing.T, holds []hold) {
	t.Helper()
	sort.Slice(holds, func(i, j int) bool { return holds[i].start.Before(holds[j].start) })
	for i := 1; i < len(holds); i++ {
		prev, cur := holds[i-1], holds[i]
		if cur.start.Before(prev.end) {
			t.Errorf("tenures overlap: worker %d [%v, %v] and worker %d starting %v",
				prev.who, prev.start.Format("15:04:05.000000"), prev.end.Format("15:04:05.000000"),
				cur.who, cur.start.Format("15:04:05.000000"))
		}
	}
}
