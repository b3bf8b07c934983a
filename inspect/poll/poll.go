package poll

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/crashtest"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// pollGrace is how long Poll waits past the per-master deadline for replies that are
// already on their way.
const pollGrace = 25 * time.Millisecond

// Poller reads every master concurrently and judges what it read. It keeps history
// across polls (clock samples for rates and jumps, the previous rows for events) and
// never has more than one poll in flight per master. It sends no write command.
type Poller struct {
	cfg    *config.Config
	pools  []*redis.Pool
	params verdict.Params

	mu    sync.Mutex // one Poll at a time
	ms    []*masterState
	polls int
	prev  map[string]verdict.Reading
	// pollStart is when the poll being built started reading (zero before any).
	pollStart time.Time
	// keys is how many keys the last poll merged: the next poll's tables are made that
	// large at once, instead of growing (and copying) as keys come in.
	keys   int
	primed bool // prev holds a poll: events can be computed
	// prevPollMs is how long the poll of prev took.
	prevPollMs float64

	noEvents bool // WithoutEvents: no events, no previous rows kept
	// spare holds the tables of a poll that nothing reads any more (Recycle): the
	// next poll fills them instead of new ones.
	spare *tables

	// ff is a feed-first poller's state (FeedFirst; nil otherwise), fedPlans what the
	// poll being read reads of each fed master (nil for one read whole).
	ff        *feedFirst
	fedPlans  []*fedRead
	deltaRead bool // the poll being read is a Delta's
	deltaCopy bool // a PollDeltaOf's: written into a copy of the kept tables (clone)
}

// masterState is what the poller remembers about one master between polls.
type masterState struct {
	busy     atomic.Bool // a read of this master is in flight
	raw      *wire.Conn  // the key-reading connection, kept between clean polls
	clock    verdict.ClockHistory
	health   *verdict.Health
	healthAt time.Time

	// Sentinel groups and clusters (topology.go). conns belongs to the goroutine
	// reading the entry; the rest to build.
	conns     *nodeConns
	addr      string                  // Sentinel group: the master read last
	changedAt time.Time               // Sentinel group: when the poller saw the master change
	sentinel  *verdict.SentinelInfo   // Sentinel group: what the sentinels said last
	shards    map[string]*masterState // cluster: history per shard master address
	cluster   map[string]string       // cluster: CLUSTER INFO, last read
}

// masterRead is what reading one master produced besides its keys (which go straight
// into the collector).
type masterRead struct {
	err     error
	clock   *verdict.ClockSample
	timeErr string
	health  *verdict.Health
	capped  bool
	scanned int // keys returned by SCAN
	gone    int // keys SCAN returned that had expired by the time they were read

	addr       string                // the server read, when not the entry's addr (topology.go)
	sentinel   *verdict.SentinelInfo // Sentinel group: what the sentinels said (health polls)
	cluster    *clusterRead          // cluster: shards and their reads
	moved      int                   // cluster: keys another shard answered for
	incomplete string                // cluster: why keys may have been missed
	took       time.Duration         // how long the read took
}

// NewPoller returns a Poller over pools (one per cfg.Masters entry, same order).
func NewPoller(cfg *config.Config, pools []*redis.Pool) *Poller {
	p := &Poller{cfg: cfg, pools: pools, params: verdict.ParamsOf(cfg), prev: map[string]verdict.Reading{}}
	for _, mc := range cfg.Masters {
		st := &masterState{}
		if mc.Kind() != config.KindAddr {
			st.conns = newNodeConns(mc, cfg.Inspect.Timeout)
			st.shards = map[string]*masterState{}
		}
		p.ms = append(p.ms, st)
	}
	return p
}

// WithoutEvents makes Poll leave Snapshot.Events empty and keep nothing of the
// previous poll's rows to compute them against: for callers that print no events
// (dump, doctor), it saves a map entry per row. It returns p; call it before polling.
func (p *Poller) WithoutEvents() *Poller {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noEvents, p.prev = true, nil
	return p
}

