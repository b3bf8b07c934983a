package live

import (
	"math/bits"
	"slices"
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
)

// The lifecycle machine: where one generation of a key (one attempt at the lock, on
// however many masters) stands on the fleet, and the evidence that moves it. Every
// change of phase is in advance; the per-master bookkeeping that leads to it (which
// master set or removed which generation) is in set and unset.
//
//	phase     evidence                                     next
//	attempt   a set that makes a quorum                    acquired (event acquired; none when found held by a whole read)
//	attempt   timerSettle: removed everywhere, quiet        gone (event contended; taken out of the numbering)
//	acquired  a set (a read's value and TTL)                acquired
//	acquired  a removal that leaves it held on a quorum     acquired (a contender's part? see contender)
//	acquired  a removal that leaves it below a quorum       ending
//	ending    a set from a lagging master that restores it  acquired
//	ending    no master lagging, or timerEnd                ended (event released, expired or evicted)
//	acquired  a read round that finds another lock held     ended (see realign)

// phase is where a generation stands.
type phase uint8

const (
	// phaseAttempt: set on fewer than a quorum of masters so far.
	phaseAttempt phase = iota
	// phaseAcquired: set on a quorum.
	phaseAcquired
	// phaseEnding: a removal left it below a quorum (at gen.endAt) while masters that
	// may still deliver its set lag (see decideEnd).
	phaseEnding
	// phaseEnded: its end was reported.
	phaseEnded
)

// open reports whether g is a lock held as far as the inference goes: acquired, its
// end not reported.
func (g *gen) open() bool { return g.phase == phaseAcquired || g.phase == phaseEnding }

// step is the kind of evidence that moves a generation.
type step uint8

const (
	stepSet       step = iota // a master set it (an invalidation, a read, a whole read)
	stepRemoved               // a master removed it
	stepSettleDue             // timerSettle: LagWindow after an attempt's last change
	stepEndDue                // timerEnd: the wait for lagging masters is over
)

// evidence is one piece of evidence about a generation.
type evidence struct {
	step   step
	prev   int64  // stepSet: the generation's last change before this set (0: none)
	e      Entry  // stepSet: what the set was read with (Present false: not read)
	how    string // stepRemoved: Released, Expired or Evicted
	holder bool   // stepRemoved: a read had found the master holding the generation's value (no contender's part)
	source string // what said so
}

// advance moves generation g of key on evidence ev, at ns.
func (t *Tracker) advance(key string, ks *keyState, g *gen, ev evidence, ns int64) {
	switch g.phase {
	case phaseAttempt:
		switch ev.step {
		case stepSet:
			if g.dels > 0 && g.sets >= t.q && ev.prev != 0 {
				t.early(key, g, g.dels, ev.prev) // removed before the quorum was seen: a contender's?
			}
			if g.sets >= t.q {
				t.acquire(key, ks, g, ev.source, ns)
			}
		case stepSettleDue:
			t.settleAttempt(key, ks, g, ns)
		}
	case phaseAcquired, phaseEnding:
		switch ev.step {
		case stepSet:
			if g.phase == phaseEnding && g.sets-g.dels >= t.q {
				g.phase = phaseAcquired // a lagging master's set: it was held on a quorum after all
				if g.endHow == Released {
					t.early(key, g, g.dels, g.endAt) // the removals so far may be a contender's
				}
			}
			if g.read {
				t.learn(key, ks, g, ev.e, ns)
			}
		case stepRemoved:
			t.contender(key, ks, g, ns, ev.how, ev.holder)
			if g.sets-g.dels < t.q {
				if g.phase == phaseAcquired {
					g.phase, g.endAt, g.endHow, g.endSource = phaseEnding, ns, ev.how, ev.source
				}
				t.decideEnd(key, ks, g, ns)
			}
		case stepEndDue:
			if g.phase == phaseEnding {
				t.decideEnd(key, ks, g, ns)
			}
		}
	}
}

