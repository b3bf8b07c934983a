package inspect

import (
	"runtime"
	"runtime/debug"
)

// Lean runs poll with the garbage collector paced for a poll: what earlier polls left,
// dead by now, is collected first, then the heap may grow four times over before the
// next collection. Nearly everything a poll allocates stays live until it returns, so
// collecting as the heap doubles is wasted work (at a million keys, a large share of
// the poll's CPU); and while a collection runs, every goroutine that allocates is made
// to help it, which held a /metrics scrape up for 100-160 ms while serve polled 5 ×
// 100k keys (with Lean: 11-52 ms at most, three runs). The pace applies to the whole process while
// poll runs.
func Lean[T any](poll func() T) T {
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	return poll()
}