// Close closes the connections the poller keeps between polls (those of masters
// with a read in flight are closed when that read ends).
func (p *Poller) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.ms {
		if st.busy.CompareAndSwap(false, true) {
			if st.raw != nil {
				st.raw.Close()
				st.raw = nil
			}
			if st.conns != nil {
				st.conns.close()
			}
			st.busy.Store(false)
		}
	}
	return nil
}

// Poll reads every master and returns the analysed snapshot. It returns within
// inspect.timeout (or ctx's deadline, if sooner) plus a small grace: masters that did
// not answer by then are Up=false with the error. A master whose previous read is
// still stuck is reported down without starting another read.
func (p *Poller) Poll(ctx context.Context) *inspect.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	reads, col := p.collect(ctx)
	return p.build(time.Now(), reads, col)
}

// collect reads every master, its keys into a new collector, which it closes once the
// reads are in (or late).
func (p *Poller) collect(ctx context.Context) ([]*masterRead, *collector) {
	if p.ff != nil {
		return p.collectFed(ctx)
	}
	col := newCollectorIn(p.cfg, p.spare)
	p.spare = nil
	col.reserve(p.keys)
	reads := p.read(ctx, col)
	col.close() // a straggler's batches are dropped from here on
	p.keys = col.entries()
	return reads, col
}

// SampleClocks reads only each master's clock (TIME, and INFO/CONFIG the first
// time), to feed clock rates and jump detection between polls: it reads no keys and
// builds no snapshot, so sampling costs the same at a million keys as at ten. Same
// deadlines as Poll.
func (p *Poller) SampleClocks(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.read(ctx, nil) {
		st := p.ms[i]
		if r.cluster != nil {
			sampleShards(st, r.cluster)
		}
		if r.addr != "" && r.addr != st.addr {
			continue // a Sentinel group's new master: build starts its history
		}
		if r.clock != nil {
			st.clock.Add(*r.clock)
		}
		if r.health != nil {
			st.health, st.healthAt = r.health, time.Now()
		}
	}
}

