package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestFencingTokensIncrease: 200 sequential holders get strictly increasing tokens while
// a minority of masters goes down and comes back (with its AOF, so counters survive).
func TestFencingTokensIncrease(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 5, redistest.Options{AOF: true})
	c := newClient(t, redistest.Pools(servers), WithFencing(), WithRetries(20))
	ctx := context.Background()
	var last int64
	for i := 0; i < 200; i++ {
		switch i {
		case 40:
			servers[0].Kill()
		case 60:
			servers[1].Kill()
		case 100:
			servers[0].Restart(true)
		case 120:
			servers[1].Restart(true)
		case 150:
			servers[4].Pause()
		case 170:
			servers[4].Resume()
		}
		l, err := c.Acquire(ctx, "fenced", 5*time.Second)
		if err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("holder %d: token %d not above the previous %d", i, l.Token(), last)
		}
		if owner, token, ok := ParseValue(l.Value()); !ok || token != l.Token() || owner != "test:1" {
			t.Fatalf("holder %d: value %q does not carry its token %d", i, l.Value(), l.Token())
		}
		last = l.Token()
		if err := c.Release(ctx, l); err != nil {
			t.Fatalf("holder %d: release: %v", i, err)
		}
	}
	for _, s := range servers {
		n, err := redis.Int64(s.Do("GET", FenceKey(c.Key("fenced"))))
		if err != nil || n > last {
			t.Errorf("%s: fence counter %d (%v), last token %d", s.Addr, n, err, last)
		}
	}
}

// TestFencingStaleCounter: acquirers that computed their token from the same (possibly
// stale) counter read never both succeed, and a token at or below a stored counter is
// refused everywhere.
func TestFencingStaleCounter(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithFencing())
	ctx := context.Background()
	key := c.Key("stale")
	for round := 0; round < 20; round++ {
		var maxStored int64
		for _, s := range servers {
			n, _ := redis.Int64(s.Do("GET", FenceKey(key)))
			maxStored = max(maxStored, n)
		}
		token := maxStored + 1
		var wg sync.WaitGroup
		locks := make([]*Lock, 2)
		for i := range locks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var seen int64
				locks[i], _ = c.writeFenced(ctx, time.Now(), "stale", key, time.Second, token, &seen)
			}()
		}
		wg.Wait()
		won := 0
		for _, l := range locks {
			if l != nil {
				won++
				c.Release(ctx, l)
			}
		}
		if won > 1 {
			t.Fatalf("round %d: both acquirers with token %d succeeded", round, token)
		}
		// The same token again, after the winner released: stale now, refused by all.
		var seen int64
		if l, qe := c.writeFenced(ctx, time.Now(), "stale", key, time.Second, token, &seen); l != nil || qe.Result.Count(Taken) != 3 {
			t.Fatalf("round %d: stale token %d: lock %v, %v", round, token, l, qe)
		} else if won == 1 && seen != token {
			t.Fatalf("round %d: refusal reported counter %d, want %d", round, seen, token)
		}
	}
}

// TestFencingRetryUsesRefusedCounters: when the read round saw stale counters, the
// refusals carry the real counter and the next attempt goes above it.
func TestFencingRetryUsesRefusedCounters(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithFencing(), WithRetries(3), WithRetryDelay(0))
	key := c.Key("jump")
	// Masters 1 and 2 (a quorum) store 500; a read quorum always includes one of them.
	for _, s := range servers[1:] {
		if _, err := s.Do("SET", FenceKey(key), strconv.Itoa(500)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Acquire(context.Background(), "jump", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= 500 {
		t.Errorf("token %d not above the stored counter 500", l.Token())
	}
	var seen int64 = 0
	// A writer that starts from a stale counter of 7 is refused and learns the real one.
	if l2, qe := c.writeFenced(context.Background(), time.Now(), "jump", key, time.Second, 8, &seen); l2 != nil {
		t.Fatalf("stale token 8 acquired a held lock: %v", qe)
	}
	if seen < 500 {
		t.Errorf("refusals reported counter %d, want >= 500", seen)
	}
}

// TestFencingSameStaleRead: two real clients are held between the read and the write
// round until both have read the counters, so they compute the same token; either both
// write at once, or one completes a whole acquisition and release before the other
// writes its now-stale token. Never both succeed, and the tokens of the acquisitions
// that succeeded strictly increase.
func TestFencingSameStaleRead(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	ctx := context.Background()
	clients := make([]*Client, 2)
	for i := range clients {
		pools := make([]*redis.Pool, len(servers))
		for j, s := range servers {
			pools[j] = s.NewPool("", "")
		}
		clients[i] = newClient(t, pools, WithFencing(), WithOwner(fmt.Sprintf("c%d", i)))
	}
	var last int64
	for round := 0; round < 20; round++ {
		sequential := round%2 == 1
		tokens := make([]int64, 2)
		var read sync.WaitGroup
		read.Add(2)
		firstDone := make(chan struct{})
		for i, c := range clients {
			c.afterRead = func(token int64) {
				tokens[i] = token
				read.Done()
				read.Wait() // both have read before either writes
				if sequential && i == 1 {
					<-firstDone // client 0 acquired and released meanwhile
				}
			}
		}
		locks := make([]*Lock, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				locks[i], errs[i] = c.Acquire(ctx, "same", time.Second)
				if sequential && i == 0 {
					if locks[0] != nil {
						c.Release(ctx, locks[0])
					}
					close(firstDone)
				}
			}()
		}
		wg.Wait()
		if tokens[0] != tokens[1] {
			t.Fatalf("round %d: the clients read different counters (%d, %d)", round, tokens[0], tokens[1])
		}
		won := 0
		for i, l := range locks {
			if l == nil {
				if !errors.Is(errs[i], ErrNotAcquired) {
					t.Fatalf("round %d: client %d: %v", round, i, errs[i])
				}
				continue
			}
			won++
			if l.Token() <= last {
				t.Fatalf("round %d: token %d not above the previous %d", round, l.Token(), last)
			}
			last = l.Token()
			clients[i].Release(ctx, l)
		}
		// Let writes still in flight land, so that both clients read the same counters.
		key := FenceKey(clients[0].Key("same"))
		waitFor(t, func() bool {
			for _, s := range servers {
				if n, _ := redis.Int64(s.Do("GET", key)); n != tokens[0] {
					return false
				}
			}
			return true
		}, "fence counters not all at %d", tokens[0])
		if won > 1 {
			t.Fatalf("round %d: both clients acquired with token %d", round, tokens[0])
		}
		if sequential && (locks[0] == nil || locks[1] != nil) {
			t.Fatalf("round %d: the first writer should win and the stale second be refused: %v, %v", round, errs[0], errs[1])
		}
		if sequential {
			var qe *QuorumError
			if !errors.As(errs[1], &qe) || qe.Result.Count(Taken) < 2 {
				t.Fatalf("round %d: stale token %d: %v, want refused by a quorum", round, tokens[1], errs[1])
			}
		}
	}
	if last == 0 {
		t.Fatal("no acquisition succeeded")
	}
}
