package export

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
)

const secret = "s3cr3t-pw"

// snapshot returns a snapshot of 5 masters: m1 with a measured clock rate, m2 down,
// m3 refusing TIME; rows: a configured held lock, a configured free one, and
// unconfigured rows with anomalies, one of them carrying a secret-looking value.
func snapshot(at time.Time) *inspect.Snapshot {
	rate := 20000.0
	s := &inspect.Snapshot{TakenAt: at, Quorum: 3, Complete: false}
	for i, name := range []string{"m1", "m2", "m3", "m4", "m5"} {
		m := inspect.Master{Name: name, Addr: "redlockctl:" + secret + "@10.0.0." + name[1:] + ":6379", Up: true,
			RTTMs: 0.25 * float64(i+1), ReadMs: 40 * float64(i+1), ClockOffsetMs: 5000, ClockUncertaintyMs: 0.1, UptimeS: 3600, Role: "master"}
		switch name {
		case "m1":
			m.ClockRatePPM = &rate
			m.Findings = []inspect.Finding{{Code: "clock-rate", Severity: "crit", Master: "m1", Message: secret}}
		case "m2":
			m = inspect.Master{Name: name, Addr: m.Addr, Up: false, Error: "NOAUTH " + secret, UptimeS: 10, Role: "master",
				Findings: []inspect.Finding{{Code: "down", Severity: "crit", Master: "m2", Message: secret}}}
		case "m3":
			m.ClockOffsetMs = 0
			m.RTTMs = 0
			m.Findings = []inspect.Finding{{Code: "no-time", Severity: "warn", Master: "m3"}}
		}
		s.Masters = append(s.Masters, m)
	}
	s.Findings = []inspect.Finding{
		{Code: "replicates", Severity: "crit", Message: "a replicates b"},
		{Code: "replicates", Severity: "crit", Message: "c replicates d"}, // same labels: one series
	}
	s.Resources = []inspect.Resource{
		{Resource: "billing:nightly", State: inspect.StateHeld, Value: "w#" + secret, Holders: 4, ValidityMs: 12500, TTLSpreadMs: 3},
		{Resource: "reports:daily", State: inspect.StateFree},
		{Resource: "deploy:web", State: inspect.StateSplit, Holders: 2, Value: secret,
			Anomalies: []inspect.Anomaly{{Code: inspect.AnomalyStray, Master: "m1"}, {Code: inspect.AnomalyStray, Master: "m3"}}},
		{Resource: "legacy:" + secret, State: inspect.StateNoTTL, Holders: 1,
			Anomalies: []inspect.Anomaly{{Code: inspect.AnomalyNoTTL, Master: "m4"}, {Code: "novel-code"}}},
	}
	s.Summary = inspect.Summary{Resources: 4, Held: 1, Split: 1, NoTTL: 1, Free: 1, MastersUp: 4, Findings: 5}
	return s
}

var opts = Options{Masters: []string{"m1", "m2", "m3", "m4", "m5"}, Resources: []string{"billing:nightly", "reports:daily", "never:seen"},
	Interval: 2 * time.Second, Build: BuildInfo{Version: "v0.9.0", Revision: "abc123", GoVersion: "go1.26.8"}}

