package poll

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

const (
	benchMasters = 5
	benchKeys    = 100_000
	benchRounds  = 3
)

// BenchmarkPoll measures one full poll of 5 masters × 100k lock keys against a plain
// SCAN of the same keys in the same run (the floor any inspector pays), and reports the
// ratio, heap bytes per key per master and commands per key per poll.
func BenchmarkPoll(b *testing.B) {
	ms, cfg, pools := benchFleet(b)
	scanAll(b, pools) // warm up connections and the servers

	var scanD, pollD time.Duration
	var peak, retained uint64
	var cmdsPerKey float64
	b.ResetTimer()
	for range b.N {
		// Best of three, interleaved, for both: the machine is shared, and the
		// fastest run of each is the one least disturbed.
		scanD, pollD = time.Hour, time.Hour
		for range benchRounds {
			// Baseline: a plain SCAN of every key on every master, concurrently.
			start := time.Now()
			if n := scanAll(b, pools); n != benchMasters*benchKeys {
				b.Fatalf("SCAN saw %d keys", n)
			}
			scanD = min(scanD, time.Since(start))

			// The full poll, counted by the servers' commandstats.
			for _, m := range ms {
				if _, err := m.Do("CONFIG", "RESETSTAT"); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			start = time.Now()
			s := NewPoller(cfg, pools).Poll(context.Background())
			pollD = min(pollD, time.Since(start))
			if !s.Complete || len(s.Resources) != benchKeys || s.Summary.Held != benchKeys {
				b.Fatalf("poll: complete %v, %d rows, %d held", s.Complete, len(s.Resources), s.Summary.Held)
			}
			var calls int64
			for _, m := range ms {
				calls += commandCalls(b, m)
			}
			cmdsPerKey = float64(calls) / float64(benchMasters*benchKeys)
		}
		// Heap: peak while polling, and what the snapshot keeps, per key per master.
		peak, retained = pollHeap(cfg, pools)
	}
	b.StopTimer()
	perKey := float64(benchMasters * benchKeys)
	ratio := pollD.Seconds() / scanD.Seconds()
	b.ReportMetric(scanD.Seconds(), "scan-s")
	b.ReportMetric(pollD.Seconds(), "poll-s")
	b.ReportMetric(ratio, "poll/scan")
	b.ReportMetric(float64(peak)/perKey, "peak-heap-B/key")
	b.ReportMetric(float64(retained)/perKey, "kept-heap-B/key")
	b.ReportMetric(cmdsPerKey, "cmds/key")
	b.Logf("%d masters × %d keys: plain SCAN %v, full poll %v (best of %d each), ratio %.2f× (target ≤ 2.5×); heap %.0f B/key/master at peak, %.0f kept (target ≤ 200); %.3f commands/key/poll (target ≤ 2)",
		benchMasters, benchKeys, scanD.Round(time.Millisecond), pollD.Round(time.Millisecond), benchRounds, ratio,
		float64(peak)/perKey, float64(retained)/perKey, cmdsPerKey)
}

// plant writes n lock keys "lock:job:"+i (see redistest.PlantLocks); it may run
// in its own goroutine, so it reports failures with Error.
// benchFleet starts benchMasters masters with benchKeys lock keys each, and a config
// and pools that read them whole.
func benchFleet(b *testing.B) ([]*redistest.Server, *config.Config, []*redis.Pool) {
	ms := redistest.StartN(b, benchMasters, redistest.Options{})
	start := time.Now()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { plant(b, m.Pool, benchKeys) })
	}
	wg.Wait()
	b.Logf("planted %d keys on each of %d masters in %v", benchKeys, benchMasters, time.Since(start).Round(time.Millisecond))
	cfg := testConfig(b, ms, func(c *config.Config) {
		c.Inspect.Timeout = 2 * time.Minute
		c.Inspect.MaxKeys = 2 * benchKeys
	})
	pools, err := cfg.Pools()
	if err != nil {
		b.Fatal(err)
	}
	return ms, cfg, pools
}

func plant(b *testing.B, pool *redis.Pool, n int) {
	if err := redistest.PlantLocks(pool, "lock:job:", n, 10*time.Minute); err != nil {
		b.Error(err)
	}
}

// scanAll SCANs every key on every master concurrently and returns how many it saw.
func scanAll(b *testing.B, pools []*redis.Pool) int {
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := p.Get()
			defer c.Close()
			var keys []string
			for cursor := "0"; ; {
				r, err := redis.Values(c.Do("SCAN", cursor, "MATCH", "*", "COUNT", 1000))
				if err != nil {
					b.Error(err)
					return
				}
				cursor, _ = redis.String(r[0], nil)
				ks, _ := redis.Strings(r[1], nil)
				keys = append(keys, ks...)
				if cursor == "0" {
					break
				}
			}
			total.Add(int64(len(keys)))
		}()
	}
	wg.Wait()
	return int(total.Load())
}

// commandCalls sums the calls in INFO commandstats, without the measurement's own.
func commandCalls(b *testing.B, m *redistest.Server) int64 {
	info, err := redis.String(m.Do("INFO", "commandstats"))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok || name == "config|resetstat" {
			continue
		}
		v, _, _ := strings.Cut(rest, ",")
		c, _ := strconv.ParseInt(v, 10, 64)
		n += c
	}
	return n
}

// pollHeap polls once while sampling the heap and returns the peak heap in use above
// the starting point, and what stays live while the snapshot is held.
func pollHeap(cfg *config.Config, pools []*redis.Pool) (peak, retained uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var maxHeap atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > maxHeap.Load() {
					maxHeap.Store(m.HeapAlloc)
				}
			}
		}
	}()
	s := NewPoller(cfg, pools).Poll(context.Background())
	close(stop)
	<-done
	runtime.GC()
	runtime.ReadMemStats(&ms)
	retained = ms.HeapAlloc - min(base, ms.HeapAlloc)
	if f := os.Getenv("REDLOCKCTL_HEAPPROF"); f != "" {
		if w, err := os.Create(f); err == nil {
			pprof.WriteHeapProfile(w)
			w.Close()
		}
	}
	runtime.KeepAlive(s)
	if p := maxHeap.Load(); p > base {
		peak = p - base
	}
	return max(peak, retained), retained
}

// BenchmarkPollDeltaOf measures the console's poll for a wake at 5 masters × 100k
// lock keys fed from the feed: a Delta (PollDeltaOf) of one key reported changed on
// every master, read into a copy of the tables, and its rows patched into the
// stream's.
func BenchmarkPollDeltaOf(b *testing.B) {
	ms, cfg, pools := benchFleet(b)
	p := NewPoller(cfg, pools).FeedFirst(func(int) (bool, int) { return true, 1 }, time.Hour, nil)
	defer p.Close()
	var st *Stream
	for range 2 { // read whole, then from the feed: every row handed out
		st = p.PollStream(context.Background())
		st.EachAt(func(int, []inspect.Resource) {})
	}
	b.ResetTimer()
	for i := range b.N {
		key := "lock:job:" + strconv.Itoa(i%benchKeys)
		for mi := range ms {
			p.Changed(mi, []string{key})
		}
		d := p.PollDeltaOf(context.Background(), st)
		if d == nil || len(d.Judged) != 1 {
			b.Fatalf("a Delta of %s: %+v", key, d)
		}
		st = d.Stream
	}
}