// acquire: g reached a quorum at ns, by a set that source reported.
func (t *Tracker) acquire(key string, ks *keyState, g *gen, source string, ns int64) {
	g.phase = phaseAcquired
	if g.quiet {
		return // held before the feed saw it: no acquisition to report
	}
	g.acquiredAt = ns
	g.source = source // the set that decided it
	if !g.read && g.value != "" && (ks.seenWith(g, g.value) == 0 || !ks.leads(g, g.value)) {
		// Its value was read on a master that has removed its part since (a racing
		// attempt's, numbered with this one: see contender), and none of the masters
		// that hold it was read with it; or as many masters that hold it were read
		// with another value (racing attempts' sets): unknown until the read round.
		g.value, g.vtype, g.vfields = "", "", nil
	}
	t.emit(Event{At: time.Unix(0, ns), Event: Acquired, Resource: t.resource(key), Key: key, Value: g.value,
		Masters: g.sets, Quorum: t.q, Source: source})
	t.schedule(ns+int64(ReadDelay), key, timerRead, g.n)
	if t.firstReads && ks.done == 0 && ks.doneAt == 0 && g.n == 1 {
		t.schedule(ns, key, timerFirst, g.n) // the key's first lock: its value at once (see firstRead)
	}
	// Deadlines that the sets were read with already give the validity, and a probe
	// at it, should the read after ReadDelay come too late.
	t.validity(key, ks, g)
}

// gen is one generation of a key: one attempt at the lock, on however many masters.
type gen struct {
	n          uint32
	sets, dels int   // masters that set it, and that removed it again
	firstSet   int64 // unix ns
	firstDel   int64 // its first removal on any master (unix ns; 0: none yet)
	lastChange int64
	probed     bool // the masters that may hold it unseen were read (see settleAttempt)
	phase      phase
	acquiredAt int64 // when it reached a quorum (0: not yet, or held before the feed)
	quiet      bool  // found held by a whole read: it was there before the feed saw it
	// noAttempt: no attempt was seen, and none is reported contended (see
	// settleAttempt, early): it was first set by what a whole read after a gap found
	// (when it was made is unknown), or a set of it was a removal delivered late
	// (see settle).
	noAttempt bool
	read      bool // its value and TTL were read
	value     string
	owner     string
	library   string
	ttlMs     int64
	validity  int64 // the q-th latest deadline of its masters (unix ns; 0 unknown)
	earliest  int64 // the earliest deadline read on any of its masters (unix ns; 0 unknown)
	latest    int64 // the latest one, read just after it
	extends   int   // masters whose deadline moved past the validity since the last extended
	source    string
	vtype     string            // the type the value was read with
	vfields   map[string]string // and a hash's fields
	// The removal that left it below a quorum (phaseEnding): when, how and what said so.
	endAt     int64
	endHow    string // Released, Expired or Evicted
	endSource string
	// A contender's part (see contender): removals that left g held on a quorum soon
	// after its first set, not decided yet; earlyLast is the last of them (unix ns),
	// and heldPast the masters (bit i: master i, for the first 64) whose next change
	// was delivered after their marks passed LagWindow beyond it (see heldPast).
	early     int
	earlyLast int64
	heldPast  uint64
}

