package live

import (
	"cmp"
	"time"
)

// The part machine: where one master's side of one key stands, and the evidence that
// moves it: an invalidation (Invalidate), a read's answer (ReadDone, ReadFailed), a
// timer (heldExtended). A change of a master's part sets or removes a generation
// there, which moves the lifecycle machine (see lifecycle.go).
//
//	state         evidence                                          next
//	absent        invalidation: a set                               set (the next generation)
//	absent        invalidation, as the others set the next           set, then absent (a removal and a set merged; see merged)
//	              generation, of a short lock
//	absent        invalidation of a generation the others remove,   set (its own set, late: see lateSet)
//	              lining up with the master's lag
//	absent        invalidation of a generation the others remove,   reading (merged: which?)
//	              or after a read found the key gone early, or
//	              within goneWindow of a read that found it gone
//	set           invalidation at or after the known deadline       absent (expired)
//	set           invalidation of an unread lock                    absent (released)
//	set           invalidation of a lock whose value was read,      reading (released, or extended?), or waiting on
//	              held ReadDelay                                    the master read for the same write (change.go)
//	set           invalidation of a lock whose value is known, on   reading (released, or handed on? see
//	              a key whose locks are handed on                   keyState.handoff, firstRead)
//	set           invalidation within proveWindow of the            reading (young: released, or extended to prove the lease?)
//	              acquisition, or of the master's previous
//	              change; not in a loop of short locks
//	reading       invalidation                                      reading (the read out settles it too)
//	reading       answer after four changes or more of a held lock,    all but the last two applied one by one at their
//	              which it agrees with as plain removals and sets      times (see replay); the answer settles the rest
//	reading       answer: gone                                      absent (released, or expired past the deadline)
//	reading       answer: held, the generation's value              set (extended where the deadline moved on a quorum)
//	reading       answer: held, another value                       set (released, and set by the next holder)
//	reading       answer after a change from absent: held, another  set, apart (a racing attempt's part, no
//	              value than the acquired lock it would join, whose generation's: see setApart)
//	              value a read gave
//	reading       answer, absent after a removal taken unread:      set (the removal taken back: see rejoin)
//	              held, the value of that lock, held on the fleet
//	reading       answer to a young read: held after one change     heldUnsure
//	reading       answer: held, after two changes from absent, the   set (it held that generation before, unseen: see
//	              first a set of a generation the others remove       heldBefore; the value is the next holder's)
//	reading       answer after one change, the next after a set       set (the first change was a removal, the value the
//	              found so: the same value and deadline               next holder's: see setFound)
//	reading       answer read once more: gone (or, after three        absent (the next holder's lock held in between,
//	              changes, a third value), after a release and a      its removal's invalidation, or the third value's
//	              set, the first found another value                  set's, to come: see between)
//	reading       read failed                                       unknown
//	unknown       invalidation                                      reading
//	set, apart    invalidation                                      absent (a leftover a whole read found, or a
//	                                                                racing attempt's part: no generation's; see
//	                                                                Tracker.stale, setApart)
//	waiting       the round's answer: extended, or gone             set (extended), or absent (released)
//	waiting       any other answer; invalidation; a read asked      reading (its own read settles its change)
//	heldUnsure    timerHeld, LagWindow with no change               set (it was an extension)
//	heldUnsure    invalidation                                      reading (heldNext: the same deadline found means
//	                                                                the first change was a release and this the next set)

// partState names where one master's side of a key stands.
type partState uint8

const (
	partAbsent     partState = iota // it holds no generation of the key
	partSet                         // it holds generation mstate.gen
	partReading                     // a read is out: it settles every change until its answer
	partUnknown                     // a read failed: its next change is settled by a read
	partHeldUnsure                  // a read found it held after a change right after the acquisition; what follows decides
	partWaiting                     // its change waits on another master's read of the same write (see change.go)
)

// state is where ms stands.
func (ms *mstate) state() partState {
	switch {
	case ms.held != 0 && !ms.reading:
		return partHeldUnsure
	case ms.waiting:
		return partWaiting
	case ms.reading:
		return partReading
	case ms.verify:
		return partUnknown
	case !ms.present:
		return partAbsent
	}
	return partSet
}

// ahead is what a read found that the feed may not have delivered yet.
type ahead uint8

const (
	aheadNone  ahead = iota
	aheadFound       // the key gone where it was held, or set where it was not
	aheadOther       // set, with another value than its generation's (a racing attempt's part)
)

