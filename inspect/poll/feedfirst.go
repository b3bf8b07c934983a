package poll

// Feed-first polling (Poller.FeedFirst): where a master's live feed is up, the
// poller keeps that master's column of the key table from poll to poll instead of
// reading every key again. Each poll reads the master's clock (TIME, and INFO every
// health_every polls) and only the keys the feed said changed since the last poll; a
// held key's remaining time is counted down from the deadline read then (aged). The
// whole keyspace is read again at start, after every gap or resync of the feed
// (whatever the feed missed is in that read), and every reconcile interval as a
// reconciliation spread over the polls, paced so that its round trips take at most
// reconcileShare of the master's time. A read that finds a row the feed got wrong
// counts it, once no change of the key explains it, and the read's answer replaces
// it. Where the feed is down, degraded, or never up, the master is read whole every
// poll, as without a feed.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
)

// Mismatch kinds, as a reconciliation counts them (MismatchKinds, in order).
const (
	MismatchMissing = "missing" // the master holds a key the rows did not have
	MismatchGone    = "gone"    // the rows had a key the master does not hold
	MismatchValue   = "value"   // another value (or type) than the rows had
	MismatchTTL     = "ttl"     // another deadline (extended or shortened unseen)
)

// MismatchKinds are the kinds a reconciliation counts, in the order of Mismatches.
var MismatchKinds = []string{MismatchMissing, MismatchGone, MismatchValue, MismatchTTL}

const (
	// reconcileShare is the most of a master's time a paced reconciliation's round
	// trips take (their wall time, which bounds the server's own).
	reconcileShare = 0.02
	// ttlSlack is how far two reads' deadlines of an unchanged key may differ beyond
	// half of their round trips together: each deadline is taken from the middle of
	// its round trip, which a link slow one way moves by up to half of it.
	ttlSlack = 100 * time.Millisecond
	// suspectWait is how long a difference a read found waits for the feed to name
	// a change of its key (the change then explains it) before it is counted.
	suspectWait = 250 * time.Millisecond
	// maxChanged bounds the keys a master's feed may report between two polls: past
	// it the master is read whole instead.
	maxChanged = 1 << 20
)

// FeedState says how master mi's live feed stands: up (every change there is
// arriving) and how many times it has come up (a whole read of its keys after
// tracking was turned on; live.MasterStatus's Up and Syncs).
type FeedState func(mi int) (up bool, syncs int)

// MismatchLog hears each mismatch a reconciliation counts: on master (its name),
// key, of kind.
type MismatchLog func(master, key, kind string)

// feedFirst is a feed-first poller's state (see the file comment).
type feedFirst struct {
	state FeedState
	log   MismatchLog
	every time.Duration
	wake  chan struct{}
	kept  *collector // the key table kept from poll to poll (Poller.mu)
	// allFed: every master of the last poll was read from its feed and answered;
	// rates are the clock rates of the last PollStream (Deltas judge with them).
	allFed bool
	rates  []float64

	mu sync.Mutex // changed, flushed and suspects of every fedMaster
	ms []*fedMaster
}

// fedMaster is what a feed-first poller keeps of one master.
type fedMaster struct {
	// Under feedFirst.mu.
	changed  map[string]struct{} // keys the feed named since the last poll took them
	flushed  bool                // the feed saw the database flushed
	suspects map[string]suspect  // differences waiting for suspectWait

	// Under Poller.mu.
	syncs     int     // the feed's Syncs the column was read whole under (-1: none)
	fed       bool    // the last poll kept the column from the feed
	capped    bool    // the last whole read stopped at max_keys
	recon     *column // the reconciliation in progress (nil: none)
	credit    time.Duration
	stepAt    time.Time // when the reconciliation's credit was last added to
	nextRecon time.Time

	counts [4]atomic.Uint64 // by MismatchKinds
}

type suspect struct {
	kind string
	at   time.Time
}