// set: master mi now holds key (since ns): the next generation there.
func (t *Tracker) set(key string, ks *keyState, mi int, ns int64, e Entry, source string, quiet bool) {
	ms := &ks.m[mi]
	ms.gen++
	ms.present, ms.deadline, ms.ahead, ms.holder, ms.apart, ms.guessedDel = true, 0, aheadNone, false, false, 0
	ks.last = max(ks.last, ns)
	if e.Present && e.PTTLMs >= 0 {
		ms.deadline = e.deadline(ns)
	}
	jumped := false
	if ms.gen <= ks.done {
		if !t.caughtUp(mi, ks.doneAt) {
			return // a lagging master's part of a generation that has finished
		}
		ms.gen = ks.done + 1 // it missed some (a timeout, a merged change): it catches up
		jumped = true
	}
	g := ks.gen(ms.gen)
	if g == nil {
		g = &gen{n: ms.gen, firstSet: ns, source: source, quiet: quiet, noAttempt: t.syncing}
		ks.gens = append(ks.gens, g)
		slices.SortFunc(ks.gens, func(a, b *gen) int { return int(a.n) - int(b.n) })
		t.schedule(ns+int64(LagWindow), key, timerSettle, g.n)
	}
	g.sets++
	if Debugf != nil {
		Debugf("  set m%d gen %d (sets %d dels %d phase %d value %q) e=%v %q", mi, g.n, g.sets, g.dels, g.phase, g.value, e.Present, e.Value)
	}
	prev := g.lastChange
	g.lastChange = ns
	ms.seen = e
	if e.Present && g.value == "" && !(jumped && g.open() && g.sets-1-g.dels >= t.q) {
		// (Not a lock already held on a quorum without this part, which the master
		// joined by catching up: a racing attempt's set may join it so; its own
		// read names it.)
		g.value, g.vtype, g.vfields = e.Value, e.Type, e.Fields
	} else if e.Present && !g.read && g.phase == phaseAttempt {
		ks.name(g)
	}
	t.advance(key, ks, g, evidence{step: stepSet, prev: prev, e: e, source: source}, ns)
}

// name gives attempt g the value that most of the masters holding it were read with,
// where that is not g's own: racing attempts' parts are numbered in one generation
// (see contender), and the value read first may be a loser's, since removed. A value
// another generation has is left out: a master whose change merged a set with the
// next one's was read holding the next (see settle).
func (ks *keyState) name(g *gen) {
	best, most := -1, 0
	if x := ks.named(g.value); x == nil || x == g {
		most = ks.seenWith(g, g.value)
	}
	for i := range ks.m {
		m := &ks.m[i]
		if !m.present || m.gen != g.n || !m.seen.Present || m.seen.Value == g.value {
			continue
		}
		if x := ks.named(m.seen.Value); x != nil && x != g {
			continue
		}
		if n := ks.seenWith(g, m.seen.Value); n > most {
			best, most = i, n
		}
	}
	if best >= 0 {
		e := ks.m[best].seen
		g.value, g.vtype, g.vfields = e.Value, e.Type, e.Fields
	}
}

// seenOther reports whether a master holding g other than mi was read with a value,
// and none with v.
func (ks *keyState) seenOther(g *gen, mi int, v string) bool {
	other := false
	for i := range ks.m {
		if m := &ks.m[i]; i != mi && m.present && m.gen == g.n && m.seen.Present {
			if m.seen.Value == v {
				return false
			}
			other = true
		}
	}
	return other
}

// leads reports whether more masters holding g were read with value v than with any
// other one value.
func (ks *keyState) leads(g *gen, v string) bool {
	with := ks.seenWith(g, v)
	for i := range ks.m {
		if m := &ks.m[i]; m.present && m.gen == g.n && m.seen.Present && m.seen.Value != v && ks.seenWith(g, m.seen.Value) >= with {
			return false
		}
	}
	return true
}

// seenWith counts the masters holding g that were read with value v.
func (ks *keyState) seenWith(g *gen, v string) int {
	n := 0
	for i := range ks.m {
		if m := &ks.m[i]; m.present && m.gen == g.n && m.seen.Present && m.seen.Value == v {
			n++
		}
	}
	return n
}