// mstate is one master's side of one key.
type mstate struct {
	gen     uint32 // the generation of its last set (0: never set)
	present bool
	reading bool  // a read of it is outstanding
	verify  bool  // its next change is settled by a read, not inferred
	merged  bool  // the outstanding read settles a change that was set or removal
	apart   bool  // it holds a leftover no generation owns, found by a whole read (see stale), or a racing attempt's part (see setApart)
	probe   bool  // the outstanding read asks whether its last change also set the next generation (see probeUnseen)
	holder  bool  // a read found it holding its generation's value: its removal is no contender's part
	synced  bool  // the master's whole read in progress found it (see SyncPage)
	round   bool  // its outstanding read is one of the key's read round (see keyState.round)
	first   bool  // a read of firstRead's is out: for the value alone
	firstAt int64 // when it was asked (unix ns)
	peek    bool  // and only the round's: it holds another generation, which the answer does not settle (see readRound)
	// Changes named by keyspace notifications (see Change).
	named    bool    // one was applied since the key's last invalidation there, which it accounts for
	fresh    bool    // set, and no TTL named since: the next expire is the set's own
	pendSet  bool    // the change pending is a set: the holder may have changed
	again    bool    // an invalidation came while the outstanding read was out
	invs     int     // invalidations the outstanding read settles (see ReadDone)
	invTimes []int64 // and when each came (see replay)
	invMark  int64   // the master's mark when its last invalidation came while the read was out (unix ns)
	recheck  bool    // the outstanding read was asked again: the last may have been served before a change that came while it was out (see servedBefore)
	before   Entry   // and what that last one found (see between)
	prevInv  int64   // where merged was asked for a set of a generation the others are removing: the change before it (see heldBefore)
	joined   uint32  // the generation such a read, after one change, took the master's set of (see setFound)
	joinedAt int64   // and that change (unix ns)
	askedGen uint32  // gen when the outstanding read was asked
	pendAt   int64   // an expire or set of the held key that the outstanding read settles (unix ns)
	invAt    int64   // the first change not settled yet (unix ns)
	lastInv  int64   // its last invalidation (unix ns)
	deadline int64   // its expiry, when read (unix ns; 0 unknown)
	// young: the outstanding read was asked for a change right after the lock's
	// acquisition (see proveWindow). held: such a read found the key held after that
	// one change (unix ns; 0: not): an extension, or a release whose next set the read
	// found before that set's invalidation came. The next change within LagWindow
	// is read to say which (heldNext); none means an extension. heldE is what the
	// read found, heldInv the change's time.
	young, heldNext bool
	held, heldInv   int64
	heldE           Entry
	// changeBy: its outstanding read is the key's change round's (see change.go).
	// waiting: its change at waitAt waits on that read.
	changeBy, waiting bool
	waitAt            int64
	// seen: what the read that found its part set saw (Present false: its set was
	// not read), or a later read of that part (see keyState.name).
	seen Entry
	// goneAt: a read found the key gone where the master held a lock, at goneAt (unix
	// ns): the change it settled may have come before the removal it found, whose
	// own invalidation is then yet to come (see changedAbsent).
	goneAt int64
	// guessedDel: the generation whose removal its last change was taken for, without
	// a read (0: none; see rejoin).
	guessedDel uint32
	// ahead: a read found a change that the feed may not have delivered yet: the key
	// gone where it was held, or set (by a new holder) where it was not; its next
	// invalidation may be that change's (see Invalidate).
	ahead ahead
}

// Invalidate is a change of key on master mi at at (one invalidation).
func (t *Tracker) Invalidate(mi int, key string, at time.Time) {
	t.heard(at.UnixNano())
	if !lockKey(key) {
		return
	}
	ns := at.UnixNano()
	ks := t.state(key, ns)
	ms := &ks.m[mi]
	if ms.named {
		ms.named = false // the change a keyspace notification named (see Change)
		return
	}
	t.heldPast(ks, mi)
	if ks.round.left > 0 {
		ks.round.bad = true // the reads race a change
	}
	if ks.busy {
		t.unsure(key, ks, ns)
	}
	prev := ms.lastInv
	ms.lastInv = ns
	if ms.apart {
		// The leftover a whole read found it holding apart (see stale), or the racing
		// attempt's part a read found (see setApart), is gone: it expired, or was
		// removed. No lifecycle of the feed's held it.
		ms.apart, ms.present, ms.deadline = false, false, 0
		return
	}
	switch ms.state() {
	case partHeldUnsure:
		ms.heldNext = true // the next change after a lock found held: a read says which
		t.askRead(mi, key, ms, ns)
	case partWaiting:
		t.askRead(mi, key, ms, ns) // a second change: its own read settles both (see askRead)
	case partReading, partUnknown:
		ms.again = ms.again || ms.reading && ms.invAt != 0 // a second change pending
		t.askRead(mi, key, ms, ns)
	case partAbsent:
		t.changedAbsent(key, ks, mi, prev, ns)
	case partSet:
		t.changedSet(key, ks, mi, prev, ns)
	}
}

// changedAbsent: an invalidation on master mi, holding nothing of key as far as the
// inference goes (partAbsent), that came at ns; its previous one came at prev.
func (t *Tracker) changedAbsent(key string, ks *keyState, mi int, prev, ns int64) {
	ms := &ks.m[mi]
	if ms.ahead == aheadNone && ms.goneAt != 0 && ns-ms.goneAt <= int64(goneWindow)+max(t.lag[mi].est, 0) {
		// A read found the lock it held gone just now: the change it settled may
		// have been an extension, or the set, served before the removal it found
		// (a holder that extends and then releases at once), and this change that
		// removal's own, not a new set. A read says which (see goneWindow).
		ms.ahead = aheadFound
	}
	ms.goneAt = 0
	if ms.ahead != aheadNone {
		// A read found the key gone before the feed delivered that change: this
		// may be it (a release, or the read's own lazy expiry of the key), not a
		// new set. A mark does not settle it: a read's time is the client's,
		// and Redis sends an event-loop iteration's invalidations after its
		// replies, so a PING served beside the read may come back first. A read
		// says which.
		ms.ahead = aheadNone
		ms.invs++ // the removal the read applied, which this may be (see ReadDone)
		t.askRead(mi, key, ms, ns)
		return
	}
	if next := ks.gen(ms.gen + 1); next != nil && next.dels > 0 {
		// A set of a generation others are already removing: this master lags,
		// or an earlier change of it was merged with another one (Redis sends one
		// invalidation for two changes of a key in one event-loop iteration), and
		// this is a removal.
		t.unsure(key, ks, ns)
		if t.lateSet(mi, prev, ns, next.firstSet) {
			t.set(key, ks, mi, ns, Entry{}, SourceTracking, false)
			return
		}
		if ks.heldShort(ms.gen) && merged(prev, next.firstSet, next.firstDel, t.lag[mi].est) || prev != 0 && t.reads[mi] > 0 {
			// Its previous change came as the others set this generation, and it
			// lags them by less than they held it: that change was a removal and
			// this set, merged. Reading would race the key's next changes. (Not
			// after a lock held long: there this is as likely a racing round's
			// start, a winner's set delivered just after a loser's parts are
			// removed, its previous change the last holder's release.) The same
			// where reads of other keys are out on this master: a read would queue
			// behind them and find the key several changes on (many busy keys, or
			// a feed short of CPU).
			t.set(key, ks, mi, prev, Entry{}, SourceTracking, false)
			t.removed(key, ks, mi, ns, SourceTracking)
			return
		}
		ms.merged, ms.prevInv = true, prev // a read says which
		t.askRead(mi, key, ms, ns)
		return
	}
	if d := ks.lastDone; d.n == ms.gen+1 && d.firstDel-d.firstSet < int64(LagWindow) && merged(prev, d.firstSet, d.firstDel, t.lag[mi].est) {
		// The same, where the others have already finished that generation:
		// this removal ends this master's part of it.
		t.unsure(key, ks, ns)
		ms.gen = d.n
		return
	}
	t.set(key, ks, mi, ns, Entry{}, SourceTracking, false)
	if g := ks.gen(ms.gen); g != nil && ms.gen > ks.done {
		t.lag[mi].add(ns - g.firstSet)
	}
}

