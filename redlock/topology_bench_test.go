package redlock

import (
	"fmt"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// BenchmarkClusterCycle compares acquire+release cycles on a 3-shard Redis Cluster used
// as one instance with the same cycles on one plain master (the baseline), at c=1 and
// c=64, in alternating slices. Keys spread over the shards, so at c=64 each shard's
// pipeline carries about a third of the traffic; the c=1 ratio is the cost of slot
// routing.
func BenchmarkClusterCycle(b *testing.B) {
	cl := redistest.StartCluster(b, redistest.ClusterOptions{})
	plain := redistest.Start(b, redistest.Options{})
	for i := 0; i < b.N; i++ {
		single, err := New(benchPools([]string{plain.Addr}), WithRetries(0))
		if err != nil {
			b.Fatal(err)
		}
		cluster, err := NewInstances([]Instance{{Cluster: &Cluster{Seeds: cl.Seeds()}}}, WithRetries(0))
		if err != nil {
			b.Fatal(err)
		}
		base := func(key string) error { return libraryCycle(single, key) }
		lib := func(key string) error { return libraryCycle(cluster, key) }
		for w := 0; w < 64; w++ { // connect to every shard before measuring (pipes start lazily)
			lib(fmt.Sprintf("warm:%d", w))
		}
		res := measureBoth(base, lib, "single", "cluster")
		single.Close()
		cluster.Close()
		b.StopTimer()
		names := []string{"c1_single", "c1_cluster", "c64_single", "c64_cluster"}
		b.Logf("\n%-12s %12s %9s %9s %7s\n", "config", "cycles/s", "p50", "p99", "failed")
		for _, name := range names {
			f := res[name]
			// Failed cycles (a reply later than the 50ms node timeout on a loaded
			// machine) are reported, not fatal: they hit both configurations alike.
			b.ReportMetric(float64(f.errs), name+"_failed")
			b.ReportMetric(f.ops, name+"_ops/s")
			b.ReportMetric(ms(f.p99), name+"_p99_ms")
			b.Logf("%-12s %12.0f %9v %9v %7d", name, f.ops, f.p50.Round(time.Microsecond), f.p99.Round(time.Microsecond), f.errs)
		}
		b.Logf("c=1 cycle cost cluster/single = %.2f×; c=64 throughput cluster/single = %.2f×",
			res["c1_single"].ops/res["c1_cluster"].ops, res["c64_cluster"].ops/res["c64_single"].ops)
		b.StartTimer()
	}
}
