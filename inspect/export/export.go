// Package export serves inspect snapshots as Prometheus metrics: a Collector over
// the last completed snapshot, the background poll loop that feeds it, the HTTP
// handler of `redlockctl serve`, the one-shot text form of `dump -o prometheus`, and
// the alert rules and Grafana dashboard shipped with the binary.
//
// It only reads snapshots; it never talks to a master itself and so never sends a
// write command. It must never export a secret: labels carry master names, resource
// names from the config, and finding and anomaly codes, never addresses, values,
// messages or credentials. Per-resource series exist only for the configured
// resources, so cardinality does not grow with the number of locks.
package export

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/wire"
)

// DefaultPort is the port `redlockctl serve` listens on unless told otherwise. It lies
// outside the ranges on Prometheus' default port allocations list (9090-9093, and
// 9100 upwards, which exporters have filled past 10000).
const DefaultPort = 7335

// Options says what the exporter serves.
type Options struct {
	// Masters are the configured master names, in config order: every one gets a
	// poll-error counter from the start, and their count gives N and the quorum.
	Masters []string
	// Resources are the configured resource names ([inspect] resources): the only
	// ones with per-resource series.
	Resources []string
	// Interval is the time between polls (serve), served as
	// redlockctl_poll_interval_seconds; 0 (a one-shot dump) serves none.
	Interval time.Duration
	// Build labels redlockctl_build_info; empty fields are read from the binary's
	// build information.
	Build BuildInfo
}

// BuildInfo is the build that serves the metrics.
type BuildInfo struct {
	Version, Revision, GoVersion string
}

// Build is the build that serves the metrics when Options.Build leaves it out: the
// binary's build information, which a release build's version overrides at start-up.
var Build = ReadBuildInfo()

// ReadBuildInfo returns the module version, the VCS revision (with "-dirty" when the
// tree was modified) and the Go version the running binary was built with; "unknown"
// for what the binary does not record.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: "unknown", Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" {
		b.Version = v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Revision != "unknown" {
		b.Revision += "-dirty"
	}
	return b
}

// Exporter is a prometheus.Collector over the last recorded snapshot. Record and
// Collect may run concurrently; a scrape never waits for a poll.
type Exporter struct {
	wake   <-chan struct{}                   // WakeOn's: a poll is due before the interval ends
	delta  func(context.Context) *poll.Delta // WakeOn's: a poll of the changes only
	due    func() bool                       // WakeOn's: a whole poll is due now
	allFed func() bool                       // PaceFed's: the last poll kept every master's rows from its feed
	opts   Options
	extra  []prometheus.Collector // served beside the snapshot (the live feed's metrics)
	cur    atomic.Pointer[view]
	now    func() time.Time
}

// New returns an exporter that serves nothing but the counters and
// redlockctl_up 0 until the first Record.
func New(o Options) *Exporter {
	o.Masters = append([]string(nil), o.Masters...)
	o.Resources = append([]string(nil), o.Resources...)
	def := Build
	o.Build.Version = cmp.Or(o.Build.Version, def.Version)
	o.Build.Revision = cmp.Or(o.Build.Revision, def.Revision)
	o.Build.GoVersion = cmp.Or(o.Build.GoVersion, def.GoVersion)
	return &Exporter{opts: o, now: time.Now}
}

// Record makes s (a completed poll that took took) the snapshot every later scrape
// serves, and counts the poll. It keeps only the figures the metrics need, not s.
func (e *Exporter) Record(s *inspect.Snapshot, took time.Duration) {
	e.store(func(prev *view) *view { return reduce(s, took, &e.opts, prev) })
}

// store makes next(the current view) the current view.
func (e *Exporter) store(next func(prev *view) *view) {
	for {
		prev := e.cur.Load()
		if e.cur.CompareAndSwap(prev, next(prev)) {
			return
		}
	}
}

// A Poll is one poll for Run to record: a snapshot built whole (Whole), or else a
// stream (Stream, then never nil) whose rows Run tallies a chunk at a time as they are
// built, and never keeps.
type Poll struct {
	Whole  *inspect.Snapshot
	Stream *poll.Stream
}

// Ready reports whether a poll has been recorded.
func (e *Exporter) Ready() bool { return e.cur.Load() != nil }

// Describe sends the descriptor of every metric of the contract.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range contract {
		ch <- m.desc
	}
}

// Collect sends the metrics of the last recorded snapshot.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.cur.Load().collect(ch, &e.opts, e.now())
}

// RunGCPercent and RunGCFloor are how far Run lets the heap grow between collections,
// while a poll runs (wire.LeanUpTo) and between polls (wire.HoldLean): by a
// twentieth of the live heap, or 8 MiB where that is more. serve recycles each poll's
// tables, so that a poll keeps little of what it allocates, and the live feed's whole
// reads, beside the first polls, allocate a gigabyte at 5 × 1M keys: paced by that,
// the heap grew to twice what serve holds. What serve holds is nearly free of pointers
// (tables, chunks, references), so a collection is cheap; at 5 × 1M keys a tenth, and
// the default between polls, let serve's RSS peak over 300 MiB. See docs/benchmarks.md's
// figures.
const (
	RunGCPercent = 5
	RunGCFloor   = 8 << 20
)

// WakeGap is the least time from one poll's start to the next that a wake (WakeOn)
// starts: changes that come in a burst are shown by one poll.
const WakeGap = 100 * time.Millisecond

// WakeOn makes Run poll as soon as wake receives (WakeGap after the last poll began,
// at the earliest) as well as every interval: a feed-first poller's changes show at
// once. Such a poll is delta's (a poll.Delta, added to the figures served) where it
// returns one, else a whole one if due says one is due (else the change waits for the
// interval's). A Delta that names masters that did not answer counts a poll error of
// each, and is followed by a whole poll if due says one is. Call it before Run.
func (e *Exporter) WakeOn(wake <-chan struct{}, delta func(context.Context) *poll.Delta, due func() bool) {
	e.wake, e.delta, e.due = wake, delta, due
}

