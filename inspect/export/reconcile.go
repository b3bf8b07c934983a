package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockctl/redlockctl/inspect/poll"
)

// reconcileNames are the metrics ReconcileMetrics serves (with Names' contract).
var reconcileNames = []string{"redlockctl_reconcile_mismatches_total"}

// ReconcileMetrics serves redlockctl_reconcile_mismatches_total{master,kind}: the rows
// a feed-first poller's reconciliations found the live feed had got wrong (and fixed),
// by master and kind (poll.MismatchKinds).
type ReconcileMetrics struct {
	masters []string
	counts  func() [][]uint64
	desc    *prometheus.Desc
}

// NewReconcileMetrics returns the mismatch counter of masters (config order), whose
// counts (per master, by poll.MismatchKinds) counts returns.
func NewReconcileMetrics(masters []string, counts func() [][]uint64) *ReconcileMetrics {
	return &ReconcileMetrics{masters: masters, counts: counts, desc: prometheus.NewDesc("redlockctl_reconcile_mismatches_total",
		"Rows a reconciliation (a whole read of a master whose rows come from the live feed) found wrong and fixed, by kind: missing, gone, value, ttl.",
		[]string{"master", "kind"}, nil)}
}

// Describe sends the counter's descriptor.
func (m *ReconcileMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect sends each master's count of each kind, zeros included.
func (m *ReconcileMetrics) Collect(ch chan<- prometheus.Metric) {
	counts := m.counts()
	for i, name := range m.masters {
		for k, kind := range poll.MismatchKinds {
			var v uint64
			if i < len(counts) && k < len(counts[i]) {
				v = counts[i][k]
			}
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(v), name, kind)
		}
	}
}