// column is a whole read of one master's column in progress: which entries it has
// seen (read present, or read and found absent), where its SCAN stands, and, when it
// is compared with what the column held, where to report a difference.
type column struct {
	whole   bool // the master is read whole in this poll: every batch is compared
	seen    []uint64
	check   func(key, kind string) // nil: not compared
	pattern int
	cursor  string
	scanned int
}

func (c *column) see(e int32) {
	w := int(e) >> 6
	if w >= len(c.seen) {
		c.seen = append(c.seen, make([]uint64, w+1-len(c.seen))...)
	}
	c.seen[w] |= 1 << (uint(e) & 63)
}

func (c *column) saw(e int32) bool {
	w := int(e) >> 6
	return w < len(c.seen) && c.seen[w]&(1<<(uint(e)&63)) != 0
}

// fedRead is what one poll reads of a fed master besides its clock.
type fedRead struct {
	clockless bool          // a Delta's read: no TIME, no INFO
	keys      [][]byte      // the keys the feed said changed
	recon     *column       // a reconciliation to advance (nil: none)
	credit    time.Duration // how long its round trips may take in this poll
	done      bool          // the reconciliation read its last page
	capped    bool          // it stopped at max_keys
}

// FeedFirst makes p keep its rows from the live feed where a master's feed is up
// (see the file comment): state says how each master's feed stands, every is the
// reconcile interval (inspect.reconcile_interval), log hears each mismatch counted.
// The feed's changes reach p through Changed. Call it before polling; it returns p.
// A feed-first poller's streams are read before the next poll starts (serve's are):
// the next poll changes the tables they build their rows from.
func (p *Poller) FeedFirst(state FeedState, every time.Duration, log MismatchLog) *Poller {
	p.mu.Lock()
	defer p.mu.Unlock()
	ff := &feedFirst{state: state, log: log, every: every, wake: make(chan struct{}, 1)}
	for range p.cfg.Masters {
		ff.ms = append(ff.ms, &fedMaster{changed: map[string]struct{}{}, syncs: -1})
	}
	p.ff = ff
	return p
}

// Changed records that master mi's feed said keys changed (nil: the whole database
// was flushed; empty: none, but the feed's state changed), for the next poll to read,
// and wakes Woken. It never blocks on a poll.
func (p *Poller) Changed(mi int, keys []string) {
	ff := p.ff
	if ff == nil || mi < 0 || mi >= len(ff.ms) {
		return
	}
	fm := ff.ms[mi]
	ff.mu.Lock()
	if keys == nil || len(fm.changed)+len(keys) > maxChanged {
		fm.flushed = true
		clear(fm.changed)
	} else {
		for _, k := range keys {
			fm.changed[k] = struct{}{}
			delete(fm.suspects, k) // the change explains what a read found
		}
	}
	ff.mu.Unlock()
	select {
	case ff.wake <- struct{}{}:
	default:
	}
}

// Woken returns a channel that receives when the feed has reported a change since
// it last received (nil unless FeedFirst): a poll then shows it.
func (p *Poller) Woken() <-chan struct{} {
	if p.ff == nil {
		return nil
	}
	return p.ff.wake
}

// Mismatches returns, per master (config order), the mismatches reconciliations have
// counted, by MismatchKinds (nil unless FeedFirst).
func (p *Poller) Mismatches() [][]uint64 {
	if p.ff == nil {
		return nil
	}
	p.ff.countSuspects(time.Now(), p.cfg)
	out := make([][]uint64, len(p.ff.ms))
	for i, fm := range p.ff.ms {
		out[i] = make([]uint64, len(MismatchKinds))
		for k := range MismatchKinds {
			out[i][k] = fm.counts[k].Load()
		}
	}
	return out
}

