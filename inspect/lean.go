package inspect

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// leanLast is how many bytes the last poll run under Lean allocated.
var leanLast atomic.Uint64

// Lean runs poll with the garbage collector paced for a poll: what earlier polls left,
// dead by now, is collected first, then the heap may grow by what a poll allocates (a
// quarter more than the last one did; four times the live heap before the first)
// before the next collection. Nearly everything a poll allocates stays live until it
// returns, so collecting as the heap doubles is wasted work (at a million keys, a large
// share of the poll's CPU); and while a collection runs, every goroutine that
// allocates is made to help it, which held a /metrics scrape up for 100-160 ms while
// serve polled 5 × 100k keys (with Lean: 11-52 ms at most, three runs). The pace is set
// from the poll's own size, not as a multiple of the heap: the process may hold much
// that is not the poll's (serve's live feed of a million held locks), and four times
// that was 1.2 GB. The pace applies to the whole process while poll runs.
func Lean[T any](poll func() T) T {
	runtime.GC()
	live := readMetric("/gc/heap/live:bytes")
	pct := 100
	if last := leanLast.Load(); last > 0 && live > 0 {
		pct = int(min(max(last*125/live, 50), 400))
	}
	defer debug.SetGCPercent(debug.SetGCPercent(pct))
	before := readMetric("/gc/heap/allocs:bytes")
	defer func() { leanLast.Store(readMetric("/gc/heap/allocs:bytes") - before) }()
	return poll()
}

// readMetric reads one uint64 runtime metric (0 when the runtime has none of that name).
func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
