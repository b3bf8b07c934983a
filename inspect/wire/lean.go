package wire

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
// quarter more than the last one did, at least a tenth of the live heap and at most as
// much again, the runtime's default; as much again before the first) before the next
// collection. Nearly everything a poll allocates stays live until it
// returns, so collecting as the heap doubles is wasted work (at a million keys, a large
// share of the poll's CPU); and while a collection runs, every goroutine that
// allocates is made to help it, which held a /metrics scrape up for 100-160 ms while
// serve polled 5 × 100k keys (with Lean: 11-52 ms at most, three runs). The pace is set
// from the poll's own size, not as a multiple of the heap: the process may hold much
// that is not the poll's (serve's live feed of a million held locks), and four times
// that was 1.2 GB. Nor more than the runtime's default: what a poll allocates is
// counted over the whole process, and serve's first polls run beside the live feed's
// reading of every key (at 5 × 1M keys, pacing by that let the heap grow fourfold: 1.1
// GB resident, 0.9 GB at most as much again). Nor less than a tenth: serve's polls fill
// the tables of the one before (Poller.Recycle) and allocate little, and a poll that
// allocates little is paced by it (5 × 1M keys, serve's steady resident set: 536 MB
// with at least half the live heap, 488 MB with a tenth; polls as long). The pace
// applies to the whole process while poll runs.
func Lean[T any](poll func() T) T { return LeanUpTo(100, 0, poll) }

// LeanUpTo is Lean with the heap let grow by at most maxPct percent of the live heap
// (at least 5; never less than 10 where maxPct allows it) between collections, or by
// floor bytes where that is more. For a
// process whose polls fill the tables of the one before (Poller.Recycle): such a poll
// keeps nearly nothing it allocates, and what else the process allocates while it
// runs (serve's live feed reading a million keys: a gigabyte of garbage beside one
// poll) would otherwise pace it up to the default, the heap growing to twice what is
// live. The floor keeps a small heap from being collected after every few megabytes;
// it does not apply to the first poll, whose tables are new and grow from nothing
// (serve at 5 × 1M keys, one run each: 290 MiB peak with its first poll at maxPct,
// 300 MiB with it at the floor's 100%).
func LeanUpTo[T any](maxPct int, floor uint64, poll func() T) T {
	maxPct = max(maxPct, 5)
	least := min(maxPct, 10)
	runtime.GC()
	live := readMetric("/gc/heap/live:bytes")
	pct := maxPct
	if last := leanLast.Load(); last > 0 && live > 0 {
		pct = int(min(max(last*125/live, uint64(least)), uint64(maxPct)))
		pct = max(pct, int(min(floor*100/live, 100)))
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

// HoldLean sets the pace LeanUpTo(maxPct, floor) gives a poll for the whole process
// until the next call: the heap may grow by maxPct percent of what the last collection
// found live (at least 5), or by floor bytes where that is more, between
// collections. LeanUpTo's pace applies only while its poll runs and the runtime's
// default (the heap doubling) applies between polls. A process whose whole polls are
// far apart (serve where every master is fed: minutes at a million keys) spends
// most of its time between them, and there what it allocates (Deltas, scrapes, the
// live feed) grew its heap, and the memory the runtime keeps, by as much as the
// live heap again. Call it after a poll; LeanUpTo restores it when its poll returns.
func HoldLean(maxPct int, floor uint64) {
	live := readMetric("/gc/heap/live:bytes")
	pct := max(maxPct, 5)
	if live > 0 {
		pct = max(pct, int(min(floor*100/live, 100)))
	}
	debug.SetGCPercent(pct)
}
