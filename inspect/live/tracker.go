package live

import (
	"cmp"
	"container/heap"
	"slices"
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
)

// Timing of the inference (see the package doc).
const (
	// ReadDelay is how long a lock is held before the tracker reads its value and TTL:
	// short enough for every lock a person asks about, long enough that the
	// millisecond locks of a busy workload are never read.
	ReadDelay = 50 * time.Millisecond
	// LagWindow bounds how far apart in time the feeds of two masters may deliver the
	// changes of one lock (each master's own changes always come in order). A
	// generation that reached fewer than a quorum, all of it removed, and nothing
	// more for LagWindow is a failed attempt: `contended`.
	LagWindow = 100 * time.Millisecond
	// ContendWindow bounds a failed attempt: a value on fewer than a quorum kept
	// longer than this is a lock of one server, not an attempt, and is never
	// `contended`.
	ContendWindow = time.Second
	// probeAfter is how long after a known deadline the key is read, so that the
	// server expires it then rather than when its sampling finds it.
	probeAfter = time.Millisecond
	// mergeSlack bounds how far apart the feeds of two masters may deliver changes
	// made at the same moment (see merged).
	mergeSlack = 2 * time.Millisecond
	// staleBefore: a lock a whole read finds, set this long or more before the open
	// generation's first set, is not that generation's (see stale).
	staleBefore = 20 * time.Millisecond
	// firstPrompt: a read asked this long after the change it is for, or more, went
	// out late (a feed handling what came late) and may find later locks: it starts
	// no reading of a key's short locks (see keyState.handoff).
	firstPrompt = time.Millisecond
	// proveWindow: a lock's change this soon after its acquisition may be an
	// extension that proves the lease (a client that extends at once), which only a read
	// tells from a release.
	proveWindow = 5 * time.Millisecond
	// extendMin is how far a deadline must move to be an extension, not the jitter
	// of reading the same TTL twice.
	extendMin = 5 * time.Millisecond
	// goneWindow: how long after a read found a held lock gone (beyond the master's
	// lag) the master's next change, where it then holds nothing, is read rather than
	// taken for a new set: a removal made just before the read was served, after the
	// change the read was for, has its own invalidation still to come, about a
	// subscription's latency after the answer.
	goneWindow = 5 * time.Millisecond
)

// The inference. Each master delivers the changes of a key in order, and a lock's
// key on one master alternates: set, then removed (released or expired). So the i-th
// time a key is set on a master belongs to the i-th attempt at the lock, on every
// master: a generation. A generation that reaches a quorum of masters is a lifecycle
// (acquired, then released or expired); one that never does is a failed attempt
// (contended), and is taken back out of the numbering. The feeds of different
// masters may deliver milliseconds apart (they are separate connections, read by
// separate goroutines): matching by generation, never by time, makes the counts
// exact however they interleave; times come from the changes that decide.
//
// Attempts that race split the masters: each master is set by one of them, so all of
// them are one generation. The one that wins a quorum holds it on; the others remove
// their parts at once. A removal that leaves a generation held on a quorum within
// LagWindow of its first set is taken for such a part once the masters still holding
// it are seen to hold it LagWindow later (a holder's release reaches every master
// within milliseconds): it is reported `contended`, and taken out of the generation.
//
// Redis sends one invalidation for two changes of a key in one event-loop iteration: a
// master that runs a holder's release and the next holder's set together delivers one
// change for both, and every later change there would then be taken the wrong way
// round. After a short lock (on a busy key, where this happens) such a merge is
// inferred from the sequence (see merged), not read: a read of a busy key races its
// next changes, and settling those reads asked for more. After a long one, a read
// settles it: there a racing round's start looks the same (see Invalidate).
// Reads that race nothing check the inference: an attempt held on fewer than a quorum
// for LagWindow is read on the masters that may hold it unseen (see probeUnseen), and
// a busy key, or one with such a change, once it goes quiet (see verifyQuiet). And a
// lock held ReadDelay is read on every master: where nothing changed meanwhile and
// one value is held on a quorum, the key's state becomes what the reads found (see
// realign), so that a mistaken inference ends with the lock it happened in.

