package export

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// metric is one entry of the metric contract: its name, help text, labels and type.
type metric struct {
	name   string
	help   string
	labels []string
	typ    prometheus.ValueType
	desc   *prometheus.Desc
}

func gauge(name, help string, labels ...string) *metric {
	return &metric{name: name, help: help, labels: labels, typ: prometheus.GaugeValue,
		desc: prometheus.NewDesc(name, help, labels, nil)}
}

func counter(name, help string, labels ...string) *metric {
	return &metric{name: name, help: help, labels: labels, typ: prometheus.CounterValue,
		desc: prometheus.NewDesc(name, help, labels, nil)}
}

// The metric contract. Names and labels are fixed: dashboards and alert rules rely on
// them. Every value is in base units (seconds, ratios).
var (
	mUp       = gauge("redlockctl_up", "1 if a quorum of masters answered the last completed poll, else 0.")
	mQuorum   = gauge("redlockctl_quorum", "Masters needed for a quorum (N/2+1).")
	mMasters  = gauge("redlockctl_masters", "Configured masters (N).")
	mMUp      = gauge("redlockctl_master_up", "1 if the master answered the last poll, else 0.", "master")
	mRTT      = gauge("redlockctl_master_rtt_seconds", "Round trip of the master's TIME command in the last poll.", "master")
	mMRead    = gauge("redlockctl_master_poll_duration_seconds", "How long reading the master took in the last poll (its keyspace's share of the poll).", "master")
	mOffset   = gauge("redlockctl_master_clock_offset_seconds", "Master's clock minus this host's clock, from TIME.", "master")
	mDrift    = gauge("redlockctl_master_clock_drift_ratio", "How much faster the master's clock runs than this host's (0.02: 2% fast); absent until measured.", "master")
	mUptime   = gauge("redlockctl_master_uptime_seconds", "Master's uptime from INFO server.", "master")
	mLocks    = gauge("redlockctl_locks", "Lock rows by state and scope (redlock: judged by the quorum; single: single-instance locks, each on its own master, never partial or split); every other pair is always present.", "state", "scope")
	mAnomaly  = gauge("redlockctl_lock_anomalies", "Lock rows carrying each anomaly code.", "code")
	mFinding  = gauge("redlockctl_finding", "1 for each active doctor finding (master=\"\" for findings about the set of masters).", "code", "severity", "master")
	mHeld     = gauge("redlockctl_lock_held", "1 if the configured resource is held by a quorum, else 0.", "resource")
	mHolders  = gauge("redlockctl_lock_holders", "Masters holding the configured resource's (quorum or most common) value.", "resource")
	mValidity = gauge("redlockctl_lock_validity_seconds", "Validity left of the configured resource's held lock; absent when not held.", "resource")
	mSpread   = gauge("redlockctl_lock_ttl_spread_seconds", "Spread of the holders' projected expiries of the configured resource; absent when nothing is held.", "resource")
	mPollDur  = gauge("redlockctl_poll_duration_seconds", "Duration of the last completed poll.")
	mAge      = gauge("redlockctl_snapshot_age_seconds", "Age of the snapshot this scrape serves.")
	mComplete = gauge("redlockctl_poll_complete", "1 if every master answered the last poll and no scan was capped, else 0.")
	mPolls    = counter("redlockctl_polls_total", "Polls completed.")
	mPollErrs = counter("redlockctl_master_poll_errors_total", "Polls in which the master did not answer.", "master")
	mSlow     = gauge("redlockctl_poll_slow", "1 if the last poll took longer than the poll interval (its masters answered: slow, not down), else 0.")
	mBuild    = gauge("redlockctl_build_info", "Always 1; the labels say which build of redlockctl serves these metrics.", "version", "revision", "goversion")
	mInterval = gauge("redlockctl_poll_interval_seconds", "The configured time between polls (serve only): a snapshot much older than this is stale.")
)

var contract = []*metric{mUp, mQuorum, mMasters, mMUp, mRTT, mOffset, mDrift, mUptime, mLocks,
	mAnomaly, mFinding, mHeld, mHolders, mValidity, mSpread, mPollDur, mAge, mComplete, mPolls, mPollErrs,
	mBuild, mInterval, mSlow, mMRead}

