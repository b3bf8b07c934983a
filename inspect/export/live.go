package export

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/live"
)

// DefaultMaxGroups bounds the group label when [inspect] max_groups is unset.
const DefaultMaxGroups = 100

// OtherGroup is the group of resources past the max_groups distinct ones.
const OtherGroup = "other"

// liveNames are the metrics LiveMetrics serves (with Names' contract).
var liveNames = []string{
	"redlockctl_lock_acquisitions_total", "redlockctl_lock_releases_total",
	"redlockctl_lock_expirations_total", "redlockctl_lock_contended_total",
	"redlockctl_lock_hold_seconds", "redlockctl_lock_release_margin_ratio",
	"redlockctl_live_feed_up", "redlockctl_live_feed_gaps_total",
}

// LiveMetrics counts the live feed's lifecycle events per group of resources, and
// serves each master's feed status. The group label stays bounded: the configured
// groups (first match wins), else the resource name up to its first ':', of which
// at most max distinct ones; the rest are OtherGroup.
type LiveMetrics struct {
	groups []groupRule
	max    int
	status func() []live.MasterStatus

	mu    sync.Mutex
	known map[string]bool

	acq, rel, exp, cont *prometheus.CounterVec
	hold, margin        *prometheus.HistogramVec
	up                  *prometheus.Desc
	gaps                *prometheus.Desc
}

type groupRule struct {
	name string
	q    inspect.Query
}

// NewLiveMetrics returns the live feed's metrics. groups are filters in the language
// of inspect.ParseQuery (a glob like "billing:*" is the usual one); status reports
// each master's feed.
func NewLiveMetrics(groups []string, max int, status func() []live.MasterStatus) (*LiveMetrics, error) {
	if max <= 0 {
		max = DefaultMaxGroups
	}
	m := &LiveMetrics{max: max, status: status, known: map[string]bool{}}
	for _, g := range groups {
		q, err := inspect.ParseQuery(g)
		if err != nil {
			return nil, err
		}
		m.groups = append(m.groups, groupRule{g, q})
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"group"})
	}
	m.acq = counter("redlockctl_lock_acquisitions_total", "Locks acquired (a value reached a quorum), seen live.")
	m.rel = counter("redlockctl_lock_releases_total", "Locks released by their holder before they expired, seen live.")
	m.exp = counter("redlockctl_lock_expirations_total", "Locks that reached their TTL on a quorum without a release: their holder overran.")
	m.cont = counter("redlockctl_lock_contended_total", "Failed attempts: values that reached some masters, never a quorum, and were removed.")
	m.hold = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "redlockctl_lock_hold_seconds",
		Help:    "How long locks were held, from acquisition to release or expiry.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 12)}, []string{"group"})
	m.margin = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "redlockctl_lock_release_margin_ratio",
		Help:    "Validity left at release divided by the TTL (locks held long enough to be read): near 0, the holder nearly overran.",
		Buckets: []float64{0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1}}, []string{"group"})
	m.up = prometheus.NewDesc("redlockctl_live_feed_up", "1 while every change on the master reaches the live feed; 0 in a gap, or when it is polled instead (degraded).", []string{"master"}, nil)
	m.gaps = prometheus.NewDesc("redlockctl_live_feed_gaps_total", "Times the master's live feed was cut (each a gap event, then a resync).", []string{"master"}, nil)
	return m, nil
}

// Group returns the group label of resource.
func (m *LiveMetrics) Group(resource string) string {
	for _, g := range m.groups {
		if g.q.Match(inspect.QueryFields{Resource: resource}) {
			return g.name // configured: bounded by the config itself
		}
	}
	name := resource
	if i := strings.IndexByte(resource, ':'); i >= 0 {
		name = resource[:i]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.known[name] {
		if len(m.known) >= m.max {
			return OtherGroup
		}
		m.known[name] = true
	}
	return name
}

// Observe counts one event.
func (m *LiveMetrics) Observe(e live.Event) {
	if e.Resource == "" {
		return // gap, resync, degraded: served from status
	}
	g := m.Group(e.Resource)
	switch e.Event {
	case live.Acquired:
		m.acq.WithLabelValues(g).Inc()
		return
	case live.Contended:
		m.cont.WithLabelValues(g).Inc()
		return
	case live.Released, live.ForceReleased:
		m.rel.WithLabelValues(g).Inc()
		if e.MarginMs != nil && e.TTLMs > 0 {
			m.margin.WithLabelValues(g).Observe(max(*e.MarginMs, 0) / float64(e.TTLMs))
		}
	case live.Expired, live.Evicted:
		m.exp.WithLabelValues(g).Inc()
	default:
		return
	}
	if e.HeldMs != nil {
		m.hold.WithLabelValues(g).Observe(*e.HeldMs / 1000)
	}
}

// Describe implements prometheus.Collector.
func (m *LiveMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range []prometheus.Collector{m.acq, m.rel, m.exp, m.cont, m.hold, m.margin} {
		c.Describe(ch)
	}
	ch <- m.up
	ch <- m.gaps
}

// Collect implements prometheus.Collector.
func (m *LiveMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []prometheus.Collector{m.acq, m.rel, m.exp, m.cont, m.hold, m.margin} {
		c.Collect(ch)
	}
	for _, s := range m.status() {
		up := 0.0
		if s.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(m.gaps, prometheus.CounterValue, float64(s.Gaps), s.Name)
	}
}