// keyState is everything tracked for one key.
type keyState struct {
	m      []mstate
	gens   []*gen // open generations, oldest first
	done   uint32 // generations up to this one are finished
	doneAt int64  // when the last of them finished (unix ns)
	last   int64  // its last change (unix ns)
	// lastDone is the last of them to finish, as far as merged needs it.
	lastDone struct {
		n                  uint32
		firstSet, firstDel int64
	}
	// unsure: a change there was taken for one of two it may have been (a removal
	// that may also have set the next generation), or the key is busy (the
	// generation before its last finished less than LagWindow before it: its
	// changes may merge); quietAt: when the key is next checked for having gone
	// quiet (see verifyQuiet; 0: not scheduled).
	unsure bool
	busy   bool
	// handoff: changes of the key's short locks (held less than ReadDelay) whose
	// value was read are read, as a read of one found a release and the next set
	// merged into one change, or the key's first lock was read at once (see
	// firstRead); otherwise such a change is taken for a removal.
	handoff bool
	// handedOn: a read found one of its locks handed on so. short: one of its locks
	// was held less than ReadDelay. (See joinChange.)
	handedOn, short bool
	// ttlMs: the TTL its last lock whose TTL was read was set with (0: none yet).
	ttlMs int64
	// first: what the answers to firstRead found so far.
	first struct {
		value string
		agree int  // masters found holding value
		bad   bool // one found another, or came late
	}
	quietAt int64
	// change: its last change round (see change.go).
	change changeRound
	// round: every master read after generation round.gen was held ReadDelay (see
	// realign): left answers to come, what they found so far.
	round struct {
		gen     uint32
		left    int
		at      int64  // when it was asked (unix ns)
		bad     bool   // a change came, a read failed, or another value was found
		value   string // the value the first master found holding a lock had
		holders uint64 // masters found holding it (bit i: master i)
	}
}

func (ks *keyState) gen(n uint32) *gen {
	for _, g := range ks.gens {
		if g.n == n {
			return g
		}
	}
	return nil
}

// named returns the generation whose value is v (nil: none).
func (ks *keyState) named(v string) *gen {
	for _, g := range ks.gens {
		if g.value == v {
			return g
		}
	}
	return nil
}

// holders counts the masters holding generation n now.
func (ks *keyState) holders(n uint32) int {
	c := 0
	for i := range ks.m {
		if ks.m[i].present && ks.m[i].gen == n {
			c++
		}
	}
	return c
}

// Entry is what one master holds at one key when read: Present false for absent.
type Entry struct {
	Present bool
	Type    string            // "string", "hash", ...
	Value   string            // a string's value, or a hash lock's holder (its first field)
	Fields  map[string]string // a hash's fields and values
	PTTLMs  int64             // -1 no expiry
	ReadAt  int64             // when the read was sent (unix ns; 0: the time the caller passes)
}

// deadline is when the key expires as e read it (unix ns): the PTTL counted from
// when the read was sent, or from ns where that is unknown. Only for e.PTTLMs >= 0.
func (e Entry) deadline(ns int64) int64 {
	return cmp.Or(e.ReadAt, ns) + e.PTTLMs*int64(time.Millisecond)
}

// Tracker infers lock lifecycles from changes and reads. It is not safe for
// concurrent use: one goroutine feeds it (see Feed.Run). Its methods take the time of
// the signal, so that tests can replay sequences.
type Tracker struct {
	n, q       int
	names      []string
	resource   func(key string) string
	emit       func(Event)
	read       func(mi int, key string) // asks for a read; the result comes to ReadDone
	keys       map[string]*keyState
	timers     timerHeap
	swept      int64
	marks      []int64          // per master: every change made before this was delivered (unix ns; 0 unknown)
	want       []int64          // per master: a decision waits for a mark sent after this (unix ns; see caughtUp)
	wantMoved  bool             // want, or a master's lateness, changed since WantsMoved
	firstReads bool             // read each key's first lock at once (see firstRead)
	lag        []lagEstimate    // per master: how far its sets come after a generation's first
	forced     map[string]int64 // resource -> when an operator's force-release of it was audited
	gapped     []bool           // per master: in a gap, until its next SyncEnd
	reads      []int            // per master: reads asked and not answered yet (see changedAbsent)
	base       *base            // keys found held by a whole read, unchanged since
	syncing    bool             // SyncPage is applying a whole read
	stall      stallState       // the feed's own stalls (see stall.go)
	late       lateState        // and its lateness, per master (see Late)
}