// Names returns the name of every metric the exporter can serve, sorted. Alert rules
// and the dashboard use no other.
func Names() []string {
	names := make([]string, len(contract), len(contract)+len(liveNames)+len(reconcileNames))
	for i, m := range contract {
		names[i] = m.name
	}
	names = append(names, liveNames...)
	names = append(names, reconcileNames...)
	slices.Sort(names)
	return names
}

// States are the values of the state label of redlockctl_locks, in order; each is
// always served.
var States = []string{"held", "partial", "split", "no_ttl", "foreign", "free", "semaphore"}

// Scopes are the values of the scope label of redlockctl_locks, in order.
var Scopes = []string{locks.ScopeRedlock, locks.ScopeSingle}

// AnomalyCodes are the anomaly codes served even when no row carries them.
var AnomalyCodes = []string{inspect.AnomalyStray, inspect.AnomalyNoTTL, inspect.AnomalyWrongType, inspect.AnomalyTTLSpread}

// view is what a scrape serves: the figures of one snapshot, reduced when it was
// recorded, so that a scrape costs the same whatever the number of locks.
type view struct {
	takenAt   time.Time
	took      time.Duration
	complete  bool
	slow      bool
	up        bool
	masters   []masterView
	locks     [2][7]int // by Scopes, then States order
	anomalies []count
	findings  []findingKey
	resources []resourceView
	polls     uint64
	pollErrs  []uint64 // per configured master, in Options.Masters order
}

type masterView struct {
	name    string
	up      bool
	rtt     float64
	read    float64
	offset  *float64
	drift   *float64
	uptime  *float64
	noClock bool // TIME was refused: no offset, no RTT
}

type count struct {
	key string
	n   int
}

type findingKey struct{ code, severity, master string }

type resourceView struct {
	name     string
	held     bool
	holders  int
	validity *float64
	spread   *float64
}

// reduce builds the view of s, a poll that took took: the figures of o's masters and
// configured resources. prev is the previous view (for the counters), nil for the
// first.
func reduce(s *inspect.Snapshot, took time.Duration, o *Options, prev *view) *view {
	t := newRowTally(o)
	t.add(s.Resources)
	return reduceTally(s, t, took, o, prev)
}

// reduceTally is reduce with the rows already tallied in t (s.Resources is not read).
func reduceTally(s *inspect.Snapshot, t *rowTally, took time.Duration, o *Options, prev *view) *view {
	v := &view{takenAt: s.TakenAt, took: took, complete: s.Complete, slow: s.Slow}
	v.polls = 1
	v.pollErrs = make([]uint64, len(o.Masters))
	if prev != nil {
		v.polls = prev.polls + 1
		copy(v.pollErrs, prev.pollErrs)
	}
	up := 0
	findings := map[findingKey]bool{}
	for _, m := range s.Masters {
		mv := masterView{name: m.Name, up: m.Up}
		for _, f := range m.Findings {
			findings[findingKey{f.Code, f.Severity, f.Master}] = true
			if f.Code == inspect.FindingNoTime {
				mv.noClock = true
			}
		}
		if m.Up {
			up++
			mv.read = msToSeconds(m.ReadMs)
			if !mv.noClock {
				mv.rtt = msToSeconds(m.RTTMs)
				off := msToSeconds(m.ClockOffsetMs)
				mv.offset = &off
			}
			if m.ClockRatePPM != nil {
				r := *m.ClockRatePPM / 1e6
				mv.drift = &r
			}
			if m.Role != "" {
				u := float64(m.UptimeS)
				mv.uptime = &u
			}
		} else if i := slices.Index(o.Masters, m.Name); i >= 0 {
			v.pollErrs[i]++
		}
		v.masters = append(v.masters, mv)
	}
	v.up = up >= s.Quorum && len(s.Masters) > 0
	for _, f := range s.Findings {
		findings[findingKey{f.Code, f.Severity, f.Master}] = true
	}
	for k := range findings {
		v.findings = append(v.findings, k)
	}
	slices.SortFunc(v.findings, func(a, b findingKey) int {
		return cmp.Or(cmp.Compare(a.code, b.code), cmp.Compare(a.master, b.master), cmp.Compare(a.severity, b.severity))
	})
	sum := s.Summary
	v.locks[0] = [7]int{sum.Held, sum.Partial, sum.Split, sum.NoTTL, sum.Foreign, sum.Free, sum.Semaphore}
	one := sum.SingleSummary
	v.locks[1] = [7]int{one.Held, 0, 0, one.NoTTL, one.Foreign, one.Free, one.Semaphore}

	v.resources = t.resources
	for k, n := range t.anomalies {
		v.anomalies = append(v.anomalies, count{k, n})
	}
	slices.SortFunc(v.anomalies, func(a, b count) int { return cmp.Compare(a.key, b.key) })
	return v
}

