package history

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

// FlushEvery is how often a Recorder writes: a crash loses at most what came since.
const FlushEvery = time.Second

// coverLag is how far behind its last write a session claims to have seen
// everything: the feed gives an event up to about half a second after the change
// (it holds events while it follows the audit log, waits out a lag window, reads
// back what it cannot infer). What happened later than that before a crash is
// unknown, not absent.
const coverLag = time.Second

// startCheck is how often a starting Recorder asks whether the feed is up.
const startCheck = 20 * time.Millisecond

// trimEvery is how often a Recorder applies the store's bounds.
const trimEvery = time.Minute

// queueSize is how many events wait for the Recorder before it counts them lost.
const queueSize = 1 << 16

// auditWindow is how long before a force-released end its audited intent may be.
const auditWindow = 10 * time.Second

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// AuditLog is the audit log whose force-release intents are joined to the
	// lifecycles they ended ("" none).
	AuditLog string
	// Log receives what goes wrong while recording (a failed write, retried).
	Log func(format string, args ...any)
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// FeedUp reports whether the feed has read every master whole and follows
	// them all (live.Feed.Status). Until it does, the session is recorded as a
	// gap: what happened then is unseen. nil: the feed is taken as up from the
	// start.
	FeedUp func() bool
}

// Recorder turns the live feed's events (and the poller's masters) into records,
// written to its Store every FlushEvery. Observe and Masters may be called from any
// goroutine; Run does the work.
type Recorder struct {
	store Backend
	opts  RecorderOptions
	queue chan item

	lost      atomic.Int64 // events dropped since the last Run pass: the queue was full
	lostFirst atomic.Int64 // unix ns of the first of them

	// Run's own:
	session  Mark
	pending  map[string][]*Lifecycle // key -> lifecycles acquired, not ended (the value may come only with the end)
	written  map[*Lifecycle]bool     // pending lifecycles stored as open
	batch    Batch
	heldBack []Lifecycle     // ended while a master's feed was cut: settled by its resync
	gaps     map[string]Mark // master -> its open gap
	seen     time.Time       // the latest instant from which the feed saw everything again
	up       map[string]bool
	findings map[string]inspect.Finding
	starting *Mark // the gap while the feed starts (nil: up)

	recorded, dropped, writeErrs, lostTotal prometheus.Counter
	bytes                                   prometheus.Gauge
}

type item struct {
	ev      *live.Event
	masters []inspect.Master
	global  []inspect.Finding
}

// NewRecorder starts a recording session on s: what a previous session left open
// (lifecycles held, feed gaps) ends unknown at that session's last write.
func NewRecorder(s Backend, o RecorderOptions) (*Recorder, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	r := &Recorder{store: s, opts: o, queue: make(chan item, queueSize),
		pending: map[string][]*Lifecycle{}, written: map[*Lifecycle]bool{}, gaps: map[string]Mark{},
		up: map[string]bool{}, findings: map[string]inspect.Finding{},
		recorded:  prometheus.NewCounter(prometheus.CounterOpts{Name: "redlockctl_history_lifecycles_recorded_total", Help: "Lock lifecycles written to the history store."}),
		dropped:   prometheus.NewCounter(prometheus.CounterOpts{Name: "redlockctl_history_lifecycles_dropped_total", Help: "Lock lifecycles dropped from the history store by its bounds (max_size, max_age), the oldest first."}),
		writeErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: "redlockctl_history_write_errors_total", Help: "Writes to the history store that failed (retried at the next flush)."}),
		lostTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "redlockctl_history_events_lost_total", Help: "Feed events the recorder could not keep up with (recorded as a gap)."}),
		bytes:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "redlockctl_history_bytes", Help: "Bytes the history store's data takes on disk."}),
	}
	now := o.Now()
	if err := s.settle(now); err != nil {
		return nil, err
	}
	r.session = Mark{Kind: MarkSession, At: now, To: now}
	r.seen = now
	r.batch.Marks = append(r.batch.Marks, r.session)
	if o.FeedUp != nil {
		r.starting = &Mark{Kind: MarkGap, At: now, Master: "*", Text: "the feed was starting: not every master read whole yet"}
		r.batch.Marks = append(r.batch.Marks, *r.starting)
	}
	if err := s.Write(r.batch); err != nil {
		return nil, err
	}
	r.batch = Batch{}
	return r, nil
}

// Collectors are the recorder's metrics, for an exporter to serve.
func (r *Recorder) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.recorded, r.dropped, r.writeErrs, r.lostTotal, r.bytes}
}

// Observe takes one feed event. It never blocks: when the recorder has fallen too
// far behind, the event is lost and the time it covers is recorded as a gap.
func (r *Recorder) Observe(e live.Event) {
	select {
	case r.queue <- item{ev: &e}:
	default:
		r.lostFirst.CompareAndSwap(0, e.At.UnixNano())
		r.lost.Add(1)
	}
}

