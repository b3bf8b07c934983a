package live

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// slotMapEvery is how often a cluster's slot map is read again to follow reshards.
const slotMapEvery = 5 * time.Second

// Feed is the live lifecycle feed of the configured masters (see the package doc).
type Feed struct {
	cfg     *config.Config
	timeout time.Duration

	mu     sync.Mutex
	status []MasterStatus

	entries []*entry            // the driver's: the master entries
	marks   map[*node]time.Time // the driver's: each node's last mark
	hold    *holder             // the driver's: events held to name force-releases (audit log on)

	noValues bool // see WithoutValues
	// onKeys, when set (OnKeys), hears the keys each master's feed says changed.
	onKeys func(mi int, keys []string)
}

// MasterStatus is how one master's feed stands.
type MasterStatus struct {
	Name     string
	Up       bool   // every change there is arriving
	Degraded string // why it is polled instead ("" when it is not)
	Gaps     int    // gaps so far
	// Source is where its changes come from: SourceKeyspace (keyspace notifications
	// an operator enabled), SourceTracking, SourcePoll (degraded), or "" before its
	// feed first connected.
	Source string
	// Note says why keyspace notifications are not used there (not enabled, or the
	// ACL refuses CONFIG GET or their channels), or what they do not name.
	Note string
	// Syncs counts the times its feed came up (a whole read after tracking was turned
	// on): while Up stays true and Syncs the same, every change since that read began
	// has been passed to OnKeys's function, or is on its way.
	Syncs int
}

// New returns the feed of cfg's masters; Run starts it.
func New(cfg *config.Config) *Feed {
	timeout := cfg.Inspect.Timeout
	if timeout <= 0 {
		timeout = config.DefaultTimeout
	}
	f := &Feed{cfg: cfg, timeout: timeout}
	for _, m := range cfg.Masters {
		f.status = append(f.status, MasterStatus{Name: m.Name})
	}
	return f
}

// WithoutValues makes the feed keep no value of a lock it found held when it
// started (or after a gap) until that lock changes: the end events of such locks
// carry no value, and a million of them take about 50 MB less. For a consumer that
// counts events and never shows a value (the exporter). Call it before Run.
func (f *Feed) WithoutValues() *Feed {
	f.noValues = true
	return f
}

// OnKeys makes the feed call fn, from its one driving goroutine, with the keys of
// master mi that its feed says changed (an invalidation or a keyspace notification),
// as they come and before any inference or read: fn(mi, nil) when the master's
// whole database was flushed, fn(mi, []string{}) when its feed was cut or came up
// again (Status changed). fn must return at once. Call it before Run.
func (f *Feed) OnKeys(fn func(mi int, keys []string)) *Feed {
	f.onKeys = fn
	return f
}

// Status returns each master's feed status.
func (f *Feed) Status() []MasterStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.status)
}

func (f *Feed) setStatus(mi int, fn func(*MasterStatus)) {
	f.mu.Lock()
	fn(&f.status[mi])
	f.mu.Unlock()
}

// Run feeds until ctx ends, calling emit for every event, from one goroutine. It
// returns an error only when it cannot start (a master entry it cannot dial).
func (f *Feed) Run(ctx context.Context, emit func(Event)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan signal, 4096)
	names := make([]string, len(f.cfg.Masters))
	entries := make([]*entry, len(f.cfg.Masters))
	for i, m := range f.cfg.Masters {
		names[i] = m.Name
		dial, err := m.NodeDialer(f.timeout)
		if err != nil {
			return err
		}
		entries[i] = &entry{f: f, mi: i, mc: m, dial: dial, out: sigs, recheck: make(chan struct{}, 1)}
	}
	f.entries, f.marks = entries, map[*node]time.Time{}
	var hold *holder
	if f.cfg.AuditLog != "" {
		hold = &holder{emit: emit, forced: map[string]time.Time{}}
		emit = hold.add
		f.hold = hold
	}
	tr := NewTracker(names, f.cfg.Quorum(), f.cfg.Resource, emit, func(mi int, key string) {
		if n := entries[mi].nodeFor(key); n != nil {
			n.ask(key)
		}
	})
	tr.WatchStalls()
	tr.KeepValues(!f.noValues)
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() { defer wg.Done(); defer e.contain(ctx); e.run(ctx) }()
	}
	if f.cfg.AuditLog != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A bug in reading the audit log costs the force-released names only:
				// the ends it would have renamed go out as releases.
				_ = recover()
			}()
			watchAudit(ctx, f.cfg.AuditLog, sigs)
		}()
	}
	// The nodes end with ctx: cancelled before the wait, or a panic here (which
	// unwinds through this) would wait for them for ever.
	defer func() { cancel(); wg.Wait() }()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := tr.Next()
		if hold != nil {
			hold.flush(time.Now())
			if h := hold.next(); !h.IsZero() && (next.IsZero() || h.Before(next)) {
				next = h
			}
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
		} else {
			timer.Reset(time.Hour)
		}
		// Timers run on the stream's time: the receipt time of the signals handled so
		// far, and the clock only while no signal waits. A driver that falls behind
		// (a busy machine) must not decide an attempt before the changes that
		// complete it, already received, are handled.
		select {
		case <-ctx.Done():
			if hold != nil {
				hold.flush(time.Now().Add(forceHold)) // what is held goes out
			}
			return nil
		case now := <-timer.C:
			if len(sigs) == 0 {
				tr.Tick(now)
			}
		case s := <-sigs:
			f.handle(tr, s, emit)
			if !s.at.IsZero() && s.kind != sigMark && s.kind != sigForce {
				tr.Tick(s.at)
			}
		}
		if tr.WantsMoved() {
			f.wantMarks(tr)
		}
	}
}