// changedSet: an invalidation on master mi, holding generation ms.gen of key
// (partSet), that came at ns; its previous one came at prev.
func (t *Tracker) changedSet(key string, ks *keyState, mi int, prev, ns int64) {
	ms := &ks.m[mi]
	if ms.ahead != aheadNone {
		// A read found this set before the feed delivered it (the read's reply
		// overtook the invalidation, which comes on another connection): this
		// may be it, not a removal. A read says which (see settle).
		ms.merged = true // (ahead stays for settle)
		t.askRead(mi, key, ms, ns)
		return
	}
	g := ks.gen(ms.gen)
	if next := ks.gen(ms.gen + 1); next != nil && next.sets > 0 {
		t.unsure(key, ks, ns) // this removal may also have set next
	}
	switch {
	case t.expired(ms, g, ns):
		t.unset(key, ks, mi, ns, Expired, SourceTracking) // a change at or after its deadline: the expiry
	case g != nil && g.phase != phaseEnded && g.read && (g.acquiredAt == 0 || ns-g.acquiredAt >= int64(ReadDelay)):
		// Released, or extended? The read says, for a lock whose value was read and
		// held ReadDelay: one master's read for every master's change of the same
		// write (see joinChange).
		if !t.joinChange(key, ks, mi, g, ns) {
			t.askRead(mi, key, ms, ns)
		}
	case g != nil && g.phase != phaseEnded && ks.handoff && g.value != "":
		// Released, or handed on? The read says, at once, for any lock whose value is
		// known where the key's locks are handed on in one write.
		t.askRead(mi, key, ms, ns)
	case g != nil && g.phase != phaseEnded && !g.quiet && !ks.looping(g) &&
		(g.open() && ns-g.acquiredAt < int64(proveWindow) || prev != 0 && ns-prev < int64(proveWindow)):
		// A change right after the acquisition, or right after this master's
		// own set (delivered before the others', or long after them on a slow
		// link), on a key not in a loop of short locks: a release at once, or an
		// extension that proves the lease (as `redlockctl run` does)? Only a read
		// can tell; taken for a release, the lock would be reported ended while
		// it is held, and each later extension the wrong way round.
		ms.young = true
		t.askRead(mi, key, ms, ns)
	default:
		t.unset(key, ks, mi, ns, Released, SourceTracking) // young locks are taken to end by release
	}
}

// heldShort reports whether generation n, open or the last finished, was held for
// less than LagWindow before its first removal: a busy key's, whose release may have
// been merged with the next set.
func (ks *keyState) heldShort(n uint32) bool {
	if g := ks.gen(n); g != nil {
		return g.firstDel != 0 && g.firstDel-g.firstSet < int64(LagWindow)
	}
	d := ks.lastDone
	return d.n == n && d.firstDel-d.firstSet < int64(LagWindow)
}

// looping reports whether g was set within LagWindow of the end of the key's last
// lock, itself first removed within ReadDelay of its set: the key is taken in a loop
// of short locks (a worker's), where a change right after an acquisition is a release
// (and a read would race the loop's next changes).
func (ks *keyState) looping(g *gen) bool {
	d := ks.lastDone
	return ks.doneAt != 0 && g.firstSet-ks.doneAt < int64(LagWindow) && d.firstDel-d.firstSet < int64(ReadDelay)
}

// merged reports whether a master's change at prev, taken for a removal, also set a
// generation first set at firstSet and first removed at firstDel: it came within
// mergeSlack of that set (later by the master's lag), and the master lags the others
// by less than half of how long the generation was held before its first removal (a
// master lagging more delivers a set after the others' removals: a read says which).
func merged(prev, firstSet, firstDel, lag int64) bool {
	return prev != 0 && firstDel != 0 && prev >= firstSet-int64(mergeSlack) && prev <= firstSet+lag+int64(mergeSlack) &&
		lag < (firstDel-firstSet)/2
}

// lateSet reports whether master mi's change at ns, of a generation first set at
// firstSet that the others are already removing, is its own set of it, delivered late
// by its lag (the others held it for less than that): ns lines up with its lag, and
// its previous change at prev does not (that was its removal of the generation
// before). Once three samples of its lag are in.
func (t *Tracker) lateSet(mi int, prev, ns, firstSet int64) bool {
	if t.lag[mi].n < 3 {
		return false
	}
	want := firstSet + t.lag[mi].est
	off := max(ns-want, want-ns)
	return off <= int64(mergeSlack)/2 && (prev == 0 || off < max(prev-want, want-prev))
}

// lagEstimate follows how far a master's sets come after a generation's first: the
// median of the first three samples, then followMedian.
type lagEstimate struct {
	est   int64    // ns
	n     int      // samples so far
	first [2]int64 // the first two
}

// add takes a sample.
func (l *lagEstimate) add(sample int64) {
	switch l.n {
	case 0, 1:
		l.first[l.n] = sample
		l.est = followMedian(l.est, sample)
	case 2:
		a, b := l.first[0], l.first[1]
		l.est = max(min(a, b), min(max(a, b), sample))
	default:
		l.est = followMedian(l.est, sample)
	}
	l.n++
}

// followMedian moves est a step towards sample: a sixteenth of itself (10µs at
// least), up or down, whatever the sample's size. It follows the samples' median,
// which a few far off (a set numbered into the wrong generation) do not move.
func followMedian(est, sample int64) int64 {
	step := max(est/16, int64(10*time.Microsecond))
	if sample > est {
		return est + step
	}
	return max(est-step, 0)
}