// unset: master mi no longer holds key (since ns); how is Released, Expired (it
// reached its TTL) or Evicted, and source what said so.
func (t *Tracker) unset(key string, ks *keyState, mi int, ns int64, how, source string) {
	ms := &ks.m[mi]
	holder := ms.holder
	ms.present, ms.deadline, ms.fresh, ms.holder, ms.apart = false, 0, false, false, false
	ks.last = max(ks.last, ns)
	g := ks.gen(ms.gen)
	if g == nil {
		return // a generation already closed (a master that lagged behind it)
	}
	g.dels++
	ms.guessedDel = g.n
	if Debugf != nil {
		Debugf("  unset m%d gen %d (sets %d dels %d phase %d value %q) %s", mi, g.n, g.sets, g.dels, g.phase, g.value, how)
	}
	if g.firstDel == 0 {
		g.firstDel = ns
	}
	g.lastChange = ns
	t.advance(key, ks, g, evidence{step: stepRemoved, how: how, holder: holder, source: source}, ns)
	t.drop(ks, g, ns)
}

// contender follows a removal of g (acquired, not ended) at ns, ended how: one that
// leaves g held on a quorum within LagWindow of its first set may be a racing
// attempt's part (see the package doc), or the first of the holder's release whose
// rest is delivered later; split decides.
func (t *Tracker) contender(key string, ks *keyState, g *gen, ns int64, how string, holder bool) {
	if g.sets-g.dels >= t.q && how == Released && !holder {
		t.early(key, g, 1, ns)
	}
	if g.early > 0 && g.sets-g.dels < t.q {
		t.split(key, ks, g, ns, true) // its end has begun: decide now
	}
}

// heldPast: master mi's feed delivers a change of the key. Where the master held a
// generation whose early removals are not decided, and its feed had already delivered
// everything made up to LagWindow past them (its mark), it held the generation until
// then, whatever the change turns out to be (a read settles some later, when a newer
// mark may have come).
func (t *Tracker) heldPast(ks *keyState, mi int) {
	ms := &ks.m[mi]
	if !ms.present || mi >= 64 {
		return
	}
	if g := ks.gen(ms.gen); g != nil && g.early > 0 && g.phase != phaseEnded && t.marks[mi] >= g.earlyLast+int64(LagWindow) {
		g.heldPast |= 1 << mi
	}
}

// early counts n removals of g, the last at ns, as a contender's part, if they came
// within LagWindow of its first set, and has them decided LagWindow after the last.
func (t *Tracker) early(key string, g *gen, n int, ns int64) {
	if g.quiet || g.noAttempt || n <= 0 || ns-g.firstSet > int64(LagWindow) {
		return
	}
	if g.early == 0 {
		t.schedule(ns+int64(LagWindow), key, timerSplit, g.n)
	}
	g.early += n
	g.earlyLast = max(g.earlyLast, ns)
}

// split decides g's early removals at now: a contender's part when a quorum of masters
// held g LagWindow past the last of them (each still holds it, its feed delivered
// everything up to then, or it removed it only after that); otherwise they were the
// start of g's own end. Until then it waits (final: it cannot, g's release has begun).
// A contender's part is reported contended (the masters it reached, how long the
// first set of g was held before its last removal) and leaves g.
func (t *Tracker) split(key string, ks *keyState, g *gen, now int64, final bool) {
	if g.early == 0 || g.phase == phaseEnded {
		return
	}
	x := g.earlyLast + int64(LagWindow)
	held, unsure := bits.OnesCount64(g.heldPast), 0
	for i := range ks.m {
		if m := &ks.m[i]; m.present && m.gen == g.n && (i >= 64 || g.heldPast&(1<<i) == 0) {
			// One whose change waits for a read may have removed it before x.
			if m.invAt == 0 && (t.markedPast(i, x) || now >= x && t.caughtUp(i, x)) {
				held++
			} else {
				unsure++
			}
		}
	}
	if held < t.q && unsure > 0 && !final {
		t.schedule(max(now+int64(markEvery)/5, x), key, timerSplit, g.n)
		return
	}
	if held >= t.q {
		t.emit(Event{At: time.Unix(0, g.earlyLast), Event: Contended, Resource: t.resource(key), Key: key,
			Masters: g.early, Quorum: t.q, HeldMs: millis(time.Duration(g.earlyLast - g.firstSet)), Source: g.source})
		g.sets -= g.early
		g.dels -= g.early
	}
	g.early, g.heldPast = 0, 0
}

