package redlock

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// One benchmark iteration is a complete, bounded measurement, so `-benchtime 1x` prints
// meaningful figures. Every figure is printed next to a baseline measured in the same run
// on the same five local masters.

const (
	benchPhase  = 1500 * time.Millisecond // measured time per configuration
	benchWarmup = 200 * time.Millisecond
	benchTTL    = 10 * time.Second
)

// benchPools returns fresh pools with room for 128 idle connections per master, so the
// one-command-per-connection baseline is not slowed by dialing.
func benchPools(addrs []string) []*redis.Pool {
	pools := make([]*redis.Pool, len(addrs))
	for i, addr := range addrs {
		pools[i] = &redis.Pool{MaxIdle: 128, Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
		}}
	}
	return pools
}

// baselineCycle is the raw redigo cycle: SET NX PX on all masters fanned out (one
// goroutine and one connection per command), then compare-and-delete on all. No quorum
// logic, no timeouts beyond the connection's.
func baselineCycle(pools []*redis.Pool, release *redis.Script, key string) error {
	value := newValue("bench:1")
	var wg sync.WaitGroup
	var ok atomic.Int32
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := p.Get()
			defer conn.Close()
			if r, err := redis.String(conn.Do("SET", key, value, "NX", "PX", benchTTL.Milliseconds())); err == nil && r == "OK" {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := p.Get()
			defer conn.Close()
			release.Do(conn, key, value)
		}()
	}
	wg.Wait()
	if int(ok.Load()) < len(pools)/2+1 {
		return fmt.Errorf("baseline: %d/%d SETs succeeded", ok.Load(), len(pools))
	}
	return nil
}

func libraryCycle(c *Client, key string) error {
	ctx := context.Background()
	l, err := c.Acquire(ctx, key, benchTTL)
	if err != nil {
		return err
	}
	return c.Release(ctx, l)
}

// figures of one configuration.
type figures struct {
	ops      float64 // cycles per second
	p50, p99 time.Duration
	errs     int64
}