func (t *Tracker) askRead(mi int, key string, ms *mstate, invAt int64) {
	if ms.waiting {
		ms.waiting = false
		t.askRead(mi, key, ms, ms.waitAt) // the change waiting on the key's change round first
	}
	if ms.invAt == 0 {
		ms.invAt = invAt
	}
	if invAt != 0 {
		ms.invs++
		ms.invTimes = append(ms.invTimes, invAt)
	}
	ms.verify = false
	if ms.reading {
		if invAt != 0 {
			ms.invMark = t.marks[mi]
		}
		return // the read in flight settles this change too (see ReadDone)
	}
	ms.reading, ms.askedGen = true, ms.gen
	t.reads[mi]++
	t.read(mi, key)
}

// answered takes in the answer e to master mi's read of key (nil: the read failed)
// and reports whether it is left to settle. The answer to a firstRead (sent before any
// read asked since, and not counted in t.reads) is taken here; any other is counted
// off the master's reads out.
func (t *Tracker) answered(mi int, key string, e *Entry) bool {
	if ks := t.keys[key]; ks != nil && ks.m[mi].first {
		if e != nil {
			t.firstAnswer(key, ks, mi, *e)
		} else {
			ks.m[mi].first = false
		}
		return false
	}
	if t.reads[mi] > 0 {
		t.reads[mi]--
	}
	return true
}

// ReadDone is the answer to a read of key on master mi, taken at at.
func (t *Tracker) ReadDone(mi int, key string, at time.Time, e Entry) {
	if t.answered(mi, key, &e) {
		t.readDone(mi, key, at, e)
	}
}

func (t *Tracker) readDone(mi int, key string, at time.Time, e Entry) {
	t.heard(at.UnixNano())
	ks := t.keys[key]
	if ks == nil {
		return
	}
	ms := &ks.m[mi]
	ms.reading = false
	ns := at.UnixNano()
	if ms.invMark > e.ReadAt && e.ReadAt != 0 && ns-e.ReadAt > int64(LagWindow) {
		// A read slower than LagWindow (a slow link), and a change came while it was
		// out after a mark sent later than the read: it was made after the read was
		// served (the feed delivers in order; the read was served as it was sent, its
		// reply held back), its invalidation overtaking the reply as the link turned
		// fast again. The answer is older than what the feed has delivered: taken as
		// the state now, a lock held then would look like a new one. Read again (the
		// changes that came stay to be settled). (A fast read may have waited at the
		// server behind others, served after that mark: it is settled as it is.)
		ms.invMark = 0
		ks.leaveRound(ms)
		t.askRead(mi, key, ms, 0)
		return
	}
	if !ms.recheck && servedBefore(ks, ms, e) {
		// Taken as the state after the changes, a release would be a new lock of
		// the same value. Read once more (the changes that came stay to be settled).
		ms.invMark, ms.recheck, ms.before = 0, true, e
		ks.leaveRound(ms)
		t.askRead(mi, key, ms, 0)
		return
	}
	before := ms.before
	ms.invMark, ms.recheck, ms.before = 0, false, Entry{}
	if ms.changeBy {
		// The key's change round's read: what it found settles the masters waiting on
		// it, once it has settled this one's change.
		ms.changeBy = false
		ok := ms.invs == 1 && !ms.merged && !ms.again && ms.ahead == aheadNone && !ms.young && !ms.heldNext &&
			ms.held == 0 && !ms.probe && ms.present && ms.gen == ks.change.gen
		defer t.changeFound(key, ks, mi, e, ns, ok, ms.deadline)
	}
	ks.roundAnswer(ms, mi, e)
	if ms.peek {
		ms.peek = false
		if ms.invAt == 0 && !ms.again {
			t.roundDone(key, ks, ns)
			return // the round's alone (see readRound)
		}
	}
	invAt := ms.invAt
	if invAt == 0 {
		invAt = ns
	}
	ms.invAt = 0
	if at, ok := t.replay(key, ks, mi, e); ok {
		invAt = at
	}
	if ms.young || ms.heldNext {
		if t.settleYoung(key, ks, mi, invAt, ns, e) {
			return
		}
		invAt = cmp.Or(ms.invAt, invAt)
		ms.invAt = 0
	}
	// Changes that arrived while the read was out came (the server sends them at
	// the end of the event-loop iteration that made them) before it was served: the
	// read already shows them. Reading again would chase a busy key forever.
	again := ms.again && invAt != ns
	// The changes delivered explain the key found gone when they toggle the state
	// it had to none: an even number from none (a set and its removal), an odd one
	// from held. (A merged change, which is two, is read again as before.)
	explained := !ms.merged && ms.present == (ms.invs%2 == 1)
	if g := ks.gen(ms.gen); g != nil && g.read && ms.present && ms.invs > 0 && g.acquiredAt != 0 && !ms.merged {
		// What the read found after changes of a lock known by its value says whether
		// the key's short locks are handed on in one write (see keyState.handoff): a
		// release and a set delivered as two changes, they are not; another value after
		// one change, read at once, they are. (Found gone, the next lock's value is
		// unknown, and its changes are not read until a read learns one.)
		switch {
		case ms.invs >= 2:
			ks.handoff, ks.handedOn = false, false
		case e.Value != g.value && e.ReadAt != 0 && e.ReadAt-invAt <= int64(firstPrompt):
			ks.handoff, ks.handedOn = true, true
		}
	}
	aheadSet := false
	if t.between(key, ks, mi, before, e) {
		invAt, explained = ns, true // the removal it found, whose invalidation is still to come (see settle)
		aheadSet = e.Present
	} else if t.heldBefore(key, ks, mi, e) {
		invAt = ms.invTimes[1] // the next holder's set, which the answer settles
	}
	ms.invs, ms.invTimes = 0, ms.invTimes[:0]
	t.settle(key, ks, mi, invAt, ns, e, SourceTracking, false)
	if aheadSet && ms.present {
		ms.ahead = aheadFound // (see between)
	}
	t.roundDone(key, ks, ns)
	ms.again = false
	if again && !ms.present && !explained {
		// An invalidation came while the read was out, and the read found the key
		// gone, which that change does not explain: the read may have been served
		// before it (a set), its reply coming after it on the other connection. Read
		// once more (asked with no change: it is not read again). Where the changes
		// explain it, the next one is the next set: on a slow link a read asked
		// again may find that set before its invalidation comes.
		ms.again = true // the invalidation of a set it finds has come
		t.askRead(mi, key, ms, 0)
	}
}