// decideEnd ends g, which a removal left below a quorum at g.endAt, unless masters
// whose feeds had not delivered everything up to then may still bring its set and
// restore the quorum (a master that evicts a key as it is set, or whose set and
// removal arrive before the others' sets): then it waits for them, LagWindow at most.
func (t *Tracker) decideEnd(key string, ks *keyState, g *gen, ns int64) {
	lagging := 0
	for i := range ks.m {
		if ks.m[i].gen < g.n && !t.caughtUp(i, g.endAt) {
			lagging++
		}
	}
	if lagging > 0 && g.sets-g.dels+lagging >= t.q && ns < g.endAt+int64(LagWindow) {
		t.schedule(g.endAt+int64(LagWindow), key, timerEnd, g.n)
		return
	}
	t.end(key, ks, g, g.endAt, g.endHow, g.endSource)
	t.drop(ks, g, ns)
}

// drop forgets a generation that ended and that every master it reached has removed.
// One older than the last to finish (a lagging master's part removed late, by a read
// dated at an earlier change) leaves the last's number and time as they are: moved
// back, that time would make a lagging master's part of the last look like a new lock.
func (t *Tracker) drop(ks *keyState, g *gen, ns int64) {
	if g.phase != phaseEnded || g.dels < g.sets {
		return
	}
	ks.gens = slices.DeleteFunc(ks.gens, func(x *gen) bool { return x == g })
	if g.n < ks.done {
		return
	}
	ks.busy = ks.doneAt != 0 && ns-ks.doneAt < int64(LagWindow)
	ks.done, ks.doneAt = g.n, max(ks.doneAt, ns)
	ks.lastDone.n, ks.lastDone.firstSet, ks.lastDone.firstDel = g.n, g.firstSet, g.firstDel
	if g.acquiredAt != 0 && g.firstDel-g.firstSet < int64(ReadDelay) {
		ks.short = true
	}
}

// end closes a lifecycle at ns: the change that left it below a quorum, which source
// reported as how (Released, Expired, Evicted).
func (t *Tracker) end(key string, ks *keyState, g *gen, ns int64, how, source string) {
	g.phase = phaseEnded
	if !g.read && g.value != "" {
		// Its read after ReadDelay came too late (a starved connection, a short TTL):
		// the value a set was read with still names the writer.
		t.describe(key, g, Entry{Present: true, Type: g.vtype, Value: g.value, Fields: g.vfields, PTTLMs: -1}, ns)
	}
	if g.ttlMs == 0 && g.acquiredAt != 0 && g.validity > g.acquiredAt {
		g.ttlMs = (g.validity - g.acquiredAt) / int64(time.Millisecond)
	}
	e := Event{At: time.Unix(0, ns), Event: how, Resource: t.resource(key), Key: key, Value: g.value,
		Owner: g.owner, Library: g.library, Masters: g.sets, Quorum: t.q, TTLMs: g.ttlMs, Source: source}
	if g.acquiredAt != 0 {
		e.HeldMs = millis(time.Duration(ns - g.acquiredAt))
	}
	if how == Released && g.validity != 0 {
		e.MarginMs = millis(time.Duration(g.validity - ns))
	}
	t.emit(e)
}

// learn records what a read of a master holding generation g said about it. The read
// names g only where more masters holding g were read with its value than with any
// other (racing attempts' sets, numbered with g, or a read served before a release):
// a tie waits for more answers, the read round's.
func (t *Tracker) learn(key string, ks *keyState, g *gen, e Entry, ns int64) {
	if !g.read && e.Present && ks.leads(g, e.Value) {
		t.describe(key, g, e, ns)
		if g.acquiredAt != 0 && e.PTTLMs >= 0 {
			g.ttlMs = (ns-g.acquiredAt)/int64(time.Millisecond) + e.PTTLMs
			ks.ttlMs = g.ttlMs
		}
	}
	t.validity(key, ks, g)
}