// reduceDelta is prev with d's changes: its row counts and anomaly counts moved by
// d's, its configured resources judged again, taken at d's time; the masters' figures
// and findings are prev's (a Delta reads no clock and no health).
func reduceDelta(prev *view, d *poll.Delta, took time.Duration, o *Options) *view {
	v := *prev
	v.takenAt, v.took, v.polls = d.TakenAt, took, prev.polls+1
	r, one := d.Rows, d.Rows.SingleSummary
	for i, n := range [7]int{r.Held, r.Partial, r.Split, r.NoTTL, r.Foreign, r.Free, r.Semaphore} {
		v.locks[0][i] += n
	}
	for i, n := range [7]int{one.Held, 0, 0, one.NoTTL, one.Foreign, one.Free, one.Semaphore} {
		v.locks[1][i] += n
	}
	v.anomalies = slices.Clone(prev.anomalies)
	for code, n := range d.Anomalies {
		if i := slices.IndexFunc(v.anomalies, func(c count) bool { return c.key == code }); i >= 0 {
			v.anomalies[i].n += n
		} else {
			v.anomalies = append(v.anomalies, count{code, n})
		}
	}
	slices.SortFunc(v.anomalies, func(a, b count) int { return cmp.Compare(a.key, b.key) })
	t := newRowTally(o)
	copy(t.resources, prev.resources)
	t.addResources(d.Configured)
	v.resources = t.resources
	return &v
}

// reduceUnanswered counts a Delta that a master did not answer: a poll, and a poll
// error of each master it names. The figures served stay the last poll's.
func reduceUnanswered(prev *view, d *poll.Delta, o *Options) *view {
	v := *prev
	v.polls = prev.polls + 1
	v.pollErrs = slices.Clone(prev.pollErrs)
	for _, name := range d.Unanswered {
		if i := slices.Index(o.Masters, name); i >= 0 {
			v.pollErrs[i]++
		}
	}
	return &v
}

// rowTally is what the metrics take from a snapshot's rows: how many rows carry each
// anomaly code (every known code, at 0 if none), and the configured resources'
// figures. add may be called from several goroutines, a chunk of rows at a time.
type rowTally struct {
	mu        sync.Mutex
	anomalies map[string]int
	want      map[string]int // configured resource -> index in resources
	resources []resourceView
}

// tally builds st's rows a chunk at a time (Stream.Each, which also makes st's
// summary whole) and tallies them. Each fails only when its callbacks do, and these
// never do.
func tally(st *poll.Stream, o *Options) *rowTally {
	t := newRowTally(o)
	st.Each(func(rows []inspect.Resource, out []byte) ([]byte, error) {
		t.add(rows)
		return out, nil
	}, func([]byte) error { return nil })
	return t
}

func newRowTally(o *Options) *rowTally {
	t := &rowTally{anomalies: map[string]int{}, want: make(map[string]int, len(o.Resources)),
		resources: make([]resourceView, len(o.Resources))}
	for _, c := range AnomalyCodes {
		t.anomalies[c] = 0
	}
	for i, r := range o.Resources {
		t.want[r] = i
		t.resources[i] = resourceView{name: r}
	}
	return t
}