// between applies, before a read asked again (see servedBefore) settles master mi's
// changes, the lock the first answer found, before, where the second, e, finds the key
// gone: a value names one acquisition, so the master held that lock in between. Where
// the master held a lock known by its value, before found another value, and two
// changes came (its release, the next holder's set), that next holder released it
// before the second read was served, and the release's invalidation is still to come.
// Taken as the first lock's release alone, the next lock's sets (read, since the
// changes were not explained) were numbered with the one between, which went unseen.
// So too where three changes came, the third that holder's release, and e finds the
// key gone or a third value: the holder after, whose set's invalidation is still to
// come. (Not where the lock between has finished on the others: this master's set of
// it would be numbered after it, a new attempt.) It reports whether it applied them;
// the answer then settles the removal or the set it found.
func (t *Tracker) between(key string, ks *keyState, mi int, before, e Entry) bool {
	ms := &ks.m[mi]
	n := len(ms.invTimes)
	if !before.Present || e.Present && (n != 3 || e.Value == before.Value) || n != 2 && n != 3 || !ms.present || ms.merged || ms.probe ||
		ms.ahead != aheadNone {
		return false
	}
	g := ks.gen(ms.gen)
	if g == nil || g.phase == phaseEnded && ms.gen+1 <= ks.done || g.value == "" || before.Value == g.value {
		return false
	}
	if Debugf != nil {
		Debugf("  between m%d gen %d: %q held between", mi, g.n, before.Value)
	}
	rel, set := ms.invTimes[0], ms.invTimes[1]
	t.removed(key, ks, mi, rel, SourceTracking)
	t.set(key, ks, mi, set, before, SourceTracking, false)
	if n == 3 {
		// The third change was that lock's removal; a lock the second answer found
		// is the next holder's, whose set's invalidation is still to come.
		at := ms.invTimes[2]
		t.removed(key, ks, mi, at, SourceTracking)
	}
	return true
}

// heldBefore takes, before a read settles master mi's changes, the part of the
// generation the others are removing that the master held unseen, where the answer e
// says so by its parity: the master held nothing as far as the inference goes, a
// change came as a set of that generation (read: merged, which?), and another while
// the read was out, and e finds the key held. From nothing, two changes end with
// nothing; held after them, the master held a lock before them: its change before
// merged a removal and that generation's set (a master taken off its core runs a
// release and the next set in one event-loop iteration), the first of these removed
// it, and the second is the next holder's set, whose value e shows. Taken for that
// generation's set, the next holder's value named a lock already released, and the
// master was one lock behind from then on. It reports whether it applied them.
func (t *Tracker) heldBefore(key string, ks *keyState, mi int, e Entry) bool {
	ms := &ks.m[mi]
	if !e.Present || !ms.merged || ms.present || len(ms.invTimes) != 2 || ms.probe || ms.ahead != aheadNone {
		return false
	}
	if next := ks.gen(ms.gen + 1); next == nil || next.dels == 0 || !ks.heldShort(ms.gen) {
		// (Only after a short lock, as the merge rule: after a lock held long the
		// first change is as likely the next lock's set, and the second its
		// extension at once, which toggles nothing.)
		return false
	}
	if Debugf != nil {
		Debugf("  heldBefore m%d gen %d", mi, ms.gen+1)
	}
	set := ms.prevInv
	if set == 0 || set > ms.invTimes[0] {
		set = ms.invTimes[0]
	}
	ms.prevInv = 0
	t.set(key, ks, mi, set, Entry{}, SourceTracking, false)
	t.removed(key, ks, mi, ms.invTimes[0], SourceTracking)
	ms.merged = false
	return true
}

// setFound settles a read of master mi, at its change at invAt, where the read before
// it, asked at its change at joinedAt as a set of the generation the others were
// removing (after a short lock), found the key held and the master was taken to join
// that generation: where this read finds the same value with the same deadline, this
// change was that set's own invalidation, found ahead, not a change of the lock
// found. So the change at joinedAt was a removal: the master held that generation
// before (its change before merged a release and that set), and the value found is
// the next holder's, set at invAt. Taken as that generation's late set, the next
// holder's value named a lock already released, and the master stayed one lock
// behind. It reports whether it settled the read so.
func (t *Tracker) setFound(key string, ks *keyState, mi int, joinedAt, invAt, ns int64, e Entry) bool {
	ms := &ks.m[mi]
	g := ks.gen(ms.gen)
	if g == nil || !e.Present || !ms.seen.Present || e.Value != ms.seen.Value || movedOn(ms.seen, joinedAt, e, ns) ||
		g.read && g.value == e.Value || ks.seenWith(g, e.Value) > 1 {
		return false
	}
	if Debugf != nil {
		Debugf("  setFound m%d gen %d: %q is the next holder's", mi, g.n, e.Value)
	}
	if g.value == e.Value {
		g.value, g.vtype, g.vfields = "", "", nil // named by this master's read alone
	}
	t.removed(key, ks, mi, joinedAt, SourceTracking)
	t.set(key, ks, mi, invAt, e, SourceTracking, false)
	return true
}