// NewTracker tracks n masters (names for events) with quorum q. emit receives every
// event; read asks for a read of one key on one master, answered by ReadDone or
// ReadFailed.
func NewTracker(names []string, q int, resource func(string) string, emit func(Event), read func(mi int, key string)) *Tracker {
	return &Tracker{n: len(names), q: q, names: names, resource: resource, emit: emit, read: read, keys: make(map[string]*keyState),
		marks: make([]int64, len(names)), want: make([]int64, len(names)), lag: make([]lagEstimate, len(names)), gapped: make([]bool, len(names)), reads: make([]int, len(names)),
		base: newBase(true), firstReads: true}
}

// KeepValues says whether the values of locks found held by a whole read are kept
// until they end (the default), to be named in their end events. Without them (the
// exporter, which counts events and never shows a value) such a lock costs about 50
// bytes less; call it before the first sync.
func (t *Tracker) KeepValues(keep bool) { t.base.values = keep }

// Mark says that every change on master mi made before at has been delivered (its
// feed's order proves it: see node.listen).
func (t *Tracker) Mark(mi int, at time.Time) { t.marks[mi] = max(t.marks[mi], at.UnixNano()) }

// caughtUp reports whether master mi has delivered every change made before ns (or
// cannot say: no mark yet, or in a gap). Where it has not yet, a mark sent after ns is
// wanted (see MarkWanted).
func (t *Tracker) caughtUp(mi int, ns int64) bool {
	return t.gapped[mi] || t.marks[mi] == 0 || t.markedPast(mi, ns)
}

// markedPast reports whether master mi's marks show every change made before ns
// delivered; where not, a mark sent after ns is wanted.
func (t *Tracker) markedPast(mi int, ns int64) bool {
	if t.marks[mi] >= ns {
		return true
	}
	t.wantMark(mi, ns)
	return false
}

func (t *Tracker) wantMark(mi int, ns int64) {
	if ns > t.want[mi] {
		t.want[mi], t.wantMoved = ns, true
	}
}

// MarkWanted says when master mi's subscription is to be marked (see MarkDue): after
// is the latest time a decision waited for a mark sent after (0: none has); often
// holds while its last mark came back late (how long the feed reads late is measured
// mark by mark until it is on time again).
func (t *Tracker) MarkWanted(mi int) (after int64, often bool) {
	return t.want[mi], t.late.late != nil && t.late.late[mi]
}

// WantsMoved reports whether a MarkWanted answer changed since the last call.
func (t *Tracker) WantsMoved() bool {
	moved := t.wantMoved
	t.wantMoved = false
	return moved
}

// Keys returns how many keys the tracker holds state for.
func (t *Tracker) Keys() int { return len(t.keys) + t.base.Len() }

func (t *Tracker) state(key string, ns int64) *keyState {
	ks := t.keys[key]
	if ks == nil {
		if r, i := t.base.find(key); r != nil {
			return t.promote(key, r, i, ns)
		}
		ks = &keyState{m: make([]mstate, t.n)}
		t.keys[key] = ks
	}
	return ks
}

// forget drops a key no master holds, no generation of which is open, and that has
// not changed for twice LagWindow (a lagging master's change may still come).
func (t *Tracker) forget(key string, ks *keyState, now int64) {
	if len(ks.gens) > 0 || now-ks.last < 2*int64(LagWindow) {
		return
	}
	for i := range ks.m {
		if ks.m[i].present || ks.m[i].reading {
			return
		}
	}
	delete(t.keys, key)
}

// lockKey reports whether key may be a lock's: a lock's companion (a fence counter, a
// queue, a signal list) changes with its lock and is no lifecycle of its own.
func lockKey(key string) bool {
	_, _, companion := locks.CompanionOf(key)
	return !companion
}

// Flush is a FLUSHALL or FLUSHDB on master mi: every key there (owns says which are
// its; nil: all) is gone.
func (t *Tracker) Flush(mi int, owns func(string) bool, at time.Time) {
	bit := uint32(1) << mi
	t.promoteIf(func(r *baseRec) bool { return r.present&bit != 0 }, owns, at.UnixNano())
	for key, ks := range t.keys {
		if (owns == nil || owns(key)) && ks.m[mi].present {
			t.unset(key, ks, mi, at.UnixNano(), Released, SourceTracking)
		}
	}
}