// measure runs cycle on workers goroutines (each with its own key) for benchPhase after a
// warm-up and returns throughput and latency percentiles of whole cycles.
func measure(workers int, cycle func(key string) error) figures {
	var wg sync.WaitGroup
	var errs atomic.Int64
	lat := make([][]time.Duration, workers)
	start := time.Now()
	measureFrom := start.Add(benchWarmup)
	stop := measureFrom.Add(benchPhase)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("bench:%d", w)
			for {
				t0 := time.Now()
				if t0.After(stop) {
					return
				}
				err := cycle(key)
				if t0.Before(measureFrom) {
					continue
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	f := figures{ops: float64(len(all)) / benchPhase.Seconds(), errs: errs.Load()}
	if len(all) > 0 {
		f.p50 = all[len(all)/2]
		f.p99 = all[min(len(all)-1, int(math.Ceil(float64(len(all))*0.99))-1)]
	}
	return f
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkCycle compares acquire+release cycles of the library with the raw baseline at
// c=1 and c=64. Targets: c=1 cycle cost within 1.1× of the baseline; c=64 throughput at
// least 4× the baseline's.
func BenchmarkCycle(b *testing.B) {
	servers := redistest.StartN(b, 5, redistest.Options{})
	addrs := redistest.Addrs(servers)
	release := redis.NewScript(1, releaseScript.src)
	for i := 0; i < b.N; i++ {
		basePools := benchPools(addrs)
		c, err := New(benchPools(addrs), WithRetries(0))
		if err != nil {
			b.Fatal(err)
		}
		base := func(key string) error { return baselineCycle(basePools, release, key) }
		lib := func(key string) error { return libraryCycle(c, key) }
		res := map[string]figures{}
		for _, conc := range []int{1, 64} {
			res[fmt.Sprintf("c%d_base", conc)] = measure(conc, base)
			res[fmt.Sprintf("c%d_lib", conc)] = measure(conc, lib)
		}
		c.Close()
		for _, p := range basePools {
			p.Close()
		}
		b.StopTimer()
		for _, name := range []string{"c1_base", "c1_lib", "c64_base", "c64_lib"} {
			f := res[name]
			if f.errs > 0 {
				b.Errorf("%s: %d failed cycles", name, f.errs)
			}
			b.ReportMetric(f.ops, name+"_ops/s")
			b.ReportMetric(ms(f.p50), name+"_p50_ms")
			b.ReportMetric(ms(f.p99), name+"_p99_ms")
		}
		c1Cost := res["c1_base"].ops / res["c1_lib"].ops // library cycle cost / baseline cycle cost
		c64Speedup := res["c64_lib"].ops / res["c64_base"].ops
		b.ReportMetric(c1Cost, "c1_cost_ratio")
		b.ReportMetric(c64Speedup, "c64_speedup")
		b.Logf("\n%-10s %12s %9s %9s\n", "config", "cycles/s", "p50", "p99")
		for _, name := range []string{"c1_base", "c1_lib", "c64_base", "c64_lib"} {
			f := res[name]
			b.Logf("%-10s %12.0f %9v %9v", name, f.ops, f.p50.Round(time.Microsecond), f.p99.Round(time.Microsecond))
		}
		b.Logf("c=1 cycle cost library/baseline = %.2f× (target <= 1.10×); c=64 throughput library/baseline = %.2f× (target >= 4×)", c1Cost, c64Speedup)
		b.StartTimer()
	}
}

// BenchmarkPausedMaster runs 16 concurrent acquire/release loops while one of five
// masters is stopped (SIGSTOP) for 2 s. It reports the worst Acquire latency against the
// bound of 3 node timeouts, and the goroutine count before, during (peak) and after.
func BenchmarkPausedMaster(b *testing.B) {
	for i := 0; i < b.N; i++ {
		servers := redistest.StartN(b, 5, redistest.Options{})
		c, err := New(benchPools(redistest.Addrs(servers)), WithRetries(0))
		if err != nil {
			b.Fatal(err)
		}
		var worst atomic.Int64
		var cycles, failures atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				key := fmt.Sprintf("paused:%d", w)
				for {
					select {
					case <-stop:
						return
					default:
					}
					t0 := time.Now()
					l, err := c.Acquire(ctx, key, benchTTL)
					d := int64(time.Since(t0))
					for {
						cur := worst.Load()
						if d <= cur || worst.CompareAndSwap(cur, d) {
							break
						}
					}
					if err != nil {
						failures.Add(1)
						continue
					}
					cycles.Add(1)
					c.Release(ctx, l)
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		before := runtime.NumGoroutine()
		worst.Store(0)
		servers[0].Pause()
		peak := 0
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			peak = max(peak, runtime.NumGoroutine())
		}
		servers[0].Resume()
		time.Sleep(500 * time.Millisecond)
		after := runtime.NumGoroutine()
		close(stop)
		wg.Wait()
		c.Close()
		w := time.Duration(worst.Load())
		bound := 3 * DefaultNodeTimeout
		b.ReportMetric(ms(w), "worst_acquire_ms")
		b.ReportMetric(ms(bound), "bound_ms")
		b.ReportMetric(float64(w)/float64(bound), "worst/bound")
		b.ReportMetric(float64(before), "goroutines_before")
		b.ReportMetric(float64(peak), "goroutines_peak")
		b.ReportMetric(float64(after), "goroutines_after")
		b.Logf("one master paused 2s under 16 concurrent loops: worst Acquire %v (bound 3×node timeout = %v, ratio %.2f); goroutines before %d, peak during %d, after %d; %d cycles, %d failed acquires",
			w.Round(time.Microsecond), bound, float64(w)/float64(bound), before, peak, after, cycles.Load(), failures.Load())
		if failures.Load() > 0 {
			b.Errorf("%d acquires failed with 4 of 5 masters up", failures.Load())
		}
	}
}