// replay applies the changes that came while master mi's read was out of a lock it
// held, all but the last two, one by one at their times, where there were four or
// more and the answer e agrees with them taken as a plain alternation of removals and
// sets: a read that went out late (a feed short of CPU, or behind other keys' reads)
// finds the key several changes on, and taken as settling the first, it would fold
// the locks between into one. The last two are left to the answer, which settles
// them as any (one may be its own lock's set, young or merged); replay reports the
// time of the first of them.
func (t *Tracker) replay(key string, ks *keyState, mi int, e Entry) (int64, bool) {
	ms := &ks.m[mi]
	n := len(ms.invTimes)
	if n < 4 || !ms.present || ms.merged || ms.probe || ms.ahead != aheadNone || ms.heldNext || ms.held != 0 ||
		e.Present != (n%2 == 0) {
		return 0, false
	}
	for _, at := range ms.invTimes[:n-2] {
		if ms.present {
			t.removed(key, ks, mi, at, SourceTracking)
		} else {
			t.set(key, ks, mi, at, Entry{}, SourceTracking, false)
		}
	}
	ms.invs = 2
	ms.invTimes = append(ms.invTimes[:0], ms.invTimes[n-2:]...)
	return ms.invTimes[0], true
}

// ReadFailed: a read of key on master mi got no answer; its next change is read.
func (t *Tracker) ReadFailed(mi int, key string) {
	ks := t.keys[key]
	if !t.answered(mi, key, nil) || ks == nil {
		return
	}
	ms := &ks.m[mi]
	ms.reading, ms.invAt, ms.verify, ms.again, ms.invs, ms.invMark = false, 0, true, false, 0, 0
	ms.before = Entry{}
	ms.invTimes = ms.invTimes[:0]
	ms.young, ms.heldNext, ms.held = false, false, 0 // the next change is read, and settled as any
	ks.leaveRound(ms)
	t.changeLost(key, ks, mi)
}

// settleYoung settles a read asked for a change right after a lock's acquisition
// (young), or for the next change after such a read found the key held (heldNext);
// invAt is the change's time, ns the answer's. It reports whether the read is
// settled; otherwise ReadDone settles it as any read (at ms.invAt, when it sets it).
//   - young, found gone: released (as any read settles it);
//   - young, found held after an even number of changes: released, and taken again
//     (a worker's loop) at the last change;
//   - young, found held after one change: held (see mstate.held), decided later;
//   - heldNext, found held with the same deadline: the change found held was a
//     release, and the read had found the next holder's set, whose invalidation
//     this change is (a later deadline: both changes were extensions);
//   - heldNext, found gone: the change found held was an extension, and this one
//     the release.
func (t *Tracker) settleYoung(key string, ks *keyState, mi int, invAt, ns int64, e Entry) bool {
	ms := &ks.m[mi]
	young, next := ms.young, ms.heldNext
	ms.young, ms.heldNext = false, false
	g := ks.gen(ms.gen)
	if !ms.present || ms.merged || g == nil || g.phase == phaseEnded {
		ms.held = 0
		return false
	}
	if next {
		held, heldInv, heldE := ms.held, ms.heldInv, ms.heldE
		ms.held = 0
		if e.Present && !movedOn(heldE, held, e, ns) {
			t.unset(key, ks, mi, heldInv, Released, SourceTracking)
			ms.invAt = invAt // the next holder's set (ReadDone settles it)
			return false
		}
		t.refresh(key, ks, mi, g, heldInv, held, heldE, SourceTracking)
		return false // the release, as any read settles it
	}
	if !young || !e.Present || g.read {
		return false
	}
	if g.value == "" && ks.seenOther(g, mi, e.Value) {
		// Another master of g was read holding another value (a racing round's, g's
		// value unknown): what this one holds now is not g's part extended, but a
		// new set after its removal, whose invalidation may be yet to come.
		ms.invs, ms.again, ms.invTimes = 0, false, ms.invTimes[:0]
		t.unset(key, ks, mi, invAt, Released, SourceTracking)
		t.setRead(key, ks, mi, invAt, ns, e, SourceTracking, false, false)
		return true
	}
	if ms.invs >= 2 && ms.invs%2 == 0 {
		t.unset(key, ks, mi, invAt, Released, SourceTracking)
		ms.invAt = ms.lastInv
		return false
	}
	ms.held, ms.heldInv, ms.heldE = ns, invAt, e
	ms.invs, ms.again, ms.invTimes = 0, false, ms.invTimes[:0]
	t.schedule(ns+int64(LagWindow), key, timerHeld, g.n)
	return true
}

// servedBefore reports whether answer e to master ms's read was likely served before
// a change it would settle, so that taken as the state after it, the answer would
// turn that change around. Redis sends an event-loop iteration's invalidations
// before its replies, and the two come on different connections: a change that came
// after the read was sent may have been made before it was served, or after. Two
// answers are read once more:
//   - a set the master held nothing of, or another value than its generation's,
//     where the last change came after the read was sent: that change may be the
//     set's own removal (a racing attempt's part, set and removed while the reply
//     was on its way), and taken for the set, it would hold the master for a lock
//     already gone there. Not on a busy key (see keyState.busy), whose next changes
//     a read would race.
//   - the lock as it was, its generation's value with its deadline unmoved (within
//     extendMin, or none read yet), where every change came after the read was
//     sent (it was asked for none): only an extension leaves the value, and it
//     moves the deadline; a read served just before a release in one iteration
//     comes after the release's invalidation.
func servedBefore(ks *keyState, ms *mstate, e Entry) bool {
	n := len(ms.invTimes)
	if n == 0 || e.ReadAt == 0 || !e.Present {
		return false
	}
	g := ks.gen(ms.gen)
	if !ms.present || g == nil || g.value != e.Value {
		return !ks.busy && ms.invTimes[n-1] > e.ReadAt
	}
	if ms.invTimes[0] <= e.ReadAt || g.value == "" || e.PTTLMs < 0 {
		return false
	}
	d := e.deadline(0)
	return ms.deadline == 0 || max(d-ms.deadline, ms.deadline-d) <= int64(extendMin)
}

// movedOn reports whether b, read at bNs, shows a deadline later than a, read at
// aNs: the key was extended between the two reads.
func movedOn(a Entry, aNs int64, b Entry, bNs int64) bool {
	if a.PTTLMs < 0 || b.PTTLMs < 0 {
		return false
	}
	return b.deadline(bNs) > a.deadline(aNs)+int64(extendMin)
}