// describe records the value e shows for g, and the library and owner it names: what
// locks.Identify answers, as for a row of a dump (a hash by its fields).
func (t *Tracker) describe(key string, g *gen, e Entry, ns int64) {
	g.read, g.value = true, e.Value
	now := time.Unix(0, ns)
	s := locks.See(locks.Entry{Key: key, Type: e.Type, Value: e.Value, Fields: e.Fields, PTTLMs: e.PTTLMs}, nil, now)
	if e.Type != locks.TypeString {
		s.Value = e.Value // the holder the reader found (locks.See with its companions)
	}
	id := locks.Identify(key, e.Value, []locks.Seen{s}, now)
	g.library, g.owner = id.Label, id.Owner
}

// validity sets g's validity, the q-th latest known deadline of the masters holding
// it (when it stops being held on a quorum), and schedules a read just after it.
func (t *Tracker) validity(key string, ks *keyState, g *gen) {
	var ds []int64
	for i := range ks.m {
		if m := &ks.m[i]; m.present && m.gen == g.n && m.deadline != 0 {
			ds = append(ds, m.deadline)
		}
	}
	if len(ds) > 0 {
		g.earliest = slices.Min(ds)
		// Every master's key is read just after its own deadline too, not only the
		// quorum's: an expired key the server has not yet removed would otherwise be
		// removed by the next SET NX on it, and Redis sends one invalidation for both.
		if latest := slices.Max(ds); latest > g.latest {
			g.latest = latest
			t.schedule(latest+int64(probeAfter), key, timerProbe, g.n)
		}
	}
	if len(ds) < t.q {
		return
	}
	slices.SortFunc(ds, func(a, b int64) int { return int(b - a) })
	if v := ds[t.q-1]; v != g.validity {
		g.validity = v
		t.schedule(v+int64(probeAfter), key, timerProbe, g.n)
	}
}

// settleAttempt decides, LagWindow after its last change, a generation that never
// reached a quorum: removed everywhere it got to, it was a failed attempt (reported
// within ContendWindow of its first set) and is taken back out of the numbering;
// still held somewhere, it is looked at again later.
func (t *Tracker) settleAttempt(key string, ks *keyState, g *gen, ns int64) {
	if Debugf != nil {
		Debugf("  settleAttempt gen %d sets %d dels %d", g.n, g.sets, g.dels)
	}
	late := ns-g.lastChange < int64(LagWindow) || g.dels < g.sets
	for i := range ks.m {
		// A master that has not joined it may still deliver its part: wait until its
		// feed has delivered everything made before the attempt's last change.
		late = late || ks.m[i].gen < g.n && !t.caughtUp(i, g.lastChange)
	}
	if late {
		t.probeUnseen(key, ks, g, ns)
		t.schedule(max(g.lastChange, ns)+int64(LagWindow), key, timerSettle, g.n)
		return
	}
	if g.lastChange-g.firstSet <= int64(ContendWindow) && !g.quiet && !g.noAttempt {
		// (One first found by a whole read after a gap may be a part left there by any
		// lock of the gap: not an attempt seen.)
		t.emit(Event{At: time.Unix(0, g.lastChange), Event: Contended, Resource: t.resource(key), Key: key, Value: g.value,
			Masters: g.sets, Quorum: t.q, HeldMs: millis(time.Duration(g.lastChange - g.firstSet)), Source: g.source})
	}
	// Take it back: the masters it reached count their later sets one lower, so
	// that the next attempt lines up across masters again.
	for _, x := range ks.gens {
		if x.n > g.n {
			return // later generations already numbered past it: leave the numbering
		}
	}
	for i := range ks.m {
		if ks.m[i].gen == g.n && !ks.m[i].present {
			ks.m[i].gen--
		}
	}
	ks.gens = slices.DeleteFunc(ks.gens, func(x *gen) bool { return x == g })
}
