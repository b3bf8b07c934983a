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
	benchPhase  = 1600 * time.Millisecond // measured time per configuration
	benchSlices = 4                       // alternating slices per configuration
	benchWarmup = 50 * time.Millisecond   // per slice
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
	value, err := baselineSet(pools, key)
	baselineRelease(pools, release, key, value)
	return err
}

// baselineSet sends SET NX PX to every master at once and waits for all of them.
func baselineSet(pools []*redis.Pool, key string) (string, error) {
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
	if int(ok.Load()) < len(pools)/2+1 {
		return value, fmt.Errorf("baseline: %d/%d SETs succeeded", ok.Load(), len(pools))
	}
	return value, nil
}

// baselineRelease runs the compare-and-delete script on every master at once.
func baselineRelease(pools []*redis.Pool, release *redis.Script, key, value string) {
	var wg sync.WaitGroup
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

// sample is what one measured slice of one configuration produced.
type sample struct {
	lat  []time.Duration
	errs int64
	dur  time.Duration
}

func (s *sample) add(o sample) {
	s.lat = append(s.lat, o.lat...)
	s.errs += o.errs
	s.dur += o.dur
}

func (s sample) figures() figures {
	slices.Sort(s.lat)
	f := figures{ops: float64(len(s.lat)) / s.dur.Seconds(), errs: s.errs}
	if n := len(s.lat); n > 0 {
		f.p50 = s.lat[n/2]
		f.p99 = s.lat[min(n-1, int(math.Ceil(float64(n)*0.99))-1)]
	}
	return f
}

// measure runs cycle on workers goroutines (each with its own key) for d after a short
// warm-up and records the latency of every whole cycle.
func measure(workers int, d time.Duration, cycle func(key string) error) sample {
	var wg sync.WaitGroup
	var errs atomic.Int64
	lat := make([][]time.Duration, workers)
	measureFrom := time.Now().Add(benchWarmup)
	stop := measureFrom.Add(d)
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
	return sample{lat: slices.Concat(lat...), errs: errs.Load(), dur: d}
}

// measureBoth measures a and b with 1 and with 64 goroutines, alternating in short
// slices so that load from elsewhere on the machine weighs on both alike. The figures
// are keyed "c<goroutines>_<name>".
func measureBoth(a, b func(key string) error, aName, bName string) map[string]figures {
	res := map[string]figures{}
	for _, conc := range []int{1, 64} {
		var sa, sb sample
		for range benchSlices {
			sa.add(measure(conc, benchPhase/benchSlices, a))
			sb.add(measure(conc, benchPhase/benchSlices, b))
		}
		res[fmt.Sprintf("c%d_%s", conc, aName)] = sa.figures()
		res[fmt.Sprintf("c%d_%s", conc, bName)] = sb.figures()
	}
	return res
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
		res := measureBoth(base, lib, "base", "lib")
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

// pausedRun runs 16 concurrent loops of acquire (timed) and release while servers[0] is
// stopped for 2 s, and reports the worst acquire latency and the goroutine counts.
type pausedFigures struct {
	worst               time.Duration
	before, peak, after int
	cycles, failures    int64
}

func pausedRun(servers []*redistest.Server, acquire func(key string) (release func(), err error)) pausedFigures {
	var worst atomic.Int64
	var cycles, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("paused:%d", w)
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				release, err := acquire(key)
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
				release()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	var f pausedFigures
	f.before = runtime.NumGoroutine()
	worst.Store(0)
	servers[0].Pause()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		f.peak = max(f.peak, runtime.NumGoroutine())
	}
	servers[0].Resume()
	time.Sleep(500 * time.Millisecond)
	f.after = runtime.NumGoroutine()
	close(stop)
	wg.Wait()
	f.worst = time.Duration(worst.Load())
	f.cycles, f.failures = cycles.Load(), failures.Load()
	return f
}

// BenchmarkPausedMaster runs 16 concurrent acquire/release loops while one of five
// masters is stopped (SIGSTOP) for 2 s, first with the library, then with the raw
// baseline (whose connection read timeout is 2 s). It reports the worst acquire latency
// against the bound of 3 node timeouts, and the goroutine count before, during (peak)
// and after the pause.
func BenchmarkPausedMaster(b *testing.B) {
	for i := 0; i < b.N; i++ {
		servers := redistest.StartN(b, 5, redistest.Options{})
		c, err := New(benchPools(redistest.Addrs(servers)), WithRetries(0))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		lib := pausedRun(servers, func(key string) (func(), error) {
			l, err := c.Acquire(ctx, key, benchTTL)
			return func() { c.Release(ctx, l) }, err
		})
		c.Close()
		basePools := benchPools(redistest.Addrs(servers))
		release := redis.NewScript(1, releaseScript.src)
		base := pausedRun(servers, func(key string) (func(), error) {
			value, err := baselineSet(basePools, key)
			return func() { baselineRelease(basePools, release, key, value) }, err
		})
		for _, p := range basePools {
			p.Close()
		}
		bound := 3 * DefaultNodeTimeout
		b.ReportMetric(ms(lib.worst), "lib_worst_acquire_ms")
		b.ReportMetric(ms(base.worst), "base_worst_acquire_ms")
		b.ReportMetric(ms(bound), "bound_ms")
		b.ReportMetric(float64(lib.worst)/float64(bound), "lib_worst/bound")
		b.ReportMetric(float64(lib.before), "lib_goroutines_before")
		b.ReportMetric(float64(lib.peak), "lib_goroutines_peak")
		b.ReportMetric(float64(lib.after), "lib_goroutines_after")
		b.ReportMetric(float64(base.peak), "base_goroutines_peak")
		b.Logf("\none master paused 2s, 16 loops  %14s %14s %24s %10s", "worst acquire", "3×node timeout", "goroutines before/peak/after", "cycles")
		b.Logf("library                         %14v %14v %24s %10d", lib.worst.Round(time.Microsecond), bound,
			fmt.Sprintf("%d/%d/%d", lib.before, lib.peak, lib.after), lib.cycles)
		b.Logf("baseline                        %14v %14s %24s %10d", base.worst.Round(time.Microsecond), "-",
			fmt.Sprintf("%d/%d/%d", base.before, base.peak, base.after), base.cycles)
		b.Logf("library worst acquire / bound = %.2f (target <= 1)", float64(lib.worst)/float64(bound))
		if lib.failures > 0 {
			b.Errorf("%d library acquires failed with 4 of 5 masters up", lib.failures)
		}
	}
}