// Gap: master mi's feed was cut. Its keys (those owns reports; nil: all) are settled
// by the next Sync; until then what it holds counts as it was.
func (t *Tracker) Gap(mi int, owns func(string) bool) {
	t.gapped[mi] = true
	t.reads[mi] = 0 // answers lost with the connection are not waited for
	for key, ks := range t.keys {
		if owns != nil && !owns(key) {
			continue
		}
		ms := &ks.m[mi]
		ms.verify, ms.invAt, ms.invs, ms.invMark = false, 0, 0, 0
		ms.invTimes, ms.before = ms.invTimes[:0], Entry{}
		ms.named, ms.fresh, ms.pendAt, ms.pendSet = false, false, 0, false
		ms.young, ms.heldNext, ms.held = false, false, 0
		ms.waiting = false // (the next whole read settles it)
		t.changeLost(key, ks, mi)
	}
}

// SyncStart begins a whole read of master mi's keys (those owns reports; nil: all):
// SyncPage gives what it finds, a page at a time, and SyncEnd ends it. Until then
// the master's gap, if it is in one, goes on.
func (t *Tracker) SyncStart(mi int, owns func(string) bool) {
	for key, ks := range t.keys {
		if owns == nil || owns(key) {
			ks.m[mi].synced = false
		}
	}
	bit := uint32(1) << mi
	for i := range t.base.recs {
		if r := &t.base.recs[i]; r.seen&bit != 0 && (owns == nil || owns(t.base.key(r))) {
			r.seen &^= bit
		}
	}
}

// SyncPage makes master mi's state of keys what a whole read found: entries (parallel
// to keys) are what it holds, read at at. quiet is for the first read of a master:
// what it finds was there before the feed, and starts no acquisition. It returns how
// many held lifecycles it found that the feed had not seen.
func (t *Tracker) SyncPage(mi int, keys []string, entries []Entry, at time.Time, source string, quiet bool) (found int) {
	ns := at.UnixNano()
	t.syncing = true
	defer func() { t.syncing = false }()
	for i, key := range keys {
		e := entries[i]
		if !e.Present || !lockKey(key) {
			continue
		}
		if t.baseSync(mi, key, e, ns, quiet) {
			continue
		}
		ks := t.state(key, ns)
		ms := &ks.m[mi]
		ms.synced = true
		open := t.openLifecycles(ks)
		if g := ks.gen(ms.gen); !ms.present || g == nil || g.phase == phaseEnded {
			ms.present = false // what it held before is over: it joins the newest
			t.align(ks, mi)
			if t.stale(ks, mi, e, ns) {
				continue
			}
		}
		t.settle(key, ks, mi, ns, ns, e, source, quiet)
		if !quiet {
			found += max(t.openLifecycles(ks)-open, 0)
		}
	}
	return found
}

// stale reports whether e, which a whole read of master mi found at ns, was set well
// before the key's open generation's first set (that it would join), or, with none
// open, before the key's last lock ended (its deadline against the key's TTL): a lock
// left on a replica promoted after a failover, behind the writes it missed. It is no
// generation's; the master holds it apart, until it expires or is removed.
func (t *Tracker) stale(ks *keyState, mi int, e Entry, ns int64) bool {
	if ks.ttlMs <= 0 || e.PTTLMs < 0 || ks.m[mi].reading {
		return false
	}
	ref := ks.doneAt
	if len(ks.gens) > 0 {
		g := ks.gens[len(ks.gens)-1]
		if g.open() {
			if ks.m[mi].gen != g.n-1 || g.value != "" && g.value == e.Value {
				return false
			}
			ref = g.firstSet
		}
	}
	at := cmp.Or(e.ReadAt, ns)
	if ref == 0 || at+(e.PTTLMs-ks.ttlMs)*int64(time.Millisecond) >= ref-int64(staleBefore) {
		return false
	}
	ms := &ks.m[mi]
	ms.present, ms.synced, ms.apart = true, true, true
	ms.deadline = e.deadline(ns)
	return true
}