// wantMarks passes the tracker's wish for marks on to every node.
func (f *Feed) wantMarks(tr *Tracker) {
	for mi, e := range f.entries {
		after, often := tr.MarkWanted(mi)
		e.want.after.Store(after)
		e.want.often.Store(often)
	}
}

// handle applies one node's signal to the tracker.
func (f *Feed) handle(tr *Tracker, s signal, emit func(Event)) {
	n := s.n
	if s.kind == sigForce {
		if f.hold != nil {
			f.hold.force(s.keys[0], s.at)
		}
		return
	}
	if f.onKeys != nil {
		switch s.kind {
		case sigInvalidate, sigVerify, sigChange:
			f.onKeys(n.mi, s.keys)
		case sigFlush:
			f.onKeys(n.mi, nil)
		}
		defer func() {
			if s.kind == sigGap || s.kind == sigSync || s.kind == sigDegraded {
				f.onKeys(n.mi, []string{}) // after the status changed
			}
		}()
	}
	switch s.kind {
	case sigInvalidate:
		for _, k := range s.keys {
			tr.Invalidate(n.mi, k, s.at)
		}
	case sigVerify:
		for _, k := range s.keys {
			tr.Verify(n.mi, k, s.at)
			if s.op != 0 {
				tr.Change(n.mi, k, s.op, s.at) // named: its invalidation is this change's
			}
		}
	case sigChange:
		tr.Change(n.mi, s.keys[0], s.op, s.at)
	case sigSource:
		f.setStatus(n.mi, func(st *MasterStatus) { st.Source, st.Note = s.source, s.reason })
	case sigFlush:
		tr.Flush(n.mi, n.owns, s.at)
	case sigRead:
		for i, k := range s.keys {
			if s.typed {
				tr.ReadTyped(n.mi, k, s.at, s.entries[i])
			} else {
				tr.ReadDone(n.mi, k, s.at, s.entries[i])
			}
		}
	case sigReadFailed:
		for _, k := range s.keys {
			tr.ReadFailed(n.mi, k)
		}
	case sigMark:
		tr.Late(n.mi, s.at, s.from)
		f.marks[n] = s.at
		low := s.at
		for _, m := range f.entries[n.mi].current() {
			if at, ok := f.marks[m]; ok && at.Before(low) {
				low = at
			}
		}
		tr.Mark(n.mi, low)
	case sigGap:
		tr.Gap(n.mi, n.owns)
		f.setStatus(n.mi, func(st *MasterStatus) { st.Up = false; st.Gaps++ })
		emit(Event{At: s.at, Event: Gap, Master: n.name, From: s.from, To: s.at, Reason: s.reason, Source: SourceTracking})
	case sigDegraded:
		f.setStatus(n.mi, func(st *MasterStatus) { st.Up = false; st.Degraded = s.reason; st.Source = SourcePoll })
		emit(Event{At: s.at, Event: Degraded, Master: n.name, Reason: s.reason + "; polled every " + n.poll.String() + " instead", Source: SourcePoll})
	case sigSyncStart:
		tr.SyncStart(n.mi, n.owns)
		n.found = 0
	case sigSyncPage:
		n.found += tr.SyncPage(n.mi, s.keys, s.entries, s.at, f.syncSource(n), s.first && !n.resumed)
		n.pageDone()
	case sigSync:
		quiet := s.first && !n.resumed
		ended, found := tr.SyncEnd(n.mi, n.owns, s.at, f.syncSource(n)), n.found
		if !n.degraded() {
			f.setStatus(n.mi, func(st *MasterStatus) { st.Up = true; st.Syncs++ })
		}
		if quiet || n.degraded() {
			return
		}
		reason := fmt.Sprintf("%s: %d keys read; %d lifecycles ended unseen, %d held found", s.reason, s.count, ended, found)
		if s.capped {
			reason += fmt.Sprintf("; stopped at max_keys %d: the rest is unseen", f.cfg.Inspect.MaxKeys)
		}
		emit(Event{At: s.at, Event: Resync, Master: n.name, Reason: reason, Source: SourcePoll})
	}
}

