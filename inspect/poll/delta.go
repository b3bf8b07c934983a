package poll

import (
	"context"
	"slices"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// Delta is a feed-first poll (PollDelta) that read, on masters that all answered the
// last poll and whose feeds are all up, only the keys their feeds said changed (no
// clock, no health), and judged only the rows those keys, and the configured
// resources, make: what changed since the last poll whose rows were all handed out
// (Stream.Each or EachAt), or since the Delta before. A consumer that keeps counts
// of that poll's rows adds Rows and Anomalies to them.
type Delta struct {
	TakenAt time.Time
	// Rows is the change of each row count of the summary (Resources, Held, ... and
	// SingleSummary's), negative where there are fewer; MastersUp and Findings are 0.
	Rows inspect.Summary
	// Anomalies is the change of the number of rows carrying each anomaly code.
	Anomalies map[string]int
	// Configured are the configured resources' rows, judged now.
	Configured []inspect.Resource
	// Unanswered names the masters (in config order) whose read of their changes
	// failed or timed out. A Delta that names any carries nothing else: its rows are
	// left to the next whole poll (FullDue), and each named master missed a poll.
	Unanswered []string

	// PollDeltaOf's Delta also carries what turns the rows of the stream it was asked
	// of (st) into the poll's rows as of the Delta. Stream is those rows, built from a
	// copy of st's tables (st still builds its own): st's Snapshot taken at TakenAt,
	// its row counts moved by Rows, all else as st's (a Delta reads no clock and no
	// health). Dropped are the indices (Row's, ascending) of st's rows the Delta
	// judged again, each now gone or in Built. Judged are the indices (ascending) in
	// Stream of the rows the Delta judged, and Built those rows as Stream.Row builds
	// them; Stream's other rows are st's but Dropped, in the same order.
	Stream  *Stream
	Dropped []int
	Judged  []int
	Built   []inspect.Resource
}

// contribution is what one row adds to a poll's counts, in 16 bits (a collector keeps
// one per entry: contrib): bit 0 it is a row; bits 1-3 its state (1 + its index in
// contribStates; 0 for another); bit 4 single scope; bits 5-8 its anomaly codes (by
// contribAnomalies).
type contribution uint16

var (
	contribStates    = []string{inspect.StateHeld, inspect.StatePartial, inspect.StateSplit, inspect.StateNoTTL, inspect.StateForeign, inspect.StateFree, inspect.StateSemaphore}
	contribAnomalies = []string{inspect.AnomalyStray, inspect.AnomalyNoTTL, inspect.AnomalyWrongType, inspect.AnomalyTTLSpread}
)

// contributionOf returns r's contribution.
func contributionOf(r *inspect.Resource) contribution {
	v := contribution(1)
	if i := slices.Index(contribStates, r.State); i >= 0 {
		v |= contribution(i+1) << 1
	}
	if r.Scope == locks.ScopeSingle {
		v |= 1 << 4
	}
	for _, a := range r.Anomalies {
		if i := slices.Index(contribAnomalies, a.Code); i >= 0 {
			v |= 1 << (5 + i)
		}
	}
	return v
}

// addTo adds v's contribution, sign times (1 or -1), to sum and anomalies.
func (v contribution) addTo(sum *inspect.Summary, anomalies map[string]int, sign int) {
	if v&1 == 0 {
		return
	}
	row := inspect.Resource{Scope: locks.ScopeRedlock}
	if s := int(v>>1&7) - 1; s >= 0 {
		row.State = contribStates[s]
	}
	if v&(1<<4) != 0 {
		row.Scope = locks.ScopeSingle
	}
	var one inspect.Summary
	inspect.CountRows(&one, []inspect.Resource{row})
	addRowCounts(sum, &one, sign)
	for i, code := range contribAnomalies {
		if v&(1<<(5+i)) != 0 {
			anomalies[code] += sign
		}
	}
}

// markDirty notes that entry e's cells changed in the poll being read.
func (c *collector) markDirty(e int32) {
	w := int(e) >> 6
	if w >= len(c.dirtyBits) {
		c.dirtyBits = append(c.dirtyBits, make([]uint64, w+1-len(c.dirtyBits))...)
	}
	if c.dirtyBits[w]&(1<<(uint(e)&63)) == 0 {
		c.dirtyBits[w] |= 1 << (uint(e) & 63)
		c.dirty = append(c.dirty, e)
	}
}

// resetDirty forgets which entries changed.
func (c *collector) resetDirty() {
	for _, e := range c.dirty {
		c.dirtyBits[int(e)>>6] = 0
	}
	c.dirty = c.dirty[:0]
}

// canDelta reports whether the next poll may be a Delta: the kept table's rows were
// all handed out since its last plan, every master answered the last poll from its
// feed, and every feed is still up as it was.
func (p *Poller) canDelta() bool {
	ff := p.ff
	c := ff.kept
	if c == nil || !c.tallied || !ff.allFed || c.needsCompacting() {
		return false
	}
	for mi, fm := range ff.ms {
		if p.ms[mi].busy.Load() {
			return false
		}
		up, sy := ff.state(mi)
		ff.mu.Lock()
		flushed := fm.flushed
		ff.mu.Unlock()
		if !up || sy != fm.syncs || flushed {
			return false
		}
	}
	return true
}

// PollDelta polls as a Delta when it can (see Delta), and returns nil when it cannot
// (nothing was read then, or what was read is left to the next poll: PollStream). A
// master that did not answer is named in a Delta of nothing else (Unanswered): a
// silence that begins and ends between two whole polls is seen only there. A
// feed-first poller's only. It writes the kept tables in place: no stream of them
// may be read any more (serve, the one caller, tallies each poll's rows before it
// asks for one, and keeps none of them).
func (p *Poller) PollDelta(ctx context.Context) *Delta {
	return p.pollDelta(ctx, nil)
}

// PollDeltaOf is PollDelta for a caller that keeps st, the stream whose rows it
// handed out last (a PollStream's, every row handed out, or the Stream of the Delta
// before), and builds rows from it while the Delta is read (the console draws from
// it): the Delta is read into a copy of st's tables, and carries st's rows as of the
// Delta (Stream, Dropped, Judged, Built). It returns nil where PollDelta would, and
// where st is not the stream of the poller's kept tables (a snapshot's: StreamOf).
// The copy is local work: at 5 × 100k keys, a few ms.
func (p *Poller) PollDeltaOf(ctx context.Context, st *Stream) *Delta {
	if st == nil || st.Plan == nil {
		return nil
	}
	return p.pollDelta(ctx, st)
}

// pollDelta is PollDelta, or PollDeltaOf st when st is not nil.
func (p *Poller) pollDelta(ctx context.Context, st *Stream) *Delta {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ff == nil || !p.canDelta() || st != nil && st.Plan.c != p.ff.kept {
		return nil
	}
	p.deltaRead, p.deltaCopy = true, st != nil
	reads, c := p.collectFed(ctx)
	p.deltaRead, p.deltaCopy = false, false
	now := time.Now()
	var unanswered []string
	for mi, r := range reads {
		if r != nil && r.err != nil {
			unanswered = append(unanswered, p.cfg.Masters[mi].Name)
		}
	}
	if ctx.Err() != nil || len(unanswered) > 0 || !p.ff.allFed || c != p.ff.kept || !c.tallied {
		c.tallied = false
		if ctx.Err() == nil && len(unanswered) > 0 {
			return &Delta{TakenAt: now, Unanswered: unanswered}
		}
		return nil
	}
	n := c.n
	pl := &RowPlan{c: c, now: now, down: make([]string, n), kinds: make([]errkind.Kind, n), rates: p.ff.rates, p: p.params}
	d := &Delta{TakenAt: now, Anomalies: map[string]int{}}
	dirty := c.dirty
	for e := range int32(c.nconf) {
		if int(e) >= len(c.dirtyBits)*64 || c.dirtyBits[int(e)>>6]&(1<<(uint(e)&63)) == 0 {
			dirty = append(dirty, e)
		}
	}
	folds := c.folds(pl.down, pl.kinds)
	scratch := inspect.Resource{Nodes: make([]inspect.Node, n)}
	for _, e := range dirty {
		if c.row(e, pl.down, pl.kinds, folds, &scratch) {
			pl.keep = append(pl.keep, e)
		}
	}
	rows := make([]inspect.Resource, len(pl.keep))
	c.build(rows, make([]inspect.Node, len(pl.keep)*n), pl.keep, pl)
	if len(c.contrib) < len(c.keys) {
		c.contrib = append(c.contrib, make([]contribution, len(c.keys)-len(c.contrib))...)
	}
	for _, e := range dirty {
		c.contrib[e].addTo(&d.Rows, d.Anomalies, -1)
		c.contrib[e] = 0
	}
	for i, e := range pl.keep {
		v := contributionOf(&rows[i])
		v.addTo(&d.Rows, d.Anomalies, 1)
		c.contrib[e] = v
		if int(e) < c.nconf {
			d.Configured = append(d.Configured, rows[i])
		}
	}
	if st != nil {
		d.patch(st, pl, rows, dirty)
		c.out = true // until Recycle: the next poll writes a copy (see collectFed)
	}
	c.resetDirty()
	return d
}

// patch fills d's Stream, Dropped, Judged and Built: st's rows but those of the
// entries the Delta read or judged (dirty), and the rows of those that are rows now
// (pl.keep, built as rows), at their places in name order. pl is the Delta's plan,
// over the copy of st's tables the Delta wrote; the caller holds p.mu.
func (d *Delta) patch(st *Stream, pl *RowPlan, rows []inspect.Resource, changed []int32) {
	c, old := pl.c, st.Plan.keep
	dirty := func(e int32) bool {
		return int(e) < c.nconf || int(e)>>6 < len(c.dirtyBits) && c.dirtyBits[int(e)>>6]&(1<<(uint(e)&63)) != 0
	}
	kept := make([]int32, 0, len(old))
	for i, e := range old {
		if dirty(e) {
			d.Dropped = append(d.Dropped, i)
		} else {
			kept = append(kept, e)
		}
	}
	// The judged rows in the plan's order: by name, then entry (sortByName's).
	name := func(e int32) string { return c.cfg.Resource(c.key(e)) }
	before := func(a, b int32) bool {
		if x, y := name(a), name(b); x != y {
			return x < y
		}
		return a < b
	}
	idx := make([]int, len(pl.keep))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int {
		if before(pl.keep[i], pl.keep[j]) {
			return -1
		}
		return 1
	})
	keep := make([]int32, 0, len(kept)+len(idx))
	lo := 0
	for _, i := range idx {
		e := pl.keep[i]
		k, _ := slices.BinarySearchFunc(kept[lo:], e, func(x, e int32) int {
			if before(x, e) {
				return -1
			}
			return 1
		})
		keep = append(keep, kept[lo:lo+k]...)
		lo += k
		d.Judged = append(d.Judged, len(keep))
		keep = append(keep, e)
		d.Built = append(d.Built, rows[i])
	}
	keep = append(keep, kept[lo:]...)

	s := *st.Snapshot
	s.TakenAt, s.Resources, s.Events = d.TakenAt, nil, nil
	addRowCounts(&s.Summary, &d.Rows, 1)
	next := &RowPlan{c: c, keep: keep, now: pl.now, down: pl.down, kinds: pl.kinds, rates: pl.rates, p: pl.p, maxPTTL: st.Plan.maxPTTL}
	next.shared = next.sharedFrom(st.Plan, changed) // here, not when the caller builds its first row
	next.sharedDone.Do(func() {})
	shared := next.shared
	for i := range d.Built {
		noteSharedIn(&d.Built[i], shared)
	}
	d.Stream = &Stream{Snapshot: &s, Plan: next}
}