// Masters takes a poll's masters (and the fleet's own findings): masters that go
// down or come back, and doctor findings that appear or clear, are recorded. When
// the recorder is behind, the poll is skipped: the next one carries the same state.
func (r *Recorder) Masters(masters []inspect.Master, fleet []inspect.Finding) {
	select {
	case r.queue <- item{masters: slices.Clone(masters), global: slices.Clone(fleet)}:
	default:
	}
}

// Run records until ctx ends, then writes what it holds and returns.
func (r *Recorder) Run(ctx context.Context) error {
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	start := time.NewTicker(startCheck) // until the feed is up
	defer start.Stop()
	r.trim()
	lastTrim := r.opts.Now()
	for {
		select {
		case <-ctx.Done():
			for len(r.queue) > 0 {
				r.handle(<-r.queue)
			}
			return r.flush()
		case it := <-r.queue:
			r.handle(it)
		case <-start.C:
			if r.checkStarted(r.opts.Now()); r.starting == nil {
				start.Stop()
			}
		case <-tick.C:
			r.flush()
			if r.opts.Now().Sub(lastTrim) >= trimEvery {
				r.trim()
				lastTrim = r.opts.Now()
			}
		}
	}
}

func (r *Recorder) trim() {
	t, err := r.store.Trim(r.opts.Now())
	if err != nil {
		r.opts.Log("history: trim: %v", err)
	}
	r.dropped.Add(float64(t.Lifecycles))
	if used, err := r.store.Used(); err == nil {
		r.bytes.Set(float64(used))
	}
}

// flush writes what came since the last flush, and the lifecycles held for longer
// than FlushEvery as open.
func (r *Recorder) flush() error {
	now := r.opts.Now()
	if n := r.lost.Swap(0); n > 0 {
		first := time.Unix(0, r.lostFirst.Swap(0))
		if first.Unix() <= 0 {
			first = now
		}
		r.lostTotal.Add(float64(n))
		gap := Mark{Kind: MarkGap, At: first, To: now, Master: "*", Text: fmt.Sprintf("%d events lost: the recorder fell behind the feed", n)}
		r.batch.Marks = append(r.batch.Marks, gap)
		r.seen = now
	}
	r.checkStarted(now)
	for _, ls := range r.pending {
		for _, l := range ls {
			if !r.written[l] && now.Sub(l.AcquiredAt) >= FlushEvery {
				r.batch.Open = append(r.batch.Open, *l)
				r.written[l] = true
			}
		}
	}
	if to := now.Add(-coverLag); to.After(r.session.To) {
		r.session.To = to
	}
	b := r.batch
	b.Marks = append(slices.Clip(b.Marks), r.session)
	if err := r.store.Write(b); err != nil {
		r.writeErrs.Inc()
		r.opts.Log("history: write: %v (retried in %v)", err, FlushEvery)
		return err
	}
	r.recorded.Add(float64(len(b.Ended)))
	r.batch = Batch{}
	return nil
}

// checkStarted closes the starting gap once the feed is up.
func (r *Recorder) checkStarted(now time.Time) {
	if r.starting != nil && r.opts.FeedUp() {
		r.starting.To = now
		r.batch.Marks = append(r.batch.Marks, *r.starting)
		r.starting = nil
		r.seen = now
	}
}

func (r *Recorder) handle(it item) {
	if it.ev == nil {
		r.mastersChanged(it.masters, it.global)
		return
	}
	e := it.ev
	switch e.Event {
	case live.Acquired:
		if r.find(e.Key, e.Value) < 0 || e.Value == "" {
			r.pending[e.Key] = append(r.pending[e.Key], &Lifecycle{Resource: e.Resource, Key: e.Key, Value: e.Value, Masters: e.Masters, Quorum: e.Quorum, AcquiredAt: e.At})
		}
	case live.Extended:
		if i := r.find(e.Key, e.Value); i >= 0 {
			r.pending[e.Key][i].Extensions++
		}
	case live.Released, live.Expired, live.Evicted, live.ForceReleased:
		r.ended(e)
	case live.Gap:
		if _, open := r.gaps[e.Master]; !open {
			g := Mark{Kind: MarkGap, At: e.From, Master: e.Master, Text: e.Reason}
			if g.At.IsZero() {
				g.At = e.At
			}
			r.gaps[e.Master] = g
			r.batch.Marks = append(r.batch.Marks, g)
		}
	case live.Resync:
		r.resync(e)
	case live.Degraded:
		r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkDegraded, At: e.At, Master: e.Master, Text: e.Reason})
	case live.Stalled:
		// What the feed handled late: every master's lifecycles there are unsure.
		r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkGap, At: e.From, To: e.To, Master: "*", Text: e.Reason})
	}
}

// find returns the index of key's open lifecycle of value in r.pending[key]: the
// one of that value, else the oldest whose value the feed did not know yet; -1 none.
func (r *Recorder) find(key, value string) int {
	ls := r.pending[key]
	for i, l := range ls {
		if l.Value == value {
			return i
		}
	}
	for i, l := range ls {
		if l.Value == "" {
			return i
		}
	}
	return -1
}