// AllFed reports whether the last poll kept every master's rows from its feed (false
// unless FeedFirst): such a poll read nothing from the masters, and only judged every
// row again (see NextWhole).
func (p *Poller) AllFed() bool {
	fed := p.Fed()
	return len(fed) > 0 && !slices.Contains(fed, false)
}

// WholeShare bounds the share of a feed-first caller's time (serve's, the console's)
// that whole polls of fed masters take: see NextWhole.
const WholeShare = 4

// NextWhole is how long after the start of a whole poll that took took the next one
// is due, at poll_interval interval: where every master was fed (AllFed), the interval
// or WholeShare times as long as that poll took, whichever is later, so that one that
// takes longer than the interval (a million keys) does not run back to back with the
// next and a change is polled alone at once rather than after it; otherwise the
// interval (a master polled keeps its pace).
func NextWhole(interval, took time.Duration, allFed bool) time.Duration {
	if !allFed {
		return interval
	}
	return max(interval, WholeShare*took)
}

// WakeSettle is the least time from the first change a feed-first caller is told of
// (Woken) to the poll that reads it: a lock's write reaches its masters within a few
// milliseconds of each other (one after another, or pipelined), and a Delta read at
// its first invalidation would find it on one master, showing the rest only a poll
// later.
const WakeSettle = 10 * time.Millisecond

// Fed reports, per master, whether the last poll kept its rows from the feed (nil
// unless FeedFirst).
func (p *Poller) Fed() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ff == nil {
		return nil
	}
	out := make([]bool, len(p.ff.ms))
	for i, fm := range p.ff.ms {
		out[i] = fm.fed
	}
	return out
}

// checker returns the function that takes a difference a read of master mi found.
func (ff *feedFirst) checker(mi int) func(key, kind string) {
	fm := ff.ms[mi]
	return func(key, kind string) {
		ff.mu.Lock()
		defer ff.mu.Unlock()
		if _, pending := fm.changed[key]; pending || fm.flushed {
			return // a change the feed named, not read yet: not the feed's error
		}
		if fm.suspects == nil {
			fm.suspects = map[string]suspect{}
		}
		if _, ok := fm.suspects[key]; !ok {
			fm.suspects[key] = suspect{kind: kind, at: time.Now()}
		}
	}
}

// countSuspects counts (and logs) the differences that no change of their key has
// explained within suspectWait.
func (ff *feedFirst) countSuspects(now time.Time, cfg *config.Config) {
	type found struct {
		mi        int
		key, kind string
	}
	var out []found
	ff.mu.Lock()
	for mi, fm := range ff.ms {
		for k, s := range fm.suspects {
			if now.Sub(s.at) >= suspectWait {
				out = append(out, found{mi, k, s.kind})
				delete(fm.suspects, k)
			}
		}
	}
	pending := false
	for _, fm := range ff.ms {
		pending = pending || len(fm.suspects) > 0
	}
	ff.mu.Unlock()
	if pending {
		// Counted by the poll woken once they are due, or a Mismatches before it.
		time.AfterFunc(suspectWait, func() {
			select {
			case ff.wake <- struct{}{}:
			default:
			}
		})
	}
	slices.SortFunc(out, func(a, b found) int {
		if a.mi != b.mi {
			return a.mi - b.mi
		}
		if a.key < b.key {
			return -1
		}
		return 1
	})
	for _, f := range out {
		ff.ms[f.mi].counts[slices.Index(MismatchKinds, f.kind)].Add(1)
		if ff.log != nil {
			ff.log(cfg.Masters[f.mi].Name, f.key, f.kind)
		}
	}
}

// keptNeeded reports whether a poll starting now uses the kept table: a master's
// column is kept from its feed (read under the feed's current Syncs, the feed still
// up), compared with a whole read (the last poll kept it), or being reconciled.
func (ff *feedFirst) keptNeeded(cfg *config.Config) bool {
	for mi, fm := range ff.ms {
		if fm.fed || fm.recon != nil {
			return true
		}
		if up, sy := ff.state(mi); up && fm.syncs >= 0 && fm.syncs == sy && cfg.Masters[mi].Kind() == config.KindAddr {
			return true
		}
	}
	return false
}