// read reads every master concurrently, its keys into col (none when col is nil),
// and returns what each read produced, within the poll deadline.
func (p *Poller) read(ctx context.Context, col *collector) []*masterRead {
	start := time.Now()
	if col != nil {
		p.pollStart = start
	}
	deadline := start.Add(p.cfg.Inspect.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wantHealth := false
	if col != nil && !p.deltaRead {
		wantHealth = p.polls%max(1, p.cfg.Inspect.HealthEvery) == 0
		p.polls++
	}

	var until time.Time // a hard end to every read: the caller's deadline, if any
	if d, ok := ctx.Deadline(); ok {
		until = d
	}
	n := len(p.cfg.Masters)
	reads := make([]*masterRead, n)
	results := make([]chan *masterRead, n)
	lives := make([]*wire.Liveness, n)
	for i := range n {
		st := p.ms[i]
		if i >= len(p.pools) || p.pools[i] == nil {
			reads[i] = &masterRead{err: errors.New("no connection pool")}
			continue
		}
		if !st.busy.CompareAndSwap(false, true) {
			reads[i] = &masterRead{err: errors.New("previous poll still running (master stuck)")}
			continue
		}
		ch := make(chan *masterRead, 1)
		results[i] = ch
		var fed *fedRead
		if p.fedPlans != nil && col != nil {
			fed = p.fedPlans[i]
		}
		health := wantHealth || st.health == nil
		var live *wire.Liveness
		if k := p.cfg.Masters[i].Kind(); (k == config.KindAddr || k == config.KindSentinel) && col != nil {
			live = &wire.Liveness{RoundTrip: p.cfg.Inspect.Timeout, Until: until}
			lives[i] = live
		}
		go func(pool *redis.Pool) {
			var r *masterRead
			defer func() {
				// A bug met on one master's read costs that master's rows, named as
				// such, never the process (nor the terminal of a console).
				if rec := recover(); rec != nil {
					r = &masterRead{err: fmt.Errorf("internal error, please report it: %v", rec), took: time.Since(start)}
					st.busy.Store(false)
					ch <- r
				}
			}()
			crashtest.Point("read")
			switch p.cfg.Masters[i].Kind() {
			case config.KindAddr:
				if fed != nil {
					r = readFed(target{pool: pool, mc: p.cfg.Masters[i]}, p.cfg, deadline, health, &st.raw, i, col, fed, live)
				} else {
					r = readMaster(target{pool: pool, mc: p.cfg.Masters[i]}, p.cfg, deadline, health, &st.raw, i, col, live)
				}
			case config.KindSentinel:
				r = p.readSentinel(i, st, deadline, health, col, live)
			case config.KindCluster:
				r = p.readCluster(i, st, deadline, wantHealth, col)
			default:
				r = readMaster(target{pool: pool, mc: p.cfg.Masters[i]}, p.cfg, deadline, health, &st.raw, i, col, live)
			}
			r.took = time.Since(start)
			// Free the master before handing over the result: the next Poll may start
			// the moment this one has every result, and must not find it busy.
			st.busy.Store(false)
			ch <- r
		}(p.pools[i])
	}
	// Wait for each read while its master is alive: the key read of a plain master or
	// a Sentinel group's is cut only once it has waited for the master with nothing to
	// read (its key read may take far longer than inspect.timeout in all, and this
	// process's own work is no silence of the master); other reads, and the first
	// round trips, have the poll deadline. Whatever has not come by then is taken as
	// it is.
	alive := func(i int) bool {
		now := time.Now()
		if !until.IsZero() && now.After(until.Add(pollGrace)) {
			return false
		}
		if now.Before(deadline.Add(pollGrace)) {
			return true
		}
		if l := lives[i]; l != nil {
			// The read's own deadline ends a wait within inspect.timeout; this is the
			// backstop, with room for a read that comes back with the bytes that came
			// while the process waited for a CPU.
			w := l.Waiting.Load()
			return w == 0 || now.Sub(time.Unix(0, w)) < 2*p.cfg.Inspect.Timeout+pollGrace
		}
		return false
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i, ch := range results {
		for ch != nil && reads[i] == nil {
			select {
			case r := <-ch:
				reads[i] = r
			case <-tick.C:
				if !alive(i) {
					reads[i] = &masterRead{err: fmt.Errorf("no answer within %v", p.cfg.Inspect.Timeout)}
				}
			case <-ctx.Done():
				select {
				case r := <-ch: // already there: take it
					reads[i] = r
				default:
					reads[i] = &masterRead{err: fmt.Errorf("poll cancelled: %v", ctx.Err())}
				}
			}
		}
	}
	return reads
}

// build turns the reads and the collected rows into a snapshot and updates history.
func (p *Poller) build(now time.Time, reads []*masterRead, col *collector) *inspect.Snapshot {
	s, pl := p.prepare(now, reads, col)
	s.Resources = pl.Rows()
	if !p.noEvents {
		s.Events = p.events(now, s.PollMs, s.Resources)
	}
	inspect.Summarize(s)
	return s
}

// prepare makes a snapshot of everything but the rows from the reads (masters,
// findings, and a summary without rows), updating history, and plans the rows.
func (p *Poller) prepare(now time.Time, reads []*masterRead, col *collector) (*inspect.Snapshot, *RowPlan) {
	cfg := p.cfg
	s := &inspect.Snapshot{TakenAt: now, Config: cfg.Path, Quorum: cfg.Quorum(), Complete: true, Findings: []inspect.Finding{}}
	if !p.pollStart.IsZero() {
		took := now.Sub(p.pollStart)
		s.PollMs, s.Slow = ms(took), took > cfg.Inspect.PollInterval
	}
	rates := make([]float64, len(reads))
	down := make([]string, len(reads))
	kinds := make([]errkind.Kind, len(reads))
	for i, r := range reads {
		mc := cfg.Masters[i]
		st := p.ms[i]
		m := inspect.Master{Name: mc.Name, Addr: mc.Addr, Findings: []inspect.Finding{}}
		switch mc.Kind() {
		case config.KindCluster:
			fillCluster(&m, st, r, now, col, i, mc)
		case config.KindSentinel:
			rates[i] = fillSentinel(&m, st, r, now, mc)
		default:
			rates[i] = fill(&m, st, r, now)
		}
		if m.Error != "" {
			m.Error = cfg.Scrub(m.Error)
			if m.ErrorKind == errkind.None {
				m.ErrorKind = errkind.OfText(m.Error)
			}
		}
		if r.err != nil {
			down[i], kinds[i] = m.Error, m.ErrorKind
		}
		if !m.Up || m.Capped || m.Incomplete != "" {
			s.Complete = false
		}
		s.Masters = append(s.Masters, m)
	}
	pl := col.plan(now, down, kinds, rates, p.params)
	longest := time.Duration(pl.maxPTTL) * time.Millisecond
	for i := range s.Masters {
		m := &s.Masters[i]
		switch cfg.Masters[i].Kind() {
		case config.KindCluster:
			m.Findings = append(m.Findings, verdict.ClusterFindings(cfg, m, clusterFactsOf(p.ms[i], reads[i], m), longest)...)
		case config.KindSentinel:
			st := p.ms[i]
			m.Findings = append(m.Findings, verdict.MasterFindings(cfg, m, st.health, reads[i].timeErr, longest)...)
			m.Findings = append(m.Findings, verdict.SentinelFindings(cfg, m, st.sentinel, st.health, st.changedAt, now, longest)...)
		default:
			m.Findings = append(m.Findings, verdict.MasterFindings(cfg, m, p.ms[i].health, reads[i].timeErr, longest)...)
		}
	}
	s.Findings = append(s.Findings, verdict.SnapshotFindings(cfg, s.Masters, p.healths())...)
	inspect.Summarize(s)
	return s, pl
}

// fill sets m's state from one server's read r and keeps its history in st: up or
// the error, clock offset, rate and jump, health. It returns the clock rate (0 while
// unknown).
func fill(m *inspect.Master, st *masterState, r *masterRead, now time.Time) (rate float64) {
	m.Up = r.err == nil
	m.ReadMs = ms(r.took)
	if r.err != nil {
		m.Error, m.ErrorKind = r.err.Error(), errkind.Of(r.err)
	}
	if r.clock != nil {
		st.clock.Add(*r.clock)
		m.RTTMs = ms(r.clock.Received.Sub(r.clock.Sent))
	}
	if r.health != nil {
		st.health, st.healthAt = r.health, now
	}
	if cs, ok := st.clock.Last(); ok && r.err == nil && r.clock != nil {
		m.ClockOffsetMs = ms(cs.Offset())
		m.ClockUncertaintyMs = ms(cs.Uncertainty())
		if rt, ok := st.clock.Rate(); ok {
			rate = rt
			m.ClockRatePPM = &rt
		}
	}
	m.ClockJump = st.clock.Jumped(now)
	if h := st.health; h != nil {
		m.UptimeS = h.UptimeS + int64(now.Sub(st.healthAt).Seconds())
		m.Role, m.AppendOnly, m.AppendFsync, m.MaxmemoryPolicy = h.Role, h.AppendOnly, h.Fsync, h.Policy
		m.Server, m.Version = h.Server, h.Version
	}
	m.Capped = r.capped
	return rate
}

func (p *Poller) healths() []*verdict.Health {
	hs := make([]*verdict.Health, len(p.ms))
	for i, st := range p.ms {
		hs[i] = st.health
	}
	return hs
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