// SyncEnd ends master mi's whole read at at: what the master held and the read did
// not find is gone. It returns how many lifecycles that ended (unseen, in a gap).
func (t *Tracker) SyncEnd(mi int, owns func(string) bool, at time.Time, source string) (ended int) {
	ns := at.UnixNano()
	t.gapped[mi] = false
	t.marks[mi] = max(t.marks[mi], ns)
	bit := uint32(1) << mi
	t.promoteIf(func(r *baseRec) bool { return r.present&bit != 0 && r.seen&bit == 0 }, owns, ns) // the loop below ends them
	for key, ks := range t.keys {
		if ks.m[mi].synced || !ks.m[mi].present || owns != nil && !owns(key) {
			continue
		}
		open := t.openLifecycles(ks)
		t.settle(key, ks, mi, ns, ns, Entry{}, source, false)
		ended += open - t.openLifecycles(ks)
	}
	for key, ks := range t.keys {
		if !ks.m[mi].synced && (owns == nil || owns(key)) {
			t.align(ks, mi)
		}
	}
	return ended
}

// baseSync applies a whole read's entry for key on master mi to the base, and
// reports whether that was all it took: a quiet read of a key the tracker does not
// follow yet adds it there; a later read that finds a base key as it was leaves it
// there. Anything else goes to the full state.
func (t *Tracker) baseSync(mi int, key string, e Entry, ns int64, quiet bool) bool {
	if t.n > maxBaseMasters {
		return false
	}
	deadline := int64(0)
	if e.PTTLMs >= 0 {
		deadline = e.deadline(ns)
	}
	bit := uint32(1) << mi
	r, _ := t.base.find(key)
	switch {
	case r == nil && quiet && t.keys[key] == nil:
		if r, _ = t.base.add(key, e.Value); r == nil {
			return false
		}
		r.present, r.seen, r.deadline = bit, bit, deadline
		return true
	case r == nil:
		return false
	case quiet && r.present&bit == 0:
		r.present |= bit // another master's part of the same lock, found as it was
		r.deadline = minDeadline(r.deadline, deadline)
	case r.present&bit == 0, t.base.values && t.base.value(r) != e.Value, !sameDeadline(r.deadline, deadline):
		return false // new there, another value, or extended: the full state decides
	}
	r.seen |= bit
	return true
}

// baseSkew is how far apart the deadlines read for one lock on different masters
// may be (its SETs and the reads are milliseconds apart): a read whose deadline is
// later than that is an extension.
const baseSkew = 50 * time.Millisecond

// sameDeadline reports whether a read's deadline d (0: none) is the base's (the
// earliest of its masters', 0: none), not an extension or a TTL set or removed.
func sameDeadline(base, d int64) bool {
	if base == 0 || d == 0 {
		return base == d
	}
	return d <= base+int64(baseSkew)
}

// minDeadline is the earlier of two deadlines, 0 (none) counting as the latest.
func minDeadline(a, b int64) int64 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// promoteIf moves the base keys that match (and that owns reports; nil: all) to the
// full state.
func (t *Tracker) promoteIf(match func(*baseRec) bool, owns func(string) bool, ns int64) {
	var keys []string
	for i := range t.base.recs {
		if r := &t.base.recs[i]; r.present != 0 && match(r) {
			if key := t.base.key(r); owns == nil || owns(key) {
				keys = append(keys, key)
			}
		}
	}
	for _, key := range keys {
		t.state(key, ns)
	}
}

// promote moves base record i of key to the full state: one quiet generation,
// held by the masters that held the key when read.
func (t *Tracker) promote(key string, r *baseRec, i uint32, now int64) *keyState {
	ks := &keyState{m: make([]mstate, t.n), last: now}
	g := &gen{n: 1, firstSet: now, lastChange: now, quiet: true, source: SourceTracking}
	if t.base.values {
		g.value = t.base.value(r)
	}
	for mi := range ks.m {
		if r.present&(1<<mi) != 0 {
			ks.m[mi] = mstate{gen: 1, present: true, deadline: r.deadline, synced: r.seen&(1<<mi) != 0}
			g.sets++
		}
	}
	if g.sets >= t.q {
		g.phase = phaseAcquired
	}
	ks.gens = []*gen{g}
	t.base.remove(key, i)
	t.keys[key] = ks
	if g.phase == phaseAttempt {
		t.schedule(now+int64(LagWindow), key, timerSettle, g.n)
	}
	return ks
}