// heldExtended takes the locks found held after a change right after their
// acquisition, and not changed again for LagWindow since, as extended then.
func (t *Tracker) heldExtended(key string, ks *keyState, ns int64) {
	for i := range ks.m {
		ms := &ks.m[i]
		if ms.held == 0 || ms.reading || ns-ms.held < int64(LagWindow) {
			continue
		}
		held, heldInv, heldE := ms.held, ms.heldInv, ms.heldE
		ms.held = 0
		if g := ks.gen(ms.gen); ms.present && g != nil && g.phase != phaseEnded {
			t.refresh(key, ks, i, g, heldInv, held, heldE, SourceTracking)
		}
	}
}

// settle makes master mi's state of key what a read found (at ns; the change that
// led to it came at invAt).
func (t *Tracker) settle(key string, ks *keyState, mi int, invAt, ns int64, e Entry, source string, quiet bool) {
	ms := &ks.m[mi]
	if Debugf != nil {
		Debugf("  settle m%d gen %d present %v merged %v ahead %d e=%v %q", mi, ms.gen, ms.present, ms.merged, ms.ahead, e.Present, e.Value)
	}
	ms.waiting = false // (a whole read's answer: what it found follows the change)
	merged, other, probe := ms.merged, ms.ahead == aheadOther, ms.probe
	joined, joinedAt := ms.joined, ms.joinedAt
	ms.joined, ms.joinedAt = 0, 0
	ms.merged, ms.probe = false, false
	if merged {
		ms.ahead = aheadNone // what the read was asked for (see Invalidate)
	}
	if !e.Present {
		switch {
		case ms.present:
			g := ks.gen(ms.gen)
			if probe && g != nil && g.phase == phaseAttempt && g.value == "" {
				// A quiet key's probe (see verifyQuiet) finds gone a master whose
				// last change was taken for a set of an attempt that no read saw:
				// that change was as likely its removal of the lock before,
				// delivered late (a master that lags the others); no attempt is
				// reported for it.
				g.noAttempt = true
			}
			expired := t.expired(ms, g, invAt)
			t.unset(key, ks, mi, invAt, endHow(expired), source)
			ms.guessedDel = 0 // read: gone
			if g != nil && g.read && g.acquiredAt != 0 && invAt-g.acquiredAt >= int64(ReadDelay) {
				ms.goneAt = ns // a lock held, known by its value (see changedAbsent)
			}
			if invAt == ns || expired || merged && !ms.again {
				// No change was delivered, or the read's own GET may have expired
				// it: the invalidation for this removal may be yet to come. The
				// same where the change read was taken for the invalidation of a
				// set an earlier read had found first (see changedSet): that set's
				// removal, which this read found, has its own still to come.
				ms.ahead = aheadFound
			}
		case merged:
			// Set and removed, and only the removal was seen: count both. Or the change
			// was the set alone, and the removal the read found came after it: its
			// invalidation is yet to come, and the next one there may be it.
			t.set(key, ks, mi, invAt, Entry{}, source, false)
			t.unset(key, ks, mi, invAt, Released, source)
			if !ms.again {
				ms.ahead = aheadFound
			}
		}
		return
	}
	g := ks.gen(ms.gen)
	if merged && ms.present && joined == ms.gen && joined != 0 && !ms.again && t.setFound(key, ks, mi, joinedAt, invAt, ns, e) {
		return
	}
	if merged && ms.present {
		// A read had applied a set before its invalidation came (see Invalidate); this
		// read says whether the invalidation since was that set's. A racing attempt's
		// set (another value than its generation's, aheadOther) still there: it was,
		// and nothing is learned from its value. Otherwise it was if the value is the
		// generation's; another value is a new holder.
		if g != nil && !other && g.value != "" && e.Value != g.value {
			t.unset(key, ks, mi, invAt, Released, source)
			t.setRead(key, ks, mi, invAt, ns, e, source, quiet, probe)
		} else if g != nil && !other {
			t.refresh(key, ks, mi, g, invAt, ns, e, source)
		}
		return
	}
	if ms.present && (g == nil || g.phase == phaseEnded) && invAt == ns {
		// Its part of a lock that has ended on the others (its release failed here),
		// read with no change delivered since: still there, it stays so until its
		// removal comes. (Taken for a new lock, the next one's sets would join it.)
		return
	}
	if !ms.present && ms.guessedDel == ms.gen && g != nil && g.open() && g.value != "" && e.Value == g.value {
		t.rejoin(key, ks, mi, g, invAt, ns, e, source)
		return
	}
	if !ms.present && t.setApart(ks, mi, invAt, ns, e, quiet, probe) {
		return
	}
	if !ms.present || g == nil || g.value != "" && e.Value != g.value {
		if ms.present {
			t.removed(key, ks, mi, invAt, source) // deleted (or expired), and set again by another holder
		}
		next := ks.gen(ms.gen + 1)
		unsure := merged && !ms.present && !ms.again && next != nil && next.dels > 0 && ks.heldShort(ms.gen)
		t.setRead(key, ks, mi, invAt, ns, e, source, quiet, probe)
		if unsure && ms.gen == next.n {
			// Its late set of the generation the others remove, or, its change before
			// having merged a release and that set, its release of it and the next
			// holder's set found ahead? The next change's read says (see setFound).
			ms.joined, ms.joinedAt = ms.gen, invAt
		}
		return
	}
	t.refresh(key, ks, mi, g, invAt, ns, e, source)
}