// PaceFed paces Run's whole polls by poll.NextWhole, where allFed reports that the
// last one kept every master's rows from its feed (a feed-first poller's AllFed). Call
// it before Run.
func (e *Exporter) PaceFed(allFed func() bool) { e.allFed = allFed }

// nextWhole is how long after the start of a whole poll that took took the next is due.
func (e *Exporter) nextWhole(interval, took time.Duration) time.Duration {
	return poll.NextWhole(interval, took, e.allFed != nil && e.allFed())
}

// Run polls every interval until ctx ends and records each completed poll. Polls
// never overlap: the next starts when the previous has returned and the interval
// since its start has passed (longer for fed masters: PaceFed; or a wake came:
// WakeOn), and run (with the tally of a stream's rows) under
// inspect.LeanUpTo(RunGCPercent, RunGCFloor). poll must return by itself within a
// bounded time (the inspect Poller returns within its per-master timeout).
func (e *Exporter) Run(ctx context.Context, poll func(context.Context) Poll, interval time.Duration) {
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time // when the last poll started
	deltaRan := false  // a Delta ran since the last whole poll
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A wake waiting beside the interval's poll (a whole poll that takes longer
			// than the interval, at a million keys, is always due at once): its Delta
			// first, once, or a change would wait for that whole poll to end.
			select {
			case <-e.wake:
				if !deltaRan {
					deltaRan = e.tryDelta(ctx, &last)
				}
			default:
			}
		case <-e.wake:
			whole, ran := e.woken(ctx, t.C, &last, deltaRan)
			deltaRan = deltaRan || ran
			if !whole {
				if ctx.Err() != nil {
					return
				}
				continue
			}
		}
		deltaRan = false
		start := time.Now()
		last = start
		var p Poll
		var rows *rowTally
		wire.LeanUpTo(RunGCPercent, RunGCFloor, func() struct{} { // scrapes wait less on the collector
			if p = poll(ctx); ctx.Err() == nil && p.Whole == nil {
				rows = tally(p.Stream, &e.opts)
			}
			return struct{}{}
		})
		if ctx.Err() != nil {
			return // cut short: not a snapshot worth serving
		}
		took := time.Since(start)
		wire.HoldLean(RunGCPercent, RunGCFloor)
		if p.Whole != nil {
			e.Record(p.Whole, took)
		} else {
			e.store(func(prev *view) *view { return reduceTally(p.Stream.Snapshot, rows, took, &e.opts, prev) })
		}
		t.Reset(max(0, time.Until(start.Add(e.nextWhole(interval, took)))))
	}
}

// woken handles a wake of Run's: WakeGap after the last poll began and
// poll.WakeSettle after the wake at the soonest, a Delta where one can be had. It reports whether a
// whole poll is to run now (whole): the interval's came due (a stream of wakes never
// puts it off: once due, it waits for one Delta at most, and none when deltaRan says
// one ran since the last whole poll), no Delta can be had, or one could not be had and
// due says a whole poll is due; and whether a Delta ran (ran). last is when the last
// poll began.
func (e *Exporter) woken(ctx context.Context, interval <-chan time.Time, last *time.Time, deltaRan bool) (whole, ran bool) {
	select {
	case <-interval:
		if !deltaRan {
			ran = e.tryDelta(ctx, last)
		}
		return true, ran
	default:
	}
	if wait := max(time.Until(last.Add(WakeGap)), poll.WakeSettle); wait > 0 {
		select {
		case <-ctx.Done():
			return false, false
		case <-interval:
			return true, false
		case <-time.After(wait):
		}
	}
	if e.delta == nil || !e.Ready() {
		return true, false
	}
	if e.tryDelta(ctx, last) {
		return false, true // the interval's poll stays due when it was
	}
	return ctx.Err() == nil && (e.due == nil || e.due()), false
}

// tryDelta polls the changes alone (WakeOn's delta) and records the Delta; it reports
// whether it had one to record. A Delta naming masters that did not answer records
// their poll errors, and reports false: a whole poll may be due. last is when the last
// poll began (now, when a Delta was asked).
func (e *Exporter) tryDelta(ctx context.Context, last *time.Time) bool {
	if e.delta == nil || !e.Ready() {
		return false
	}
	start := time.Now()
	*last = start
	d := e.delta(ctx)
	switch {
	case d != nil && len(d.Unanswered) == 0:
		took := time.Since(start)
		e.store(func(prev *view) *view { return reduceDelta(prev, d, took, &e.opts) })
		return true
	case d != nil:
		e.store(func(prev *view) *view { return reduceUnanswered(prev, d, &e.opts) })
	}
	return false
}

// Serve adds c to what Handler serves (call it before Handler).
func (e *Exporter) Serve(c prometheus.Collector) { e.extra = append(e.extra, c) }

// Handler serves GET /metrics (the Prometheus text format, from a registry holding e
// and the Go runtime and process collectors, as every exporter serves them) and GET
// /healthz (200 "ok" once a poll has completed, 503 before).
func (e *Exporter) Handler() http.Handler {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(e.extra...)
	mux := http.NewServeMux()
	// Instrumented: promhttp_metric_handler_requests_total and _in_flight count the
	// scrapes themselves (diagnostic, as in every exporter).
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(reg,
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !e.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "no poll completed yet")
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>redlockctl</title></head><body><h1>redlockctl exporter</h1><p><a href="/metrics">/metrics</a> <a href="/healthz">/healthz</a></p></body></html>`)
	})
	return mux
}