// scrape serves e through its handler and returns the /metrics body.
func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// samples parses a text exposition into "name{labels}" -> value.
func samples(t *testing.T, body string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[name+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

func TestCollectorServesTheContract(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	e := New(opts)
	e.now = func() time.Time { return at.Add(1500 * time.Millisecond) }
	e.Record(snapshot(at), 80*time.Millisecond)
	body := scrape(t, e)
	got := samples(t, body)
	want := map[string]float64{
		"redlockctl_up{}":                                                          1,
		"redlockctl_quorum{}":                                                      3,
		"redlockctl_masters{}":                                                     5,
		"redlockctl_master_up{master=m1}":                                          1,
		"redlockctl_master_up{master=m2}":                                          0,
		"redlockctl_master_rtt_seconds{master=m1}":                                 0.00025,
		"redlockctl_master_poll_duration_seconds{master=m1}":                       0.04,
		"redlockctl_master_clock_offset_seconds{master=m1}":                        5,
		"redlockctl_master_clock_drift_ratio{master=m1}":                           0.02,
		"redlockctl_master_uptime_seconds{master=m4}":                              3600,
		"redlockctl_locks{scope=redlock,state=held}":                               1,
		"redlockctl_locks{scope=redlock,state=partial}":                            0,
		"redlockctl_locks{scope=redlock,state=split}":                              1,
		"redlockctl_locks{scope=redlock,state=no_ttl}":                             1,
		"redlockctl_locks{scope=redlock,state=foreign}":                            0,
		"redlockctl_locks{scope=redlock,state=free}":                               1,
		"redlockctl_locks{scope=redlock,state=semaphore}":                          0,
		"redlockctl_locks{scope=single,state=held}":                                0,
		"redlockctl_locks{scope=single,state=no_ttl}":                              0,
		"redlockctl_locks{scope=single,state=foreign}":                             0,
		"redlockctl_locks{scope=single,state=free}":                                0,
		"redlockctl_locks{scope=single,state=semaphore}":                           0,
		"redlockctl_lock_anomalies{code=stray-value}":                              1, // one row, two anomalies
		"redlockctl_lock_anomalies{code=no-ttl-node}":                              1,
		"redlockctl_lock_anomalies{code=wrongtype-node}":                           0,
		"redlockctl_lock_anomalies{code=ttl-spread}":                               0,
		"redlockctl_lock_anomalies{code=novel-code}":                               1,
		"redlockctl_finding{code=clock-rate,master=m1,severity=crit}":              1,
		"redlockctl_finding{code=down,master=m2,severity=crit}":                    1,
		"redlockctl_finding{code=no-time,master=m3,severity=warn}":                 1,
		"redlockctl_finding{code=replicates,master=,severity=crit}":                1,
		"redlockctl_lock_held{resource=billing:nightly}":                           1,
		"redlockctl_lock_holders{resource=billing:nightly}":                        4,
		"redlockctl_lock_validity_seconds{resource=billing:nightly}":               12.5,
		"redlockctl_lock_ttl_spread_seconds{resource=billing:nightly}":             0.003,
		"redlockctl_lock_held{resource=reports:daily}":                             0,
		"redlockctl_lock_holders{resource=reports:daily}":                          0,
		"redlockctl_lock_held{resource=never:seen}":                                0,
		"redlockctl_poll_duration_seconds{}":                                       0.08,
		"redlockctl_snapshot_age_seconds{}":                                        1.5,
		"redlockctl_poll_complete{}":                                               0,
		"redlockctl_poll_slow{}":                                                   0,
		"redlockctl_polls_total{}":                                                 1,
		"redlockctl_master_poll_errors_total{master=m1}":                           0,
		"redlockctl_master_poll_errors_total{master=m2}":                           1,
		"redlockctl_build_info{goversion=go1.26.8,revision=abc123,version=v0.9.0}": 1,
		"redlockctl_poll_interval_seconds{}":                                       2,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("missing %s", k)
		} else if g != v {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
	for _, absent := range []string{
		"redlockctl_master_clock_drift_ratio{master=m4}",    // not measured yet
		"redlockctl_master_clock_offset_seconds{master=m2}", // down
		"redlockctl_master_rtt_seconds{master=m2}",
		"redlockctl_master_uptime_seconds{master=m2}",
		"redlockctl_master_clock_offset_seconds{master=m3}", // refused TIME
		"redlockctl_lock_validity_seconds{resource=reports:daily}",
		"redlockctl_lock_ttl_spread_seconds{resource=reports:daily}",
		"redlockctl_lock_held{resource=deploy:web}", // not configured
	} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s is served, want it absent", absent)
		}
	}
	// The Go runtime's and the process's own series are served beside the contract,
	// as by every exporter (diagnostic: not part of the contract).
	for _, self := range []string{"go_goroutines{}", "go_memstats_heap_alloc_bytes{}", "process_resident_memory_bytes{}", "process_cpu_seconds_total{}", "promhttp_metric_handler_requests_in_flight{}"} {
		if _, ok := got[self]; !ok {
			t.Errorf("missing %s", self)
		}
	}
	var extra []string
	for k := range got {
		if _, ok := want[k]; !ok && !selfSeries(k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if !allMasterSeries(extra) {
		t.Errorf("unexpected series: %v", extra)
	}
	for _, leak := range []string{secret, "10.0.0.", "legacy:", "deploy:web", "NOAUTH"} {
		if strings.Contains(body, leak) {
			t.Errorf("the exposition contains %q:\n%s", leak, body)
		}
	}
	for name := range got {
		base := name[:strings.IndexByte(name, '{')]
		if !slices.Contains(Names(), base) && !selfSeries(name) {
			t.Errorf("%s is served but not in Names()", base)
		}
	}
}

// selfSeries says whether a series is the Go or process collector's.
func selfSeries(k string) bool {
	return strings.HasPrefix(k, "go_") || strings.HasPrefix(k, "process_") || strings.HasPrefix(k, "promhttp_")
}

// allMasterSeries says whether every key is a per-master series of m1, m3, m4 or m5
// (or the holders of the configured resource no poll has seen).
func allMasterSeries(keys []string) bool {
	re := regexp.MustCompile(`^(redlockctl_master_(up|poll_errors_total|rtt_seconds|clock_offset_seconds|uptime_seconds|poll_duration_seconds)\{master=m[1345]\}|redlockctl_lock_holders\{resource=never:seen\})$`)
	for _, k := range keys {
		if !re.MatchString(k) {
			return false
		}
	}
	return true
}

func TestBeforeTheFirstPoll(t *testing.T) {
	e := New(opts)
	got := samples(t, scrape(t, e))
	if got["redlockctl_up{}"] != 0 || got["redlockctl_polls_total{}"] != 0 || got["redlockctl_masters{}"] != 5 {
		t.Errorf("before any poll: %v", got)
	}
	if _, ok := got["redlockctl_locks{scope=redlock,state=held}"]; ok {
		t.Error("lock counts served before any poll: they would claim 0 locks, which nobody measured")
	}
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before the first poll: %d, want 503", rec.Code)
	}
	e.Record(snapshot(time.Now()), time.Millisecond)
	rec = httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "ok" {
		t.Errorf("/healthz after a poll: %d %q", rec.Code, rec.Body)
	}
}

func TestCountersAndQuorumLoss(t *testing.T) {
	e := New(opts)
	for range 3 {
		e.Record(snapshot(time.Now()), time.Millisecond)
	}
	s := snapshot(time.Now())
	for i := 1; i < 4; i++ { // m2 (already down), m3, m4 down: 2 of 5 up
		s.Masters[i].Up = false
	}
	e.Record(s, time.Millisecond)
	got := samples(t, scrape(t, e))
	wantSamples(t, got, map[string]float64{
		"redlockctl_polls_total{}":                       4,
		"redlockctl_master_poll_errors_total{master=m2}": 4,
		"redlockctl_master_poll_errors_total{master=m3}": 1,
		"redlockctl_master_poll_errors_total{master=m5}": 0,
		"redlockctl_up{}":                                0,
	})
}

// runInBackground runs e.Run with poll every interval on a goroutine of its own, and
// returns what stops it (its context cancelled, then the wait for Run's return).
func runInBackground(e *Exporter, poll func(context.Context) Poll, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx, poll, interval); close(done) }()
	return func() { cancel(); <-done }
}