// setApart: a read of master mi, asked for a change from absent, found a set of
// another value than that of the lock it would join, the next generation there,
// which is acquired and whose value a read of its masters gave. A value names one
// acquisition, so the set is not that lock's: it is a racing attempt's part on a
// master the winner does not hold (or a next holder's, ahead of the lock's end on the
// others). Numbered into the lock, its removal would be taken for the lock's, and the
// lock ended while held. The master holds it apart, no generation's, until its
// removal comes; a value another generation is named by is left to setRead.
func (t *Tracker) setApart(ks *keyState, mi int, invAt, ns int64, e Entry, quiet, probe bool) bool {
	ms := &ks.m[mi]
	if quiet || probe || ms.again || invAt == ns || !e.Present {
		return false // no change of its own was read alone: the set's may be yet to come
	}
	g := ks.gen(ms.gen + 1)
	if g == nil || g.phase != phaseAcquired || g.value == "" || !g.read && ks.seenWith(g, g.value) == 0 || g.value == e.Value ||
		ks.named(e.Value) != nil {
		return false
	}
	if Debugf != nil {
		Debugf("  m%d holds %q apart from gen %d", mi, e.Value, g.n)
	}
	ms.present, ms.apart = true, true
	ms.deadline = e.deadline(ns)
	return true
}

// rejoin: a read of master mi found it holding the value of g, the lock it was last
// taken to have removed, while g is held on the fleet. Values name one acquisition,
// so it never removed it: that change was something else (an extension, before the
// acquisition could be seen to read it). Its removal is taken back.
func (t *Tracker) rejoin(key string, ks *keyState, mi int, g *gen, invAt, ns int64, e Entry, source string) {
	ms := &ks.m[mi]
	if Debugf != nil {
		Debugf("  rejoin m%d gen %d (sets %d dels %d early %d)", mi, g.n, g.sets, g.dels, g.early)
	}
	ms.present, ms.guessedDel = true, 0
	g.dels--
	if g.early > 0 {
		g.early--
	}
	if g.phase == phaseEnding && g.sets-g.dels >= t.q {
		g.phase = phaseAcquired
	}
	t.refresh(key, ks, mi, g, invAt, ns, e, source)
}

// setRead: a read of master mi answered at ns found key set (e), which its state did
// not hold; the change that led to it came at invAt. Where no invalidation came while
// the read was out, the set's may be yet to come: the next one there may be it. A value
// that names a later generation than the next, where the next is named by another,
// makes the set that generation's.
func (t *Tracker) setRead(key string, ks *keyState, mi int, invAt, ns int64, e Entry, source string, quiet, probe bool) {
	ms := &ks.m[mi]
	if x, next := ks.named(e.Value), ks.gen(ms.gen+1); e.Present && x != nil && x.n > ms.gen+1 && x.phase != phaseEnded &&
		next != nil && next.value != "" && next.value != e.Value {
		// The value names a later generation, set on other masters, and the next one
		// there is named by another: a value names one acquisition, so this set is
		// the later generation's. The master missed those between (a handoff's
		// changes merged, a gap); numbered into the next, it would join a lock that is
		// not this one, and every later change there would be one lock behind.
		if Debugf != nil {
			Debugf("  m%d joins gen %d by its value", mi, x.n)
		}
		ms.gen = x.n - 1
	}
	t.set(key, ks, mi, invAt, e, source, quiet)
	if !quiet && !ms.again && !probe {
		ms.ahead = aheadFound
		if g := ks.gen(ms.gen); g != nil && g.value != "" && g.value != e.Value {
			ms.ahead = aheadOther // a racing attempt's part of g (see the package doc)
		}
	}
}

// refresh records what a read of master mi, still holding generation g, found (its
// TTL, and the value when g's was not read yet): a deadline moved on a quorum of
// masters is an extension (at invAt, reported by source).
func (t *Tracker) refresh(key string, ks *keyState, mi int, g *gen, invAt, ns int64, e Entry, source string) {
	ms := &ks.m[mi]
	if Debugf != nil {
		Debugf("  refresh m%d gen %d value %q read %v e %q", mi, g.n, g.value, g.read, e.Value)
	}
	old := ms.deadline
	if e.Present {
		ms.seen = e
	}
	if e.ReadAt != 0 {
		ns = e.ReadAt
	}
	if e.PTTLMs >= 0 {
		ms.deadline = ns + e.PTTLMs*int64(time.Millisecond)
	} else {
		ms.deadline = 0
	}
	if !g.open() {
		if g.value == "" {
			g.value = e.Value
		}
		return
	}
	// Past the validity as it was before this read: the read may move it.
	wasRead, validity := g.read, g.validity
	t.learn(key, ks, g, e, ns)
	ms.holder = g.read && e.Value == g.value
	if wasRead && old != 0 && ms.deadline > old+int64(extendMin) && ms.deadline > validity {
		if g.extends++; g.extends == t.q {
			g.extends = 0
			t.validity(key, ks, g)
			t.emit(Event{At: time.Unix(0, invAt), Event: Extended, Resource: t.resource(key), Key: key, Value: g.value,
				Owner: g.owner, Library: g.library, Masters: ks.holders(g.n), Quorum: t.q, TTLMs: e.PTTLMs, Source: source})
		}
	}
}

// endHow is the end of a removal inferred to be an expiry or not.
func endHow(expired bool) string {
	if expired {
		return Expired
	}
	return Released
}

// removed takes master mi's change at ns for the removal of the generation it holds:
// released, or expired where it came past that generation's deadline (see expired).
func (t *Tracker) removed(key string, ks *keyState, mi int, ns int64, source string) {
	t.unset(key, ks, mi, ns, endHow(t.expired(&ks.m[mi], ks.gen(ks.m[mi].gen), ns)), source)
}

// expired is expiredBy for a change the feed stamped ns: one handled late, in a burst
// after the feed waited for a core (see madeAfter), is judged by when it may have been
// made. A release is reported expired only where it came past the deadline for sure:
// taken for an expiry, it would say its holder overran its lock.
func (t *Tracker) expired(ms *mstate, g *gen, ns int64) bool {
	return expiredBy(ms, g, t.madeAfter(ns))
}

// expiredBy reports whether a removal at ns on a master holding generation g is its
// expiry: at or after the master's deadline, or, where its own was not read, the
// earliest read on any master of g (the others were set within milliseconds of it;
// a holder's release comes before all of them).
func expiredBy(ms *mstate, g *gen, ns int64) bool {
	if ms.deadline != 0 {
		return ns >= ms.deadline
	}
	return g != nil && g.earliest != 0 && ns >= g.earliest
}
