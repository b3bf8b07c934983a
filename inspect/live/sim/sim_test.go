package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

var (
	seeds    = flag.Int("sim.seeds", 0, "how many seeded schedules TestSchedules runs (0: the default for the build)")
	first    = flag.Uint64("sim.first", 1, "the first seed")
	only     = flag.String("sim.workloads", "", "comma-separated workloads to draw from (empty: all)")
	replay   = flag.Uint64("sim.replay", 0, "replay one seed with its trace")
	maxFails = flag.Int("sim.maxfails", 5, "failing seeds to print before stopping")
)

func workloads() []string {
	if *only == "" {
		return nil
	}
	return strings.Split(*only, ",")
}

func TestSchedules(t *testing.T) {
	if *replay != 0 {
		s := NewSchedule(*replay, workloads())
		var b strings.Builder
		w := Run(s, func(at int64, format string, args ...any) {
			fmt.Fprintf(&b, "%9.3fms ", float64(at-epoch)/1e6)
			fmt.Fprintf(&b, format+"\n", args...)
		})
		t.Logf("%s%s", s, b.String())
		for _, f := range Check(w, s.Tolerance()) {
			t.Error(f)
		}
		return
	}
	n := *seeds
	if n == 0 {
		n = defaultSeeds
	}
	start := time.Now()
	failed, lifecycles := 0, 0
	kinds := map[string]int{}
	for seed := *first; seed < *first+uint64(n); seed++ {
		s := NewSchedule(seed, workloads())
		w := Run(s, nil)
		lifecycles += len(w.Log.Locks)
		bad := Check(w, s.Tolerance())
		if len(bad) == 0 {
			continue
		}
		failed++
		for _, b := range bad {
			kinds[strings.SplitN(b, ":", 2)[0]]++
		}
		if failed <= *maxFails {
			t.Errorf("%s%s\n  replay: go test ./inspect/live/sim -run TestSchedules -sim.replay %d -v", s, strings.Join(bad, "\n"), seed)
		}
	}
	t.Logf("%d schedules, %d lifecycles, %d failed %v, in %v", n, lifecycles, failed, kinds, time.Since(start).Round(time.Millisecond))
}