func (t *rowTally) add(rows []inspect.Resource) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var seen [8]string
	for i := range rows {
		r := &rows[i]
		codes := seen[:0] // a row counts once per code
		for _, a := range r.Anomalies {
			if !slices.Contains(codes, a.Code) {
				codes = append(codes, a.Code)
				t.anomalies[a.Code]++
			}
		}
		t.resource(r)
	}
}

// addResources takes the figures of rows of configured resources (anything else in
// rows is left out), as they are now.
func (t *rowTally) addResources(rows []inspect.Resource) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range rows {
		if j, ok := t.want[rows[i].Resource]; ok {
			t.resources[j] = resourceView{name: rows[i].Resource}
			t.resource(&rows[i])
		}
	}
}

// resource takes r's figures when it is a configured resource.
func (t *rowTally) resource(r *inspect.Resource) {
	j, ok := t.want[r.Resource]
	if !ok {
		return
	}
	rv := &t.resources[j]
	rv.held = r.State == inspect.StateHeld
	rv.holders = r.Holders
	if rv.held {
		val := float64(r.ValidityMs) / 1e3
		rv.validity = &val
	}
	if r.Holders > 0 && r.State != inspect.StateFree {
		sp := float64(r.TTLSpreadMs) / 1e3
		rv.spread = &sp
	}
}

// msToSeconds converts milliseconds measured to the microsecond into seconds, without
// the float noise of a plain division (0.427 ms is 0.000427 s, not 0.00042699999).
func msToSeconds(ms float64) float64 { return math.Round(ms*1e3) / 1e6 }

// collect sends v's metrics to ch, with the snapshot's age measured at now.
func (v *view) collect(ch chan<- prometheus.Metric, o *Options, now time.Time) {
	send := func(m *metric, val float64, labels ...string) {
		pm, err := prometheus.NewConstMetric(m.desc, m.typ, val, labels...)
		if err != nil {
			pm = prometheus.NewInvalidMetric(m.desc, err)
		}
		ch <- pm
	}
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	send(mBuild, 1, o.Build.Version, o.Build.Revision, o.Build.GoVersion)
	if o.Interval > 0 {
		send(mInterval, o.Interval.Seconds())
	}
	send(mQuorum, float64(len(o.Masters)/2+1))
	send(mMasters, float64(len(o.Masters)))
	var polls uint64
	errs := make([]uint64, len(o.Masters))
	if v != nil {
		polls = v.polls
		copy(errs, v.pollErrs)
	}
	send(mPolls, float64(polls))
	for i, name := range o.Masters {
		send(mPollErrs, float64(errs[i]), name)
	}
	if v == nil { // no poll has completed yet: nothing is known
		send(mUp, 0)
		return
	}
	send(mUp, b(v.up))
	send(mPollDur, v.took.Seconds())
	send(mAge, max(0, now.Sub(v.takenAt).Seconds()))
	send(mComplete, b(v.complete))
	send(mSlow, b(v.slow))
	for _, m := range v.masters {
		send(mMUp, b(m.up), m.name)
		if !m.up {
			continue
		}
		send(mMRead, m.read, m.name)
		if m.offset != nil {
			send(mRTT, m.rtt, m.name)
			send(mOffset, *m.offset, m.name)
		}
		if m.drift != nil {
			send(mDrift, *m.drift, m.name)
		}
		if m.uptime != nil {
			send(mUptime, *m.uptime, m.name)
		}
	}
	for si, scope := range Scopes {
		for i, st := range States {
			if scope == locks.ScopeSingle && (st == "partial" || st == "split") {
				continue // a single-instance lock is never partial or split
			}
			send(mLocks, float64(v.locks[si][i]), st, scope)
		}
	}
	for _, a := range v.anomalies {
		send(mAnomaly, float64(a.n), a.key)
	}
	for _, f := range v.findings {
		send(mFinding, 1, f.code, f.severity, f.master)
	}
	for _, r := range v.resources {
		send(mHeld, b(r.held), r.name)
		send(mHolders, float64(r.holders), r.name)
		if r.validity != nil {
			send(mValidity, *r.validity, r.name)
		}
		if r.spread != nil {
			send(mSpread, *r.spread, r.name)
		}
	}
}
