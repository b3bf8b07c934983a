package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock"
)

// Five independent masters, a fenced lock held while a job runs, and the two errors a
// caller tells apart.
func Example() {
	var pools []*redis.Pool
	for _, addr := range []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"} {
		pools = append(pools, &redis.Pool{MaxIdle: 4, Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second))
		}})
	}
	c, err := redlock.New(pools, redlock.WithFencing(), redlock.WithOwner("billing-worker-1"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	err = c.Do(context.Background(), "billing:nightly", 30*time.Second, func(ctx context.Context) error {
		token := redlock.LockFrom(ctx).Token() // hand it to the storage the lock protects
		select {
		case <-ctx.Done(): // the lock was lost: stop writing now
			return ctx.Err()
		case <-time.After(time.Second): // the job
			fmt.Println("ran with token", token)
			return nil
		}
	})
	switch {
	case errors.Is(err, redlock.ErrNotAcquired):
		fmt.Println("someone else holds it:", err) // a *redlock.QuorumError says who answered what
	case errors.Is(err, redlock.ErrLockLost):
		fmt.Println("lost the lock while running:", err)
	case err != nil:
		fmt.Println("job failed:", err)
	}
}

// Acquire and Release by hand, checking how much validity is left before acting.
func ExampleClient_Acquire() {
	var pools []*redis.Pool // one per master
	c, err := redlock.New(pools)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "reports", 10*time.Second)
	if err != nil {
		var qe *redlock.QuorumError
		if errors.As(err, &qe) {
			fmt.Println(qe.Result.Count(redlock.Taken), "masters hold another value")
		}
		return
	}
	defer c.Release(ctx, l)
	if l.Validity() > time.Second {
		fmt.Println("holding", l.Resource(), "as", l.Value())
	}
	// Output: redlock: no masters given
}