// addRowCounts adds sign times d's row counts (all but MastersUp and Findings) to sum.
func addRowCounts(sum, d *inspect.Summary, sign int) {
	sum.Resources += sign * d.Resources
	sum.Held += sign * d.Held
	sum.Partial += sign * d.Partial
	sum.Split += sign * d.Split
	sum.NoTTL += sign * d.NoTTL
	sum.Foreign += sign * d.Foreign
	sum.Free += sign * d.Free
	sum.Semaphore += sign * d.Semaphore
	sum.SingleSummary.Held += sign * d.SingleSummary.Held
	sum.SingleSummary.NoTTL += sign * d.SingleSummary.NoTTL
	sum.SingleSummary.Foreign += sign * d.SingleSummary.Foreign
	sum.SingleSummary.Free += sign * d.SingleSummary.Free
	sum.SingleSummary.Semaphore += sign * d.SingleSummary.Semaphore
}

// FullDue reports whether a whole poll (PollStream) is due before the interval's,
// where a Delta cannot be had: a master's feed came up and its keys are to be read
// whole (then it is fed), or every master can be fed and the last poll was not a fed
// one, or the kept table's rows are to be judged and handed out again (a Delta
// failed, or it is to be compacted). Not for a master polled because
// its feed is down or degraded: that one is read every interval, not at every change
// of the others.
func (p *Poller) FullDue() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ff := p.ff
	if ff == nil || ff.kept == nil {
		return false
	}
	fedAll := true
	for mi, fm := range ff.ms {
		up, sy := ff.state(mi)
		canFeed := up && p.cfg.Masters[mi].Kind() == config.KindAddr
		if canFeed && sy != fm.syncs {
			return true
		}
		fedAll = fedAll && canFeed
	}
	return fedAll && (!ff.allFed || !ff.kept.tallied || ff.kept.needsCompacting())
}