// collectFed is collect for a feed-first poller: fed masters' changed keys (and a
// reconciliation's pages) into the kept table, the others read whole into it.
func (p *Poller) collectFed(ctx context.Context) ([]*masterRead, *collector) {
	ff, n := p.ff, len(p.cfg.Masters)
	now := time.Now()
	ff.countSuspects(now, p.cfg)
	c := ff.kept
	for _, st := range p.ms {
		if st.busy.Load() {
			c = nil // a straggler of an earlier poll may still write to it
			break
		}
	}
	if c != nil && !ff.keptNeeded(p.cfg) {
		// Nothing of the kept table is used by this poll: every master is read whole
		// and compared with nothing (at start, until the feeds are up). Its memory
		// holds the new table instead of a copy beside it (compact): at 5 × 1M keys,
		// about 150 MB off serve's peak.
		if !c.out {
			p.spare = c.recycle(&RowPlan{})
		}
		c = nil
	}
	switch {
	case c != nil && (c.needsCompacting() || c.out && !p.deltaRead):
		// A stream of the last poll that was not recycled may still build rows from
		// these tables (the console draws them, dump --watch's carry.Tracker keeps
		// its plan): the poll writes a copy. A PollDelta writes in place (see there).
		c = c.compact(ff)
	case c != nil && p.deltaCopy:
		// A PollDeltaOf's caller builds rows from them meanwhile: a flat copy, which
		// costs a few ms at 100k keys where compact rebuilds the index.
		c = c.clone()
	}
	if c == nil {
		c = newCollectorIn(p.cfg, p.spare)
		p.spare = nil
		c.reserve(p.keys)
		c.kept, c.fresh, c.cols = true, make([]int32, n), make([]*column, n)
		for _, fm := range ff.ms {
			fm.syncs, fm.fed, fm.recon = -1, false, nil
		}
	} else {
		c.reopen(now)
	}
	ff.kept = c
	ff.allFed = true

	plans := make([]*fedRead, n)
	syncs := make([]int, n) // the feed's Syncs when the poll began (-1: not up)
	for mi, fm := range ff.ms {
		up, sy := ff.state(mi)
		syncs[mi] = -1
		if up {
			syncs[mi] = sy
		}
		ff.mu.Lock()
		changed, flushed := fm.changed, fm.flushed
		fm.changed, fm.flushed = map[string]struct{}{}, false
		ff.mu.Unlock()
		if p.cfg.Masters[mi].Kind() == config.KindAddr && up && fm.syncs == sy && !flushed {
			fr := &fedRead{keys: make([][]byte, 0, len(changed)), clockless: p.deltaRead}
			for k := range changed {
				fr.keys = append(fr.keys, []byte(k))
			}
			if fm.recon == nil && !now.Before(fm.nextRecon) {
				fm.recon = &column{cursor: "0", check: ff.checker(mi)}
				fm.stepAt, fm.credit = time.Time{}, 0
			}
			if fm.recon != nil {
				if !fm.stepAt.IsZero() {
					fm.credit += time.Duration(reconcileShare * float64(now.Sub(fm.stepAt)))
				} else {
					fm.credit = time.Millisecond // the first page
				}
				fm.credit = min(fm.credit, p.cfg.Inspect.Timeout/4)
				fm.stepAt = now
				fr.recon, fr.credit = fm.recon, fm.credit
			}
			c.cols[mi] = fm.recon
			plans[mi] = fr
			continue
		}
		// Read whole: compared with the column where the feed kept it until now.
		col := &column{whole: true}
		if fm.fed {
			// The keys the feed reported are no mismatch, whatever the read finds.
			check := ff.checker(mi)
			col.check = func(key, kind string) {
				if _, reported := changed[key]; !reported {
					check(key, kind)
				}
			}
		}
		c.cols[mi], fm.recon = col, nil
	}
	p.fedPlans = plans
	reads := p.read(ctx, c)
	p.fedPlans = nil
	c.close()
	p.keys = c.entries()

	for mi, fm := range ff.ms {
		r, col := reads[mi], c.cols[mi]
		c.cols[mi] = nil
		up, sy := ff.state(mi)
		still := syncs[mi] >= 0 && up && sy == syncs[mi]
		if fr := plans[mi]; fr != nil {
			fm.credit = fr.credit
			if r.err != nil || !still {
				fm.syncs, fm.fed, fm.recon = -1, false, nil // read whole next time
				ff.allFed = false
				continue
			}
			fm.fed = true
			if fr.done {
				if !fr.capped {
					c.sweep(mi, col, now)
				}
				fm.capped, fm.recon = fr.capped, nil
				fm.nextRecon = time.Now().Add(ff.every)
			}
			r.capped = fm.capped
			continue
		}
		fm.fed, ff.allFed = false, false
		if r.err != nil {
			fm.syncs = -1 // its rows are hidden (down); read whole again next time
			continue
		}
		c.sweep(mi, col, now)
		fm.capped = r.capped
		fm.syncs = -1
		if still {
			fm.syncs, fm.nextRecon = syncs[mi], time.Now().Add(ff.every)
		}
	}
	ff.countSuspects(time.Now(), p.cfg) // none due yet: a wake for when they are
	return reads, c
}

