package lockrun

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// BenchmarkRunOverhead measures what a run adds to a command: `true` started directly
// (the baseline) and under Run on 3 real masters (acquire, look, start, wait, release,
// look), median and p99 over the same number of runs.
func BenchmarkRunOverhead(b *testing.B) {
	const n = 50
	servers := redistest.StartN(b, 3, redistest.Options{})
	pools := redistest.Pools(servers)
	measure := func(f func() error) (p50, p99 time.Duration) {
		var d []time.Duration
		for range n {
			t0 := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(t0))
		}
		slices.Sort(d)
		return d[n/2], d[n*99/100]
	}
	for range b.N {
		base50, base99 := measure(func() error { return exec.Command("true").Run() })
		run50, run99 := measure(func() error {
			r := Run(context.Background(), pools, testOpts, Job{Resource: "bench", TTL: 5 * time.Second, Args: []string{"true"}})
			if r.Code != 0 {
				b.Fatalf("run: %+v", r)
			}
			return nil
		})
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(base50), "exec_p50_ms")
		b.ReportMetric(ms(run50), "run_p50_ms")
		b.ReportMetric(ms(run99), "run_p99_ms")
		b.ReportMetric(ms(run50-base50), "overhead_p50_ms")
		b.Logf("exec true: p50 %v p99 %v; under Run (3 masters): p50 %v p99 %v; overhead p50 %v",
			base50.Round(time.Microsecond), base99.Round(time.Microsecond), run50.Round(time.Microsecond),
			run99.Round(time.Microsecond), (run50 - base50).Round(time.Microsecond))
	}
}