// ended closes the lifecycle e ends.
func (r *Recorder) ended(e *live.Event) {
	var l *Lifecycle
	if i := r.find(e.Key, e.Value); i >= 0 {
		ls := r.pending[e.Key]
		l = ls[i]
		if ls = slices.Delete(ls, i, i+1); len(ls) == 0 {
			delete(r.pending, e.Key)
		} else {
			r.pending[e.Key] = ls
		}
		if r.written[l] {
			delete(r.written, l)
			r.batch.Closed = append(r.batch.Closed, *l) // stored open under the value it had then
		}
		if e.Value != "" {
			l.Value = e.Value
		}
	}
	if l == nil {
		// Acquired before the recorder started, or in a gap: known held from the
		// latest instant the feed saw everything again.
		l = &Lifecycle{Resource: e.Resource, Key: e.Key, Value: e.Value, AcquiredAt: r.seen, Unseen: true}
		if l.AcquiredAt.After(e.At) {
			l.AcquiredAt = e.At
		}
	}
	l.Owner, l.Library = e.Owner, e.Library
	l.Scope = scopeOf(e.Library, max(l.Masters, e.Masters))
	l.Masters, l.Quorum = max(l.Masters, e.Masters), max(l.Quorum, e.Quorum)
	l.TTLMs, l.MarginMs = e.TTLMs, e.MarginMs
	l.End, l.EndedAt = e.Event, e.At
	if e.Event == live.ForceReleased && r.opts.AuditLog != "" {
		if line, at := auditIntent(r.opts.AuditLog, e.Resource, e.At); line != nil {
			l.Audit = line
			r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkForceRelease, At: at, Resource: e.Resource, Text: string(line)})
		}
	}
	if len(r.gaps) > 0 {
		r.heldBack = append(r.heldBack, *l)
		return
	}
	r.batch.Ended = append(r.batch.Ended, *l)
}

// resync closes master e.Master's gap: the ends its whole read settled (dated at the
// read) happened unseen in the gap, and end unknown.
func (r *Recorder) resync(e *live.Event) {
	r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkResync, At: e.At, Master: e.Master, Text: e.Reason})
	g, open := r.gaps[e.Master]
	if !open {
		return
	}
	delete(r.gaps, e.Master)
	g.To = e.At
	r.batch.Marks = append(r.batch.Marks, g)
	for i := range r.heldBack {
		if l := &r.heldBack[i]; l.EndedAt.Equal(e.At) {
			l.End, l.MarginMs = Unknown, nil
		}
	}
	r.seen = e.At
	if len(r.gaps) == 0 {
		r.batch.Ended = append(r.batch.Ended, r.heldBack...)
		r.heldBack = nil
	}
}

func (r *Recorder) mastersChanged(masters []inspect.Master, fleet []inspect.Finding) {
	now := r.opts.Now()
	current := map[string]inspect.Finding{}
	for _, m := range masters {
		was, known := r.up[m.Name]
		switch {
		case !m.Up && (was || !known):
			r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkMasterDown, At: now, Master: m.Name, Text: m.Error})
		case m.Up && known && !was:
			r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkMasterUp, At: now, Master: m.Name})
		}
		r.up[m.Name] = m.Up
		for _, f := range m.Findings {
			current[m.Name+"\x00"+f.Code] = f
		}
	}
	for _, f := range fleet {
		current[f.Master+"\x00"+f.Code] = f
	}
	for k, f := range current {
		if _, ok := r.findings[k]; !ok {
			r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkFinding, At: now, Master: f.Master, Code: f.Code, Text: f.Message})
		}
	}
	for k, f := range r.findings {
		if _, ok := current[k]; !ok {
			r.batch.Marks = append(r.batch.Marks, Mark{Kind: MarkFindingCleared, At: now, Master: f.Master, Code: f.Code, Text: f.Message})
		}
	}
	r.findings = current
}

// scopeOf is a lifecycle's scope from its library (and, where the library decides
// per key, how many masters held it).
func scopeOf(library string, masters int) string {
	s := locks.ScopeOf(library)
	if s == locks.ScopePerKey {
		s = locks.PerKeyScope(masters)
	}
	if s == "" {
		s = locks.ScopeRedlock
	}
	return s
}

// auditIntent returns the audit log's last force-release intent line for resource
// written within auditWindow before end, and its time.
func auditIntent(path, resource string, end time.Time) (json.RawMessage, time.Time) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}
	}
	defer f.Close()
	var best []byte
	var bestAt time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), "force-release") {
			continue
		}
		var a struct {
			Phase    string    `json:"phase"`
			Time     time.Time `json:"time"`
			Action   string    `json:"action"`
			Resource string    `json:"resource"`
		}
		if json.Unmarshal(line, &a) != nil || a.Phase != "intent" || !strings.HasPrefix(a.Action, "force-release") || a.Resource != resource {
			continue
		}
		if a.Time.After(end) || end.Sub(a.Time) > auditWindow {
			continue
		}
		best, bestAt = slices.Clone(line), a.Time
	}
	return best, bestAt
}