// A Delta that a master did not answer counts a poll and that master's poll error,
// and keeps the figures of the last poll.
func TestUnansweredDeltaCountsPollErrors(t *testing.T) {
	e := New(opts)
	var polls, deltas atomic.Int32
	whole := func(context.Context) Poll {
		polls.Add(1)
		return Poll{Whole: snapshot(time.Now())}
	}
	wake := make(chan struct{}, 1)
	e.WakeOn(wake, func(context.Context) *poll.Delta {
		if deltas.Add(1) > 1 {
			return nil // only the first is unanswered
		}
		return &poll.Delta{TakenAt: time.Now(), Unanswered: []string{"m3"}}
	}, func() bool { return false })
	defer runInBackground(e, whole, time.Hour)()
	deadline := time.Now().Add(10 * time.Second)
	for !e.Ready() || e.cur.Load().polls < 2 { // the whole poll, then the delta's
		if time.Now().After(deadline) {
			t.Fatal("no delta counted in 10s")
		}
		select {
		case wake <- struct{}{}:
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := samples(t, scrape(t, e))
	wantSamples(t, got, map[string]float64{
		"redlockctl_polls_total{}":                       2,
		"redlockctl_master_poll_errors_total{master=m3}": 1,
		"redlockctl_master_poll_errors_total{master=m1}": 0,
		"redlockctl_master_up{master=m3}":                1,
	})
	if polls.Load() != 1 {
		t.Errorf("%d whole polls, want 1: due said none was", polls.Load())
	}
}

// A stream of wakes where no Delta can be had (a master's feed down) never puts off
// the interval's poll: polls come every interval, not WakeGap after the last each
// time the wake is taken first. (Before, a 2 s silence of a master could fall between two
// polls put off so, and show in no poll error.)
func TestWakesNeverPutOffTheIntervalPoll(t *testing.T) {
	e := New(opts)
	var polls atomic.Int32
	whole := func(context.Context) Poll {
		polls.Add(1)
		return Poll{Whole: snapshot(time.Now())}
	}
	wake := make(chan struct{}, 1)
	e.WakeOn(wake, func(context.Context) *poll.Delta { return nil }, func() bool { return false })
	stopRun := runInBackground(e, whole, 50*time.Millisecond)
	stop := make(chan struct{})
	go func() { // a wake always waiting, as under steady writes
		for {
			select {
			case wake <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	time.Sleep(3 * time.Second)
	stopRun()
	close(stop)
	// Every 50 ms: about 60. Put off to WakeGap (100 ms) after the last wake's
	// Delta whenever the wake was taken first: under 20.
	n := polls.Load()
	t.Logf("%d polls", n)
	if n < 50 {
		t.Errorf("%d polls in 3 s at an interval of 50 ms under a stream of wakes, want about 60", n)
	}
}

// Whole polls that take longer than the interval (serve at a million keys, where
// every row is judged again) are due at once, one after another: a change the feed
// reports meanwhile is still polled alone before the next one (once between two), not
// left to wait for it, and the whole polls keep coming back to back.
func TestWakeGetsItsDeltaWhenWholePollsRunLong(t *testing.T) {
	e := New(opts)
	var polls, deltas atomic.Int32
	wake := make(chan struct{}, 1)
	whole := func(context.Context) Poll {
		polls.Add(1)
		time.Sleep(60 * time.Millisecond)
		select {
		case wake <- struct{}{}: // a change reported while it ran
		default:
		}
		time.Sleep(60 * time.Millisecond)
		return Poll{Whole: snapshot(time.Now())}
	}
	e.WakeOn(wake, func(context.Context) *poll.Delta {
		deltas.Add(1)
		return &poll.Delta{TakenAt: time.Now(), Anomalies: map[string]int{}}
	}, func() bool { return true })
	stopRun := runInBackground(e, whole, 50*time.Millisecond)
	time.Sleep(2 * time.Second)
	stopRun()
	p, d := polls.Load(), deltas.Load()
	t.Logf("%d whole polls, %d Deltas", p, d)
	if p < 12 {
		t.Errorf("%d whole polls of 120 ms in 2 s, want them back to back (about 16)", p)
	}
	if d < p-2 || d > p+1 {
		t.Errorf("%d Deltas for %d whole polls, each with a change reported while it ran: want one between each two", d, p)
	}
}

// A wake's Delta starts WakeSettle after it, not at once: the invalidations of one
// write to every master come milliseconds apart, and the Delta then reads them all.
func TestWakeSettlesBeforeItsDelta(t *testing.T) {
	e := New(opts)
	wake := make(chan struct{}, 1)
	var woke atomic.Int64
	waited := make(chan time.Duration, 8)
	e.WakeOn(wake, func(context.Context) *poll.Delta {
		waited <- time.Since(time.Unix(0, woke.Load()))
		return &poll.Delta{TakenAt: time.Now(), Anomalies: map[string]int{}}
	}, func() bool { return false })
	stopRun := runInBackground(e, func(context.Context) Poll { return Poll{Whole: snapshot(time.Now())} }, time.Hour)
	defer stopRun()
	for range 3 {
		time.Sleep(WakeGap + 50*time.Millisecond) // past the gap since the last poll
		woke.Store(time.Now().UnixNano())
		wake <- struct{}{}
		select {
		case d := <-waited:
			if d < poll.WakeSettle {
				t.Errorf("a wake's Delta started %v after it, want %v or more", d, poll.WakeSettle)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no Delta for a wake within 5 s")
		}
	}
}

// Whole polls of fed masters that take longer than the interval (serve at a million
// keys) are paced (PaceFed): each is due WholeShare times as long as the last took, so
// that Run is mostly idle, and a change the feed reports is read soon after it, by a
// Delta or by a whole poll, not after whole polls back to back. A master polled (not
// fed) keeps them back to back.
func TestFedWholePollsArePaced(t *testing.T) {
	for _, fed := range []bool{true, false} {
		e := New(opts)
		var polls atomic.Int32
		var mu sync.Mutex
		var wakes, starts []time.Time
		started := func() {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
		}
		wake := make(chan struct{}, 1)
		whole := func(context.Context) Poll {
			started()
			polls.Add(1)
			time.Sleep(120 * time.Millisecond)
			return Poll{Whole: snapshot(time.Now())}
		}
		e.WakeOn(wake, func(context.Context) *poll.Delta {
			started()
			return &poll.Delta{TakenAt: time.Now(), Anomalies: map[string]int{}}
		}, func() bool { return false })
		e.PaceFed(func() bool { return fed })
		stopRun := runInBackground(e, whole, 50*time.Millisecond)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // a change every 250 ms
			defer close(done)
			tk := time.NewTicker(250 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-tk.C:
					mu.Lock()
					wakes = append(wakes, time.Now())
					mu.Unlock()
					select {
					case wake <- struct{}{}:
					default:
					}
				case <-stop:
					return
				}
			}
		}()
		time.Sleep(3 * time.Second)
		close(stop)
		<-done
		stopRun()
		// A change is read by the first poll that starts after it: within the whole
		// poll in flight (120 ms) and WakeSettle, give or take the scheduler.
		mu.Lock()
		late := 0
		for _, w := range wakes {
			i, _ := slices.BinarySearchFunc(starts, w, func(s, w time.Time) int { return s.Compare(w) })
			if i == len(starts) || starts[i].Sub(w) > 200*time.Millisecond {
				late++
			}
		}
		mu.Unlock()
		p := polls.Load()
		t.Logf("fed %v: %d whole polls, %d changes, %d of them read more than 200 ms later", fed, p, len(wakes), late)
		if fed {
			// One every 480 ms: about 6 in 3 s (back to back: about 25).
			if p < 4 || p > 8 {
				t.Errorf("fed: %d whole polls of 120 ms in 3 s, want one every %d x 120 ms (about 6)", p, poll.WholeShare)
			}
			if late > 2 {
				t.Errorf("fed: %d of %d changes read more than 200 ms after them, want at most 2", late, len(wakes))
			}
		} else if p < 18 {
			t.Errorf("not fed: %d whole polls of 120 ms in 3 s, want them back to back (about 25)", p)
		}
	}
}

// A poll that hangs never delays a scrape: the scrape serves the last completed
// snapshot. And Run never has two polls in flight.
func TestRunServesLastSnapshotWhilePollHangs(t *testing.T) {
	e := New(opts)
	var inFlight, most, polls atomic.Int32
	release := make(chan struct{})
	poll := func(ctx context.Context) Poll {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if polls.Add(1) == 3 { // the third poll hangs until released
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return Poll{Whole: snapshot(time.Now())}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx, poll, 10*time.Millisecond); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for polls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not reach its third poll in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	for range 5 { // the hung poll is still in flight
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatalf("scrape while a poll hangs: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := samples(t, string(body))["redlockctl_polls_total{}"]; got != 2 {
			t.Errorf("polls_total = %v while the third poll hangs, want 2", got)
		}
	}
	close(release)
	for polls.Load() < 6 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not go on after the hung poll returned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if most.Load() != 1 {
		t.Errorf("%d polls were in flight at once, want 1", most.Load())
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	s := snapshot(time.Now())
	if err := WriteText(&b, s, 42*time.Millisecond, opts); err != nil {
		t.Fatal(err)
	}
	got := samples(t, b.String())
	if got["redlockctl_locks{scope=redlock,state=split}"] != 1 || got["redlockctl_snapshot_age_seconds{}"] != 0 ||
		got["redlockctl_poll_duration_seconds{}"] != 0.042 || got["redlockctl_polls_total{}"] != 1 {
		t.Errorf("dump -o prometheus:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "# TYPE redlockctl_polls_total counter") {
		t.Errorf("no TYPE line for the counter:\n%s", b.String())
	}
}

// The exposition has the same series whether the snapshot has 4 rows or 100k: only
// configured resources get per-resource series.
func TestSeriesDoNotGrowWithLocks(t *testing.T) {
	small := snapshot(time.Now())
	big := snapshot(time.Now())
	for i := range 100_000 {
		big.Resources = append(big.Resources, inspect.Resource{Resource: "job:" + strconv.Itoa(i), State: inspect.StateHeld, Holders: 5,
			Anomalies: []inspect.Anomaly{{Code: inspect.AnomalyTTLSpread}}})
	}
	big.Summary.Held += 100_000
	series := func(s *inspect.Snapshot) []string {
		e := New(opts)
		e.Record(s, time.Millisecond)
		var keys []string
		for k := range samples(t, scrape(t, e)) {
			if !selfSeries(k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}
	a, b := series(small), series(big)
	if !slices.Equal(a, b) {
		t.Errorf("100k more rows changed the series:\n%v\n%v", a, b)
	}
	if len(b) > 66 {
		t.Errorf("%d series for 5 masters and 3 configured resources", len(b))
	}
}

// wantSamples reports every series of want whose sample in got has another value.
func wantSamples(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for series, v := range want {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
}

// export registers prometheus in report's table of formats: dump takes it, doctor and
// --watch do not.
func TestPrometheusFormatRegistered(t *testing.T) {
	f, ok := report.Lookup("prometheus")
	if !ok || f.Stream == nil || f.Snapshot != nil || f.Doctor != nil {
		t.Fatalf("prometheus format: %v %+v", ok, f)
	}
	if report.FormatNames("dump") != "table, json, ndjson or prometheus" || report.FormatNames("doctor") != "table, json or ndjson" {
		t.Errorf("names %q / %q", report.FormatNames("dump"), report.FormatNames("doctor"))
	}
}

// export registers serve's printed files in report's table: --print-alerts as rules
// (the default) or prometheusrule, --print-dashboard as json (the default) or
// configmap, each writing the file its function returns, and the help says so.
func TestFilesRegistered(t *testing.T) {
	want := "with --print-alerts: rules (a rules file, the default) or prometheusrule (a Prometheus Operator PrometheusRule); " +
		"with --print-dashboard: json (the default) or configmap (a ConfigMap for Grafana's dashboard sidecar)"
	if got := report.FileHelp(); got != want {
		t.Errorf("help\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		command, name string
		def           bool
		file          func() []byte
	}{
		{report.CmdPrintAlerts, "rules", true, Alerts},
		{report.CmdPrintAlerts, "prometheusrule", false, PrometheusRule},
		{report.CmdPrintDashboard, "json", true, Dashboard},
		{report.CmdPrintDashboard, "configmap", false, DashboardConfigMap},
	} {
		f, err := report.Choose(c.command, c.name)
		if err != nil {
			t.Errorf("%s -o %s: %v", c.command, c.name, err)
			continue
		}
		var b bytes.Buffer
		if err := f.File(c.command).Write(&b); err != nil || !bytes.Equal(b.Bytes(), c.file()) {
			t.Errorf("%s -o %s wrote %d bytes (%v), want the %d of its file", c.command, c.name, b.Len(), err, len(c.file()))
		}
		if d, ok := report.DefaultFile(c.command); (ok && d.Name == c.name) != c.def {
			t.Errorf("%s: default %q, %s default %v", c.command, d.Name, c.name, c.def)
		}
	}
	if report.FormatNames("dump") != "table, json, ndjson or prometheus" {
		t.Errorf("dump takes %q: serve's files are not dump's", report.FormatNames("dump"))
	}
}

// Between polls, Run keeps the collector at the pace of its polls (RunGCPercent, or
// RunGCFloor), not the runtime's default: serve spends most of its time there.
func TestRunHoldsThePaceBetweenPolls(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	held := make([]byte, 512<<20) // live: RunGCFloor is under RunGCPercent of it
	for i := range held {
		held[i] = 1
	}
	e := New(opts)
	polled := make(chan struct{}, 1)
	whole := func(context.Context) Poll {
		select {
		case polled <- struct{}{}:
		default:
		}
		return Poll{Whole: snapshot(time.Now())}
	}
	stop := runInBackground(e, whole, time.Hour)
	<-polled
	deadline := time.Now().Add(5 * time.Second)
	for !e.Ready() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // the poll recorded, Run waiting for the next
	pct := debug.SetGCPercent(-1)
	debug.SetGCPercent(pct)
	stop()
	if pct != RunGCPercent {
		t.Errorf("GC percent %d between polls, want RunGCPercent %d", pct, RunGCPercent)
	}
	runtime.KeepAlive(held)
}