// syncSource is the source of what a whole read of n finds.
func (f *Feed) syncSource(n *node) string {
	if n.degraded() {
		return SourcePoll
	}
	return SourceTracking
}

// entry runs the nodes of one master entry: one for a plain master or a Sentinel
// group, one per shard master for a cluster (restarted when the slot map changes).
type entry struct {
	f    *Feed
	mi   int
	mc   config.MasterConfig
	dial config.Dialer
	out  chan<- signal

	mu    sync.Mutex
	nodes []*node

	// A cluster's keys of slots its map gives another node (sawForeign).
	foreignFirst, foreignLast time.Time
	recheck                   chan struct{} // cap 1: read the slot map again now
	want                      markWant      // the tracker's wish for marks, which its nodes follow
}

func (e *entry) newNode(name string, addr func(context.Context) (string, error), owns func(string) bool, resumed bool) *node {
	return &node{mi: e.mi, name: name, mc: e.mc, addr: addr, owns: owns, dial: e.dial, cfg: e.f.cfg,
		timeout: e.f.timeout, poll: max(e.f.cfg.Inspect.PollInterval, 100*time.Millisecond), out: e.out,
		wake: make(chan struct{}, 1), pages: make(chan struct{}, syncPages), resumed: resumed, want: &e.want}
}

// current returns the entry's nodes.
func (e *entry) current() []*node {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nodes
}

// nodeFor returns the node that holds key.
func (e *entry) nodeFor(key string) *node {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.nodes {
		if n.owns == nil || n.owns(key) {
			return n
		}
	}
	return nil
}

func (e *entry) run(ctx context.Context) {
	switch e.mc.Kind() {
	case config.KindCluster:
		e.runCluster(ctx)
	case config.KindSentinel:
		mc, timeout := e.mc, e.f.timeout
		e.start(ctx, []*node{e.newNode(mc.Name, func(ctx context.Context) (string, error) { return mc.Resolve(ctx, timeout) }, nil, false)})
		<-ctx.Done()
	default:
		addr := e.mc.Addr
		e.start(ctx, []*node{e.newNode(e.mc.Name, func(context.Context) (string, error) { return addr, nil }, nil, false)})
		<-ctx.Done()
	}
}

// start runs nodes (feed and reader each) until ctx ends, and waits for them.
func (e *entry) start(ctx context.Context, nodes []*node) *sync.WaitGroup {
	e.mu.Lock()
	e.nodes = nodes
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(2)
		go func() { defer wg.Done(); defer n.contain(ctx); n.runFeed(ctx) }()
		go func() { defer wg.Done(); defer n.contain(ctx); n.runReader(ctx) }()
	}
	return &wg
}

