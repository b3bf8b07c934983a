package carry

import (
	"runtime"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// BenchmarkCarrier: what a Carrier adds to serve's poll of 100k rows on 5 masters:
// the time of Track and of handing the rows out (EachAt, as the exporter tallies
// them), and the heap it keeps between polls (its records: serve keeps nothing else
// of a poll), while every master answers and while one master holding every row is
// down.
func BenchmarkCarrier(b *testing.B) {
	t0 := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name string
		down int
	}{{"all-up", -1}, {"one-down", 4}} {
		b.Run(c.name, func(b *testing.B) {
			var held uint64
			var took time.Duration
			for range b.N {
				car := new(Carrier)
				first := poll.StreamOf(trackRows(100_000, -1, t0))
				car.Track(first)
				first.EachAt(func(int, []inspect.Resource) {})
				s := trackRows(100_000, c.down, t0.Add(time.Second))
				inspect.Summarize(s)
				st := poll.StreamOf(s)
				s = nil
				runtime.GC() // the garbage of building the polls is not the Carrier's
				start := time.Now()
				car.Track(st)
				st.EachAt(func(int, []inspect.Resource) {})
				took += time.Since(start)
				if c.down >= 0 && st.Snapshot.Summary.Resources != 100_000 {
					b.Fatalf("%d rows counted, want 100000", st.Snapshot.Summary.Resources)
				}
				// The heap the Carrier keeps: with it, and without it, the stream alive
				// in both (its Observe is the Carrier's: the next Track lets it go).
				st.Observe = nil
				with := heap()
				runtime.KeepAlive(car)
				car = nil
				held = with - heap()
				runtime.KeepAlive(st)
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/track+pass-100k")
			b.ReportMetric(float64(held)/100_000, "kept-B/row")
		})
	}
}

// heap returns the bytes of live heap objects after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