// readFed reads a fed master: its clock (and health) as readMaster does, then the
// keys its feed said changed, then as many pages of its reconciliation as fr's credit
// allows, over the kept key-reading connection, each round trip of the keys within
// its own inspect.timeout (live), as a whole read's.
func readFed(t target, cfg *config.Config, deadline time.Time, wantHealth bool, raw **wire.Conn, mi int, col *collector, fr *fedRead, live *wire.Liveness) *masterRead {
	res := &masterRead{}
	if !fr.clockless {
		res = readMaster(t, cfg, deadline, wantHealth, raw, mi, nil, nil)
		if res.err != nil {
			return res
		}
	} else if len(fr.keys) == 0 && fr.recon == nil {
		return res // nothing to read
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	rc := *raw
	*raw = nil
	if rc == nil {
		var err error
		if rc, err = wire.Dial(ctx, t.mc); err != nil {
			res.err = fmt.Errorf("connect: %w", err)
			return res
		}
	}
	rc.SetLive(live)
	if live == nil {
		if err := rc.SetDeadline(deadline); err != nil {
			rc.Close()
			res.err = fmt.Errorf("connect: %w", err)
			return res
		}
	}
	m := &masterScan{rc: rc, cfg: cfg, res: res, col: col, mi: mi, t: t}
	err := m.readFed(fr)
	rc.SetLive(nil)
	if err != nil {
		rc.Close()
		if errors.Is(err, context.DeadlineExceeded) || wire.IsTimeout(err) {
			err = fmt.Errorf("no answer within %v", cfg.Inspect.Timeout)
		}
		res.err = fmt.Errorf("read keys: %w", err)
		return res
	}
	*raw = rc
	return res
}

// readFed reads fr's changed keys, then its reconciliation's pages while its credit
// lasts. Keys that exist but are not strings are read (TYPE) after each batch.
func (m *masterScan) readFed(fr *fedRead) error {
	chunk := max(m.cfg.Inspect.ScanCount, 100)
	if len(fr.keys) > 0 {
		m.col.clearKeys(m.mi, fr.keys)
	}
	for lo := 0; lo < len(fr.keys); lo += chunk {
		if err := m.readBatch(fr.keys[lo:min(lo+chunk, len(fr.keys))], false, false); err != nil {
			return err
		}
	}
	r := fr.recon
	if r == nil {
		return nil
	}
	patterns := m.cfg.Inspect.Patterns
	count := strconv.Itoa(m.cfg.Inspect.ScanCount)
	m.res.scanned = r.scanned
	for fr.credit > 0 && !fr.done {
		t0 := time.Now()
		if len(patterns) == 0 {
			fr.done = true
			break
		}
		m.rc.Cmd("SCAN", r.cursor, "MATCH", patterns[r.pattern], "COUNT", count)
		if err := m.rc.Flush(); err != nil {
			return err
		}
		m.round++
		next, keys, err := m.recvScan()
		if err != nil {
			return fmt.Errorf("SCAN: %w", err)
		}
		keys = keys[:m.page(len(keys))]
		if len(keys) > 0 {
			if err := m.readBatch(keys, true, true); err != nil {
				return err
			}
		}
		fr.credit -= time.Since(t0)
		r.cursor = next
		if next == "0" {
			if r.pattern++; r.pattern >= len(patterns) {
				fr.done = true
			}
		}
		if m.res.capped {
			fr.done, fr.capped = true, true
		}
	}
	r.scanned = m.res.scanned
	m.res.scanned, m.res.capped = 0, false
	return nil
}

// readBatch reads keys (MGET and PTTL in one round trip, then TYPE for those that are
// not strings) into the collector; check: a reconciliation's, compared with the
// column.
func (m *masterScan) readBatch(keys [][]byte, check, fromScan bool) error {
	m.sendBatch(keys)
	t0 := time.Now()
	if err := m.rc.Flush(); err != nil {
		return err
	}
	kb, err := m.recvBatch(keys)
	if err != nil {
		return err
	}
	kb.check = check
	if err := m.addRead(t0, kb, fromScan); err != nil {
		return err
	}
	if len(m.odd) == 0 {
		return nil
	}
	odd := m.odd
	m.odd = nil
	t0 = time.Now()
	kb, err = m.readOdd(odd)
	if err != nil {
		return err
	}
	kb.check = check
	return m.addRead(t0, kb, false)
}

// aged returns a PTTL read at at, and that instant, moved on to now: the time left
// until the same deadline, as if read then (whole milliseconds, so that the deadline
// stays where it was). A key without a TTL is returned as it is.
func (c *collector) aged(pttl int64, at, now time.Time) (int64, time.Time) {
	if pttl < 0 {
		return pttl, at
	}
	el := now.Sub(at).Milliseconds()
	if el <= 0 {
		return pttl, at
	}
	return max(pttl-el, 0), at.Add(time.Duration(el) * time.Millisecond)
}

// expired reports whether cell cl of master mi had reached its deadline, as read, by
// now.
func (c *collector) expired(cl cell, mi int, now time.Time) bool {
	return cl.pttl >= 0 && cl.batch >= 0 && !c.batchAt[mi][cl.batch].Add(time.Duration(cl.pttl)*time.Millisecond).After(now)
}

// reopen opens a kept collector to a new poll's batches at now: the batches so far are
// aged from here on, and a key whose deadline has passed is gone (the server expires
// it then; its invalidation may come later).
func (c *collector) reopen(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = false
	// Each batch's age: a cell read in it has expired (see expired) when its PTTL is
	// no more, compared without a time.Time per cell (a Delta's cost at 100k keys).
	ages := make([][]time.Duration, c.n)
	for mi := range c.n {
		c.fresh[mi] = int32(len(c.batchAt[mi]))
		ages[mi] = make([]time.Duration, len(c.batchAt[mi]))
		for b, at := range c.batchAt[mi] {
			ages[mi][b] = now.Sub(at)
		}
	}
	mi := -1
	for ci, pk := range c.cells {
		if mi++; mi == c.n {
			mi = 0
		}
		if pk == emptyPacked || (pk&3 != packedWide && int64(pk)>>24 < 0) {
			continue // absent, or no TTL
		}
		pttl, b := int64(pk)>>24, int32(pk>>2&(1<<packedBatchBits-1))-1
		if pk&3 == packedWide {
			cl := c.wide[ci]
			pttl, b = cl.pttl, cl.batch
		}
		if pttl >= 0 && b >= 0 && time.Duration(pttl)*time.Millisecond <= ages[mi][b] {
			c.clearCell(ci)
		}
	}
}

// clearCell makes cell ci absent.
func (c *collector) clearCell(ci int) {
	c.markDirty(int32(ci / c.n))
	c.setCell(ci, emptyCell)
	if len(c.odd) > 0 {
		delete(c.odd, ci)
	}
	c.churn++
}

// clearKeys makes master mi's cells of keys absent (they are about to be read again)
// and marks them seen by the column's read in progress.
func (c *collector) clearKeys(mi int, keys [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.cols[mi]
	for _, k := range keys {
		e, _ := c.index.find(c.index.hash(k), k, c)
		if e < 0 {
			continue
		}
		if col != nil {
			col.see(e)
		}
		if ci := int(e)*c.n + mi; c.cells[ci] != emptyPacked {
			c.clearCell(ci)
		}
	}
}

// sweep ends a whole read of master mi's column: what it did not see is no longer
// there, a difference when the read is compared (unless its deadline had passed).
func (c *collector) sweep(mi int, col *column, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := range int32(len(c.keys)) {
		ci := int(e)*c.n + mi
		if c.cells[ci] == emptyPacked || col.saw(e) {
			continue
		}
		if col.check != nil && !c.expired(c.cell(ci), mi, now) {
			col.check(c.key(e), MismatchGone)
		}
		c.clearCell(ci)
	}
}

// valueOf returns the value of cell cl of entry e ("" for none).
func (c *collector) valueOf(e int32, cl cell) string {
	switch {
	case cl.val == 1:
		return c.firstVal(e)
	case cl.val >= 2:
		return c.others[cl.val-2]
	}
	return ""
}

// differs compares what cell ci (master mi) holds with a read at at, in a round trip
// of rtt, of pttl, value v and type typ, and returns the kind of difference ("" for
// none).
func (c *collector) differs(ci, mi int, at time.Time, rtt time.Duration, pttl int64, v []byte, typ string) string {
	old := c.cell(ci)
	if old.pttl == -2 {
		return MismatchMissing
	}
	oldTyp := inspect.TypeString
	if o, ok := c.odd[ci]; ok {
		oldTyp = o.typ
	}
	if oldTyp != typ || c.valueOf(int32(ci/c.n), old) != string(v) {
		return MismatchValue
	}
	if (old.pttl == -1) != (pttl == -1) {
		return MismatchTTL
	}
	if pttl >= 0 && old.batch >= 0 {
		d := c.batchAt[mi][old.batch].Add(time.Duration(old.pttl) * time.Millisecond).Sub(at.Add(time.Duration(pttl) * time.Millisecond))
		if slack := ttlSlack + (c.batchRTT[mi][old.batch]+rtt)/2; d > slack || d < -slack {
			return MismatchTTL
		}
	}
	return ""
}

// clone returns a copy of kept collector c that can be written while c is read (c
// is not written again): its tables copied as they are, and its arena's chunks
// shared, never written nor recycled through the copy (arena.share).
func (c *collector) clone() *collector {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := &collector{cfg: c.cfg, n: c.n, closed: c.closed, nconf: c.nconf, kept: true, churn: c.churn, tallied: c.tallied}
	d.index = keyIndex{seed: c.index.seed, slots: slices.Clone(c.index.slots), used: c.index.used}
	d.keys, d.first, d.cells, d.others = slices.Clone(c.keys), slices.Clone(c.first), slices.Clone(c.cells), slices.Clone(c.others)
	d.wide, d.odd, d.fence = maps.Clone(c.wide), maps.Clone(c.odd), maps.Clone(c.fence)
	d.arena = c.arena.share()
	d.batchAt, d.batchRTT, d.batchShard = cloneEach(c.batchAt), cloneEach(c.batchRTT), cloneEach(c.batchShard)
	d.shardRates, d.keyDown = slices.Clone(c.shardRates), slices.Clone(c.keyDown)
	d.fresh, d.cols = slices.Clone(c.fresh), slices.Clone(c.cols)
	d.dirty, d.dirtyBits, d.contrib = slices.Clone(c.dirty), slices.Clone(c.dirtyBits), slices.Clone(c.contrib)
	return d
}

// cloneEach returns a copy of s and of each of its slices.
func cloneEach[T any](s [][]T) [][]T {
	out := make([][]T, len(s))
	for i, x := range s {
		out[i] = slices.Clone(x)
	}
	return out
}

// needsCompacting reports whether a kept collector holds more written-over cells,
// dead entries and values than it is worth copying out of (compact), or a master's
// batch list has grown long.
func (c *collector) needsCompacting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.batchAt {
		if len(b) > 4096 {
			return true
		}
	}
	return c.churn > len(c.keys)/2+4096
}

// compact returns a kept collector with c's present cells only: entries that some
// master holds (and the configured resources), their values, the batches they were
// read in. It is local work, no read. The reconciliations in progress follow their
// entries.
func (c *collector) compact(ff *feedFirst) *collector {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := newCollectorIn(c.cfg, nil)
	d.kept, d.fresh, d.cols = true, make([]int32, c.n), make([]*column, c.n)
	d.fence = c.fence
	copy(d.shardRates, c.shardRates)
	copy(d.keyDown, c.keyDown)
	bmap := make([][]int32, c.n)
	for mi := range c.n {
		bmap[mi] = make([]int32, len(c.batchAt[mi]))
		for i := range bmap[mi] {
			bmap[mi][i] = -1
		}
	}
	recons := make([]*column, c.n)
	seen := make([][]uint64, c.n)
	for mi, fm := range ff.ms {
		recons[mi] = fm.recon
	}
	for e := range int32(len(c.keys)) {
		live := int(e) < c.nconf
		for mi := 0; mi < c.n && !live; mi++ {
			live = c.cells[int(e)*c.n+mi] != emptyPacked
		}
		if !live {
			continue
		}
		k := []byte(c.key(e))
		h := d.index.hash(k)
		e2, slot := d.index.find(h, k, d)
		if e2 < 0 {
			e2 = d.newEntry(d.arena.ref(k))
			d.index.insert(h, slot, e2, d)
		}
		for mi := range c.n {
			ci, ci2 := int(e)*c.n+mi, int(e2)*c.n+mi
			if r := recons[mi]; r != nil && r.saw(e) {
				tmp := column{seen: seen[mi]}
				tmp.see(e2)
				seen[mi] = tmp.seen
			}
			cl := c.cell(ci)
			if cl.pttl == -2 {
				continue
			}
			if b := cl.batch; b >= 0 {
				if bmap[mi][b] < 0 {
					bmap[mi][b] = int32(len(d.batchAt[mi]))
					d.batchAt[mi] = append(d.batchAt[mi], c.batchAt[mi][b])
					d.batchRTT[mi] = append(d.batchRTT[mi], c.batchRTT[mi][b])
					d.batchShard[mi] = append(d.batchShard[mi], c.batchShard[mi][b])
				}
				cl.batch = bmap[mi][b]
			}
			cl.val = d.value(e2, []byte(c.valueOf(e, cl)))
			d.setCell(ci2, cl)
			if o, ok := c.odd[ci]; ok {
				if d.odd == nil {
					d.odd = map[int]oddCell{}
				}
				d.odd[ci2] = o
			}
		}
	}
	for mi, r := range recons {
		if r != nil {
			r.seen = seen[mi]
		}
	}
	return d
}
