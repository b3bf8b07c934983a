package export

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// Groups stay bounded: a configured group first, then the name up to ':', and past
// max_groups, "other"; each event kind lands in its own counter.
func TestLiveMetricsGroups(t *testing.T) {
	status := func() []live.MasterStatus {
		return []live.MasterStatus{{Name: "m1", Up: true}, {Name: "m2", Gaps: 2}}
	}
	m, err := NewLiveMetrics([]string{"billing:night*"}, 2, status)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ res, want string }{
		{"jobs:email", "jobs"}, {"cache", "cache"}, {"orders:1", OtherGroup}, // max 2 derived groups
		{"jobs:sms", "jobs"}, {"billing:nightly", "billing:night*"}, // configured: always its own
	} {
		if got := m.Group(c.res); got != c.want {
			t.Errorf("group of %q = %q, want %q", c.res, got, c.want)
		}
	}
	held, margin := 30.0, 250.0
	for _, e := range []live.Event{
		{Event: live.Acquired, Resource: "jobs:email"},
		{Event: live.Released, Resource: "jobs:email", HeldMs: &held, MarginMs: &margin, TTLMs: 1000},
		{Event: live.Acquired, Resource: "jobs:email"},
		{Event: live.Expired, Resource: "jobs:email", HeldMs: &held},
		{Event: live.Contended, Resource: "jobs:email"},
		{Event: live.Gap, Master: "m1"},
	} {
		m.Observe(e)
	}
	for name, want := range map[*prometheus.CounterVec]float64{m.acq: 2, m.rel: 1, m.exp: 1, m.cont: 1} {
		if got := testutil.ToFloat64(name.WithLabelValues("jobs")); got != want {
			t.Errorf("counter = %v, want %v", got, want)
		}
	}
	want := `
# HELP redlockctl_live_feed_gaps_total Times the master's live feed was cut (each a gap event, then a resync).
# TYPE redlockctl_live_feed_gaps_total counter
redlockctl_live_feed_gaps_total{master="m1"} 0
redlockctl_live_feed_gaps_total{master="m2"} 2
# HELP redlockctl_live_feed_up 1 while every change on the master reaches the live feed; 0 in a gap, or when it is polled instead (degraded).
# TYPE redlockctl_live_feed_up gauge
redlockctl_live_feed_up{master="m1"} 1
redlockctl_live_feed_up{master="m2"} 0
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "redlockctl_live_feed_up", "redlockctl_live_feed_gaps_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m, "redlockctl_lock_hold_seconds"); n != 1 {
		t.Errorf("%d hold-time series, want 1 (group jobs)", n)
	}
	if _, err := NewLiveMetrics([]string{"owner:"}, 0, status); err == nil {
		t.Error("a group that does not parse was taken")
	}
}
