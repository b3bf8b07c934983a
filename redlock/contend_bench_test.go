package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// contendFigures is what one contention configuration produced.
type contendFigures struct {
	wins, calls, errs int64
	dur               time.Duration
}

// contendRun lets workers Clients (each with its own pools, as separate processes would
// have) call Acquire on one resource over and over for d; a winner releases at once.
func contendRun(addrs []string, workers int, d time.Duration, opts ...Option) contendFigures {
	clients := make([]*Client, workers)
	for w := range clients {
		c, err := New(benchPools(addrs), append([]Option{WithOwner(fmt.Sprintf("w%d", w))}, opts...)...)
		if err != nil {
			panic(err)
		}
		clients[w] = c
	}
	var wins, calls, errs atomic.Int64
	var recording atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := c.Acquire(ctx, "contend", benchTTL)
				rec := recording.Load()
				switch {
				case err == nil:
					c.Release(context.Background(), l)
					if rec {
						wins.Add(1)
					}
				case ctx.Err() != nil:
					return
				case !errors.Is(err, ErrNotAcquired):
					errs.Add(1)
				}
				if rec {
					calls.Add(1)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	recording.Store(true)
	t0 := time.Now()
	time.Sleep(d)
	recording.Store(false)
	f := contendFigures{dur: time.Since(t0)}
	cancel()
	wg.Wait()
	for _, c := range clients {
		c.Close()
	}
	f.wins, f.calls, f.errs = wins.Load(), calls.Load(), errs.Load()
	return f
}

// BenchmarkContend: 16 contenders on one resource over 5 masters. It reports wins/s
// (successful acquisitions, each released at once) in two configurations: "tight",
// every contender calling Acquire without retries in a loop, and "retry", Acquire
// retrying after a random delay in [0, 5ms) until it wins. A failed attempt's cost
// includes the cleanup of its value, so this is where a slower cleanup would show.
func BenchmarkContend(b *testing.B) {
	const workers = 16
	servers := redistest.StartN(b, 5, redistest.Options{})
	addrs := redistest.Addrs(servers)
	for i := 0; i < b.N; i++ {
		tight := contendRun(addrs, workers, benchPhase, WithRetries(0))
		retry := contendRun(addrs, workers, benchPhase, WithRetries(1<<30), WithRetryDelay(5*time.Millisecond))
		b.StopTimer()
		for name, f := range map[string]contendFigures{"tight": tight, "retry": retry} {
			if f.errs > 0 {
				b.Errorf("%s: %d Acquire calls failed with an error other than ErrNotAcquired", name, f.errs)
			}
			b.ReportMetric(float64(f.wins)/f.dur.Seconds(), name+"_wins/s")
			b.ReportMetric(float64(f.calls)/f.dur.Seconds(), name+"_calls/s")
		}
		if retry.wins == 0 {
			b.Errorf("retry: no contender ever won")
		}
		b.Logf("\n%d contenders, one resource, 5 masters   %10s %10s", workers, "wins/s", "calls/s")
		b.Logf("tight loop, no retries                  %10.0f %10.0f", float64(tight.wins)/tight.dur.Seconds(), float64(tight.calls)/tight.dur.Seconds())
		b.Logf("retries after [0, 5ms)                  %10.0f %10.0f", float64(retry.wins)/retry.dur.Seconds(), float64(retry.calls)/retry.dur.Seconds())
		b.StartTimer()
	}
}
