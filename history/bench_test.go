package history

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// The engine benchmarks: `make bench-history` runs them on a store of
// HISTORY_BENCH_N lifecycles (default 1M), generated at 5,000 lifecycles a second
// and kept in HISTORY_BENCH_DIR (default the temporary directory) for the next run.

var benchStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("HISTORY_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

func openEngine(tb testing.TB, name, dir string) *Store {
	tb.Helper()
	var eng engine
	var err error
	switch name {
	case "bbolt":
		eng, err = openBolt(dir, false)
	case "pebble":
		eng, err = openPebble(dir)
	}
	if err != nil {
		tb.Fatal(err)
	}
	s, err := newStore(eng, Options{MaxSize: 1 << 40, MaxAge: 1 << 62})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

var engines = []string{"bbolt", "pebble"}

// BenchmarkWrite writes one second of the workload (5,000 lifecycles) per op, as a
// Recorder does, and reports the bytes each lifecycle takes on disk.
func BenchmarkWrite(b *testing.B) {
	for _, name := range engines {
		b.Run(name, func(b *testing.B) {
			s := openEngine(b, name, b.TempDir())
			defer s.Close()
			w := newWorkload(1, benchStart, 5000)
			secs := make([][]Lifecycle, 16)
			for i := range secs {
				secs[i] = w.second()
			}
			written := 0
			b.ResetTimer()
			for i := range b.N {
				batch := secs[i%len(secs)]
				if err := s.Write(Batch{Ended: batch}); err != nil {
					b.Fatal(err)
				}
				written += len(batch)
			}
			b.StopTimer()
			b.ReportMetric(float64(written)/b.Elapsed().Seconds(), "lifecycles/s")
			if name == "pebble" {
				s.eng.(*pebbleEngine).db.Flush()
			}
			used, _ := s.Used()
			b.ReportMetric(float64(used)/float64(written), "B/lifecycle")
		})
	}
}

var (
	bigMu     sync.Mutex
	bigStores = map[string]*Store{}
)

// bigStore returns a store of n generated lifecycles (built once, kept on disk).
func bigStore(b *testing.B, name string, n int) (*Store, time.Time) {
	bigMu.Lock()
	defer bigMu.Unlock()
	end := benchStart.Add(time.Duration(n/5000) * time.Second)
	if s := bigStores[name]; s != nil {
		return s, end
	}
	root := os.Getenv("HISTORY_BENCH_DIR")
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, fmt.Sprintf("redlockctl-history-bench-v2-%s-%d", name, n))
	_, err := os.Stat(filepath.Join(dir, "done"))
	built := err == nil
	if !built {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o700)
	}
	s := openEngine(b, name, dir)
	if !built {
		began := time.Now()
		w := newWorkload(7, benchStart, 5000)
		if err := s.Write(Batch{Marks: []Mark{{Kind: MarkSession, At: benchStart.Add(-time.Hour), To: end.Add(time.Hour)}}}); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n/5000; i++ {
			if err := s.Write(Batch{Ended: w.second()}); err != nil {
				b.Fatal(err)
			}
		}
		if name == "pebble" {
			s.eng.(*pebbleEngine).db.Flush()
		}
		used, _ := s.Used()
		b.Logf("%s: built %d lifecycles in %v: %d bytes, %.1f B/lifecycle", name, n, time.Since(began).Round(time.Second), used, float64(used)/float64(n))
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o600)
	}
	bigStores[name] = s
	return s, end
}