// runCluster follows a cluster's slot map: a feed per shard master; when the map
// changes, every shard's feed restarts, after a gap that says why. The map is read
// again every slotMapEvery, and at once when a node shows a key of a slot the map
// gives another node (see sawForeign): its changes are not passed on, so the gap
// starts from the last read that found the map unchanged (or from that key, if it
// came first). While the map stays as it was and such keys keep coming (a slot
// migrating), the entry is in a gap from the same point until the map changes, or
// until none has come for slotMapEvery, and the feeds restart.
func (e *entry) runCluster(ctx context.Context) {
	resumed := false
	var owners []string
	for ctx.Err() == nil {
		began := time.Now()
		dctx, cancel := context.WithTimeout(ctx, 2*e.f.timeout+time.Second)
		shards, err := topology.Discover(dctx, e.dial, e.mc.Cluster)
		cancel()
		if err != nil {
			if owners != nil {
				e.gap(ctx, time.Now(), "cluster: "+describe(err))
				owners = nil
			}
			sleep(ctx, backoffMax)
			continue
		}
		owners = topology.Owners(shards)
		confirmed := began // the map is known to have been owners from here on
		e.resetForeign()
		var nodes []*node
		for _, sh := range shards {
			addr := sh.Master
			n := e.newNode(e.mc.Name+"/"+addr, func(context.Context) (string, error) { return addr, nil }, clusterOwns(sh.Slots), resumed)
			n.foreign = e.sawForeign
			nodes = append(nodes, n)
		}
		nctx, stop := context.WithCancel(ctx)
		wg := e.start(nctx, nodes)
		reason := "cluster slot map changed: following it"
		migrating := false // a gap was reported while the feeds run
		for ctx.Err() == nil {
			wait := slotMapEvery
			if migrating {
				wait = time.Second
			}
			select {
			case <-ctx.Done():
				continue
			case <-time.After(wait):
			case <-e.recheck:
			}
			began := time.Now()
			dctx, cancel := context.WithTimeout(ctx, 2*e.f.timeout+time.Second)
			now, err := topology.Discover(dctx, e.dial, e.mc.Cluster)
			cancel()
			if err == nil && !slices.Equal(topology.Owners(now), owners) {
				break
			}
			first, last := e.foreignSeen()
			if first.IsZero() {
				if err == nil {
					confirmed = began
				}
				continue
			}
			if !migrating {
				e.gap(ctx, earliest(confirmed, first), "cluster: a node holds keys of slots the slot map gives another node (a slot migrating?); their changes are unseen until the map changes")
				migrating = true
			} else if time.Since(last) > slotMapEvery {
				reason = "cluster: no key of another node's slots seen for " + slotMapEvery.String() + ": reading every key again"
				break
			}
		}
		stop()
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		first, _ := e.foreignSeen()
		e.gap(ctx, earliest(confirmed, first), reason)
		resumed = true
	}
}

// earliest returns the earlier of confirmed and first, or confirmed when first is zero.
func earliest(confirmed, first time.Time) time.Time {
	if !first.IsZero() && first.Before(confirmed) {
		return first
	}
	return confirmed
}

// sawForeign notes that one of the entry's cluster nodes showed, at at, a key of a
// slot the feed's slot map gives another node (an invalidation, a notification or a
// whole read): the map is out of date, or a slot is migrating. runCluster reads the
// map again at once.
func (e *entry) sawForeign(at time.Time) {
	e.mu.Lock()
	if e.foreignFirst.IsZero() {
		e.foreignFirst = at
	}
	if at.After(e.foreignLast) {
		e.foreignLast = at
	}
	e.mu.Unlock()
	select {
	case e.recheck <- struct{}{}:
	default:
	}
}

// foreignSeen returns when the first and the latest such key were seen since the
// feeds last started (zero: none).
func (e *entry) foreignSeen() (first, last time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.foreignFirst, e.foreignLast
}

func (e *entry) resetForeign() {
	e.mu.Lock()
	e.foreignFirst, e.foreignLast = time.Time{}, time.Time{}
	e.mu.Unlock()
	select {
	case <-e.recheck:
	default:
	}
}

// gap reports the whole entry unseen from from until its nodes resync.
func (e *entry) gap(ctx context.Context, from time.Time, reason string) {
	n := &node{mi: e.mi, name: e.mc.Name}
	n.out = e.out
	n.send(ctx, signal{kind: sigGap, at: time.Now(), from: from, reason: reason})
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// contain turns a panic in an entry's own goroutine (which follows a cluster's slot
// map) into a gap on each of its nodes, kept until they next resync: their feeds run
// on, but a reshard is no longer followed, so what they deliver is not known whole.
func (e *entry) contain(ctx context.Context) {
	if rec := recover(); rec != nil {
		for _, n := range e.current() {
			n.send(ctx, signal{kind: sigGap, at: time.Now(), from: time.Now(), reason: fmt.Sprintf("internal error, please report it: %v; the slot map is no longer followed", rec)})
		}
	}
}

// contain turns a panic in one of n's goroutines into a gap that never closes: the
// node stops, named as such, and the rest of the feed runs on.
func (n *node) contain(ctx context.Context) {
	if rec := recover(); rec != nil {
		n.send(ctx, signal{kind: sigGap, at: time.Now(), from: time.Now(), reason: fmt.Sprintf("internal error, please report it: %v; this master's feed stopped", rec)})
	}
}