// align numbers master mi's next set of a key after the key's newest generation (or
// into it while it is open): a master that was away may have missed any number.
func (t *Tracker) align(ks *keyState, mi int) {
	ms := &ks.m[mi]
	ms.gen = max(ms.gen, ks.done)
	if len(ks.gens) > 0 {
		if newest := ks.gens[len(ks.gens)-1]; newest.phase == phaseEnded {
			ms.gen = max(ms.gen, newest.n)
		} else {
			ms.gen = newest.n - 1
		}
	}
}

func (t *Tracker) openLifecycles(ks *keyState) int {
	c := 0
	for _, g := range ks.gens {
		if g.open() {
			c++
		}
	}
	return c
}

// Verify: a change of key on master mi at at whose meaning a read settles.
// An invalidation verified accounts for the named change before it, if any.
func (t *Tracker) Verify(mi int, key string, at time.Time) {
	t.heard(at.UnixNano())
	if !lockKey(key) {
		return
	}
	ks := t.state(key, at.UnixNano())
	ks.m[mi].named = false
	t.askRead(mi, key, &ks.m[mi], at.UnixNano())
}

// sweepEvery is how often idle keys are forgotten.
const sweepEvery = time.Second

// Tick runs the timers due at now, and forgets idle keys every sweepEvery.
func (t *Tracker) Tick(now time.Time) {
	ns := now.UnixNano()
	t.heartbeat(ns)
	if ns-t.swept >= int64(sweepEvery) {
		t.swept = ns
		for key, ks := range t.keys {
			// An ended generation some master never removed (it went away) is let go.
			ks.gens = slices.DeleteFunc(ks.gens, func(g *gen) bool {
				return g.phase == phaseEnded && ns-g.lastChange > int64(ContendWindow)
			})
			t.forget(key, ks, ns)
		}
	}
	for len(t.timers) > 0 && t.timers[0].at <= ns {
		tm := heap.Pop(&t.timers).(timer)
		ks := t.keys[tm.key]
		if ks == nil {
			continue
		}
		if tm.kind == timerQuiet {
			t.verifyQuiet(tm.key, ks, ns)
			continue
		}
		if tm.kind == timerHeld {
			t.heldExtended(tm.key, ks, ns)
			continue
		}
		g := ks.gen(tm.gen)
		if g == nil {
			continue
		}
		switch tm.kind {
		case timerFirst:
			t.firstRead(tm.key, ks, g, ns)
		case timerRead, timerProbe:
			if g.phase == phaseEnded && tm.kind == timerRead {
				continue
			}
			if tm.kind == timerRead {
				t.readRound(tm.key, ks, g, ns)
				continue
			}
			for i := range ks.m {
				// Those whose deadline passed, or is not known: one extended since is
				// not read.
				if m := &ks.m[i]; m.present && m.gen == g.n && (m.deadline == 0 || m.deadline <= ns) {
					t.askRead(i, tm.key, m, 0) // no change to date: the answer's time is used
				}
			}
		case timerSettle:
			t.advance(tm.key, ks, g, evidence{step: stepSettleDue}, ns)
		case timerEnd:
			t.advance(tm.key, ks, g, evidence{step: stepEndDue}, ns)
		case timerSplit:
			t.split(tm.key, ks, g, ns, false)
		}
	}
}

// Next returns when the next timer is due (zero when none is).
func (t *Tracker) Next() time.Time {
	next := int64(0)
	if t.stall.armed {
		next = t.stall.beat
	}
	if len(t.timers) > 0 && (next == 0 || t.timers[0].at < next) {
		next = t.timers[0].at
	}
	if next == 0 {
		return time.Time{}
	}
	return time.Unix(0, next)
}

func (t *Tracker) schedule(at int64, key string, kind timerKind, gen uint32) {
	heap.Push(&t.timers, timer{at: at, key: key, kind: kind, gen: gen})
}

type timerKind uint8

const (
	timerRead   timerKind = iota // read a lifecycle's masters (value, TTL)
	timerProbe                   // read them at their deadline
	timerSettle                  // decide an attempt that has not reached a quorum
	timerEnd                     // decide an end that waits for lagging masters
	timerSplit                   // decide whether early removals were a contender's
	timerQuiet                   // read a key that went quiet after an unsure change
	timerHeld                    // take a lock found held after a change right after its acquisition as extended
	timerFirst                   // read the value of a key's first lock (see firstRead)
)

type timer struct {
	at   int64
	key  string
	kind timerKind
	gen  uint32
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