// cpuTime is the CPU time the process has used: on a machine others share, the
// figure wall-clock latencies should be read beside.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatency reports the p50 and p99 of ds in ms.
func reportLatency(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	p := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

// BenchmarkAt asks who held what at a random instant of a large store: every holder
// (about 15,000 at 5,000 lifecycles a second), and one resource's.
func BenchmarkAt(b *testing.B) {
	n := benchN()
	for _, name := range engines {
		for _, filter := range []string{"all", "resource"} {
			b.Run(name+"/"+filter, func(b *testing.B) {
				s, end := bigStore(b, name, n)
				span := end.Sub(benchStart)
				var sel Select
				ds := make([]time.Duration, 0, b.N)
				holders := 0
				cpu := cpuTime()
				b.ResetTimer()
				for i := range b.N {
					t := benchStart.Add(span/10 + time.Duration(uint64(i)*0x9E3779B97F4A7C15%uint64(span*8/10)))
					if filter == "resource" {
						sel.Resources = []string{fmt.Sprintf("billing:job:%d", i%10000)}
					}
					began := time.Now()
					a, err := s.At(sel, t)
					ds = append(ds, time.Since(began))
					if err != nil {
						b.Fatal(err)
					}
					holders += len(a.Holders)
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				reportLatency(b, ds)
				b.ReportMetric(float64(holders)/float64(b.N), "holders")
			})
		}
	}
}

// BenchmarkExpiredSince24h lists every expired lifecycle of the last 24 hours (the
// whole store, 1% of it): all of them ("all"), and as `redlockctl history --since
// 24h --expired` asks (Store.Do: at most DefaultLimit, the earliest acquired first).
func BenchmarkExpiredSince24h(b *testing.B) {
	n := benchN()
	for _, name := range engines {
		for _, ask := range []string{"all", "command"} {
			b.Run(name+"/"+ask, func(b *testing.B) {
				s, end := bigStore(b, name, n)
				ds := make([]time.Duration, 0, b.N)
				found := 0
				cpu := cpuTime()
				b.ResetTimer()
				for range b.N {
					began := time.Now()
					var r Result
					var err error
					if ask == "all" {
						r, err = s.Lifecycles(Filter{Since: end.Add(-24 * time.Hour), Ends: []string{Expired}}, end)
					} else {
						var resp Response
						resp, err = s.Do(Request{Since: end.Add(-24 * time.Hour), Ends: []string{Expired}}, end)
						if resp.Result != nil {
							r = *resp.Result
						}
					}
					ds = append(ds, time.Since(began))
					if err != nil {
						b.Fatal(err)
					}
					found = len(r.Lifecycles)
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				reportLatency(b, ds)
				b.ReportMetric(float64(found), "expired")
			})
		}
	}
}

// TestEncodedSize reports the bytes a lifecycle takes encoded, before the engine.
func TestEncodedSize(t *testing.T) {
	s := openEngine(t, "bbolt", t.TempDir())
	defer s.Close()
	w := newWorkload(1, benchStart, 5000)
	total, n, blocks := 0, 0, 0
	for range 10 {
		sec := w.second()
		kvs, err := s.encode(sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			total += len(kv.val) + len(kv.key)
			blocks++
		}
		n += len(sec)
	}
	t.Logf("%.1f bytes a lifecycle encoded, %d blocks for %d", float64(total)/float64(n), blocks, n)
	if total/n > 60 {
		t.Errorf("%d bytes a lifecycle encoded: want at most 60, to leave the engine room under 80", total/n)
	}
}

// BenchmarkRecorder is one second of the workload through a Recorder: 5,000
// acquired and 5,000 end events handled, then the second's write. ns/op over 1e9
// is the share of one core that recording 5,000 lifecycles/s takes.
func BenchmarkRecorder(b *testing.B) {
	s := openEngine(b, "bbolt", b.TempDir())
	defer s.Close()
	c := &clock{benchStart}
	r, err := NewRecorder(s, RecorderOptions{Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	w := newWorkload(1, benchStart, 5000)
	var secs [][]live.Event
	for range 16 {
		var evs []live.Event
		for _, l := range w.second() {
			evs = append(evs,
				live.Event{At: l.AcquiredAt, Event: live.Acquired, Resource: l.Resource, Key: l.Key, Value: l.Value, Masters: 5, Quorum: 3},
				live.Event{At: l.EndedAt, Event: l.End, Resource: l.Resource, Key: l.Key, Value: l.Value, Owner: l.Owner, Library: l.Library,
					Masters: 5, Quorum: 3, TTLMs: l.TTLMs, MarginMs: l.MarginMs})
		}
		secs = append(secs, evs)
	}
	cpu := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		for j := range secs[i%len(secs)] {
			r.handle(item{ev: &secs[i%len(secs)][j]})
		}
		c.t = c.t.Add(time.Second)
		if err := r.flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu)/1e7/float64(b.N), "%core")
}
