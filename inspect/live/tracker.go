package live

import (
	"cmp"
	"container/heap"
	"math/bits"
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
	// proveWindow: a lock's change this soon after its acquisition may be an
	// extension that proves the lease (a client that extends at once), which only a read
	// tells from a release.
	proveWindow = 5 * time.Millisecond
	// extendMin is how far a deadline must move to be an extension, not the jitter
	// of reading the same TTL twice.
	extendMin = 5 * time.Millisecond
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

// mstate is one master's side of one key.
type mstate struct {
	gen     uint32 // the generation of its last set (0: never set)
	present bool
	reading bool // a read of it is outstanding
	verify  bool // its next change is settled by a read, not inferred
	merged  bool // the outstanding read settles a change that was set or removal
	probe   bool // the outstanding read asks whether its last change also set the next generation (see probeUnseen)
	synced  bool // the master's whole read in progress found it (see SyncPage)
	round   bool // its outstanding read is one of the key's read round (see keyState.round)
	peek    bool // and only the round's: it holds another generation, which the answer does not settle (see readRound)
	// Changes named by keyspace notifications (see Change).
	named    bool   // one was applied since the key's last invalidation there, which it accounts for
	fresh    bool   // set, and no TTL named since: the next expire is the set's own
	pendSet  bool   // the change pending is a set: the holder may have changed
	again    bool   // an invalidation came while the outstanding read was out
	invs     int    // invalidations the outstanding read settles (see ReadDone)
	invMark  int64  // the master's mark when its last invalidation came while the read was out (unix ns)
	askedGen uint32 // gen when the outstanding read was asked
	pendAt   int64  // an expire or set of the held key that the outstanding read settles (unix ns)
	invAt    int64  // the first change not settled yet (unix ns)
	lastInv  int64  // its last invalidation (unix ns)
	deadline int64  // its expiry, when read (unix ns; 0 unknown)
	// young: the outstanding read was asked for a change right after the lock's
	// acquisition (see proveWindow). held: such a read found the key held after that
	// one change (unix ns; 0: not): an extension, or a release whose next set the read
	// found before that set's invalidation came. The next change within LagWindow
	// is read to say which (heldNext); none means an extension. heldE is what the
	// read found, heldInv the change's time.
	young, heldNext bool
	held, heldInv   int64
	heldE           Entry
	// aheadAt: a read found a change (at this time, unix ns) that the feed may not
	// have delivered yet: the key gone where it was held, or set (by a new holder)
	// where it was not (-ns: set with another value than its generation's); its next
	// invalidation may be that change's (see Invalidate).
	aheadAt int64
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
	read       bool  // its value and TTL were read
	value      string
	owner      string
	library    string
	ttlMs      int64
	validity   int64 // the q-th latest deadline of its masters (unix ns; 0 unknown)
	earliest   int64 // the earliest deadline read on any of its masters (unix ns; 0 unknown)
	latest     int64 // the latest one, read just after it
	extends    int   // masters whose deadline moved past the validity since the last extended
	source     string
	vtype      string            // the type the value was read with
	vfields    map[string]string // and a hash's fields
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
	unsure  bool
	busy    bool
	quietAt int64
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

// Tracker infers lock lifecycles from changes and reads. It is not safe for
// concurrent use: one goroutine feeds it (see Feed.Run). Its methods take the time of
// the signal, so that tests can replay sequences.
type Tracker struct {
	n, q     int
	names    []string
	resource func(key string) string
	emit     func(Event)
	read     func(mi int, key string) // asks for a read; the result comes to ReadDone
	keys     map[string]*keyState
	timers   timerHeap
	swept    int64
	marks    []int64          // per master: every change made before this was delivered (unix ns; 0 unknown)
	lag      []int64          // per master: how far its sets come after a generation's first, smoothed (ns)
	forced   map[string]int64 // resource -> when an operator's force-release of it was audited
	gapped   []bool           // per master: in a gap, until its next SyncEnd
	base     *base            // keys found held by a whole read, unchanged since
}

// NewTracker tracks n masters (names for events) with quorum q. emit receives every
// event; read asks for a read of one key on one master, answered by ReadDone or
// ReadFailed.
func NewTracker(names []string, q int, resource func(string) string, emit func(Event), read func(mi int, key string)) *Tracker {
	return &Tracker{n: len(names), q: q, names: names, resource: resource, emit: emit, read: read, keys: make(map[string]*keyState),
		marks: make([]int64, len(names)), lag: make([]int64, len(names)), gapped: make([]bool, len(names)),
		base: newBase(true)}
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
// cannot say: no mark yet, or in a gap).
func (t *Tracker) caughtUp(mi int, ns int64) bool {
	return t.gapped[mi] || t.marks[mi] == 0 || t.marks[mi] >= ns
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

// Invalidate is a change of key on master mi at at (one invalidation).
func (t *Tracker) Invalidate(mi int, key string, at time.Time) {
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
	if ms.held != 0 && !ms.reading {
		ms.heldNext = true // the next change after a lock found held: a read says which
		t.askRead(mi, key, ms, ns)
		return
	}
	switch {
	case ms.reading || ms.verify:
		ms.again = ms.again || ms.reading && ms.invAt != 0 // a second change pending
		t.askRead(mi, key, ms, ns)
		return
	case !ms.present:
		if ms.aheadAt != 0 {
			// A read found the key gone before the feed delivered that change: this
			// may be it (a release, or the read's own lazy expiry of the key), not a
			// new set. A mark does not settle it: a read's time is the client's,
			// and Redis sends an event-loop iteration's invalidations after its
			// replies, so a PING served beside the read may come back first. A read
			// says which.
			ms.aheadAt = 0
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
			if ks.heldShort(ms.gen) && merged(prev, next.firstSet, next.firstDel, t.lag[mi]) {
				// Its previous change came as the others set this generation, and it
				// lags them by less than they held it: that change was a removal and
				// this set, merged. Reading would race the key's next changes. (Not
				// after a lock held long: there this is as likely a racing round's
				// start, a winner's set delivered just after a loser's parts are
				// removed, its previous change the last holder's release.)
				t.set(key, ks, mi, prev, Entry{}, SourceTracking, false)
				t.unset(key, ks, mi, ns, endHow(expiredBy(ms, ks.gen(ms.gen), ns)), SourceTracking)
				return
			}
			ms.merged = true // a read says which
			t.askRead(mi, key, ms, ns)
			return
		}
		if d := ks.lastDone; d.n == ms.gen+1 && d.firstDel-d.firstSet < int64(LagWindow) && merged(prev, d.firstSet, d.firstDel, t.lag[mi]) {
			// The same, where the others have already finished that generation:
			// this removal ends this master's part of it.
			t.unsure(key, ks, ns)
			ms.gen = d.n
			return
		}
		t.set(key, ks, mi, ns, Entry{}, SourceTracking, false)
		if g := ks.gen(ms.gen); g != nil && ms.gen > ks.done {
			t.lag[mi] = followMedian(t.lag[mi], ns-g.firstSet)
		}
	default:
		if ms.aheadAt != 0 {
			// A read found this set before the feed delivered it (the read's reply
			// overtook the invalidation, which comes on another connection): this
			// may be it, not a removal. A read says which (see settle).
			ms.merged = true // (aheadAt stays for settle)
			t.askRead(mi, key, ms, ns)
			return
		}
		g := ks.gen(ms.gen)
		if next := ks.gen(ms.gen + 1); next != nil && next.sets > 0 {
			t.unsure(key, ks, ns) // this removal may also have set next
		}
		switch {
		case expiredBy(ms, g, ns):
			t.unset(key, ks, mi, ns, Expired, SourceTracking) // a change at or after its deadline: the expiry
		case g != nil && g.read && g.phase != phaseEnded:
			t.askRead(mi, key, ms, ns) // released, or extended? the read says
		case g != nil && g.open() && !g.quiet && !ks.looping(g) && ns-g.acquiredAt < int64(proveWindow):
			// A change right after the acquisition, on a key not in a loop of short
			// locks: a release at once, or an extension that proves the lease (as
			// `redlockctl run` once did)? Only a read can tell; taken for a release,
			// the lock would be reported ended while it is held, and each later
			// extension the wrong way round.
			ms.young = true
			t.askRead(mi, key, ms, ns)
		default:
			t.unset(key, ks, mi, ns, Released, SourceTracking) // young locks are taken to end by release
		}
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
	if ms.invAt == 0 {
		ms.invAt = invAt
	}
	if invAt != 0 {
		ms.invs++
	}
	ms.verify = false
	if ms.reading {
		if invAt != 0 {
			ms.invMark = t.marks[mi]
		}
		return // the read in flight settles this change too (see ReadDone)
	}
	ms.reading, ms.askedGen = true, ms.gen
	t.read(mi, key)
}

// set: master mi now holds key (since ns): the next generation there.
func (t *Tracker) set(key string, ks *keyState, mi int, ns int64, e Entry, source string, quiet bool) {
	ms := &ks.m[mi]
	ms.gen++
	ms.present, ms.deadline, ms.aheadAt = true, 0, 0
	ks.last = max(ks.last, ns)
	if e.Present && e.PTTLMs >= 0 {
		ms.deadline = cmp.Or(e.ReadAt, ns) + e.PTTLMs*int64(time.Millisecond)
	}
	if ms.gen <= ks.done {
		if !t.caughtUp(mi, ks.doneAt) {
			return // a lagging master's part of a generation that has finished
		}
		ms.gen = ks.done + 1 // it missed some (a timeout, a merged change): it catches up
	}
	g := ks.gen(ms.gen)
	if g == nil {
		g = &gen{n: ms.gen, firstSet: ns, source: source, quiet: quiet}
		ks.gens = append(ks.gens, g)
		slices.SortFunc(ks.gens, func(a, b *gen) int { return int(a.n) - int(b.n) })
		t.schedule(ns+int64(LagWindow), key, timerSettle, g.n)
	}
	g.sets++
	prev := g.lastChange
	g.lastChange = ns
	if e.Present && g.value == "" {
		g.value, g.vtype, g.vfields = e.Value, e.Type, e.Fields
	}
	t.advance(key, ks, g, evidence{step: stepSet, prev: prev, e: e, source: source}, ns)
}

// unset: master mi no longer holds key (since ns); how is Released, Expired (it
// reached its TTL) or Evicted, and source what said so.
func (t *Tracker) unset(key string, ks *keyState, mi int, ns int64, how, source string) {
	ms := &ks.m[mi]
	ms.present, ms.deadline, ms.fresh = false, 0, false
	ks.last = max(ks.last, ns)
	g := ks.gen(ms.gen)
	if g == nil {
		return // a generation already closed (a master that lagged behind it)
	}
	g.dels++
	if g.firstDel == 0 {
		g.firstDel = ns
	}
	g.lastChange = ns
	t.advance(key, ks, g, evidence{step: stepRemoved, how: how, source: source}, ns)
	t.drop(ks, g, ns)
}

// contender follows a removal of g (acquired, not ended) at ns, ended how: one that
// leaves g held on a quorum within LagWindow of its first set may be a racing
// attempt's part (see the package doc), or the first of the holder's release whose
// rest is delivered later; split decides.
func (t *Tracker) contender(key string, ks *keyState, g *gen, ns int64, how string) {
	if g.sets-g.dels >= t.q && how == Released {
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
	if g.quiet || n <= 0 || ns-g.firstSet > int64(LagWindow) {
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
			if m.invAt == 0 && (t.marks[i] >= x || now >= x && t.caughtUp(i, x)) {
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

// ReadDone is the answer to a read of key on master mi, taken at at.
func (t *Tracker) ReadDone(mi int, key string, at time.Time, e Entry) {
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
	ms.invMark = 0
	if ms.round {
		ms.round = false
		ks.roundAnswer(mi, e)
	}
	if ms.peek {
		ms.peek = false
		if ms.invAt == 0 && !ms.again {
			if ks.round.left == 0 && ks.round.gen != 0 {
				t.realign(key, ks, ns)
			}
			return // the round's alone (see readRound)
		}
	}
	invAt := ms.invAt
	if invAt == 0 {
		invAt = ns
	}
	ms.invAt = 0
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
	ms.invs = 0
	t.settle(key, ks, mi, invAt, ns, e, SourceTracking, false)
	if ks.round.left == 0 && ks.round.gen != 0 {
		t.realign(key, ks, ns)
	}
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

// ReadFailed: a read of key on master mi got no answer; its next change is read.
func (t *Tracker) ReadFailed(mi int, key string) {
	ks := t.keys[key]
	if ks == nil {
		return
	}
	ms := &ks.m[mi]
	ms.reading, ms.invAt, ms.verify, ms.again, ms.invs, ms.invMark = false, 0, true, false, 0, 0
	ms.young, ms.heldNext, ms.held = false, false, 0 // the next change is read, and settled as any
	ks.leaveRound(ms)
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
	if ms.invs >= 2 && ms.invs%2 == 0 {
		t.unset(key, ks, mi, invAt, Released, SourceTracking)
		ms.invAt = ms.lastInv
		return false
	}
	ms.held, ms.heldInv, ms.heldE = ns, invAt, e
	ms.invs, ms.again = 0, false
	t.schedule(ns+int64(LagWindow), key, timerHeld, g.n)
	return true
}

// movedOn reports whether b, read at bNs, shows a deadline later than a, read at
// aNs: the key was extended between the two reads.
func movedOn(a Entry, aNs int64, b Entry, bNs int64) bool {
	if a.PTTLMs < 0 || b.PTTLMs < 0 {
		return false
	}
	da := cmp.Or(a.ReadAt, aNs) + a.PTTLMs*int64(time.Millisecond)
	db := cmp.Or(b.ReadAt, bNs) + b.PTTLMs*int64(time.Millisecond)
	return db > da+int64(extendMin)
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

// leaveRound takes ms's outstanding read out of the key's read round, which then
// realigns nothing (a read failed, or a keyspace notification names the changes).
func (ks *keyState) leaveRound(ms *mstate) {
	if ms.round {
		ms.round, ms.peek = false, false
		ks.round.left--
		ks.round.bad = true
	}
}

// settle makes master mi's state of key what a read found (at ns; the change that
// led to it came at invAt).
func (t *Tracker) settle(key string, ks *keyState, mi int, invAt, ns int64, e Entry, source string, quiet bool) {
	ms := &ks.m[mi]
	merged, other, probe := ms.merged, ms.aheadAt < 0, ms.probe
	ms.merged, ms.probe = false, false
	if merged {
		ms.aheadAt = 0 // what the read was asked for (see Invalidate)
	}
	if !e.Present {
		switch {
		case ms.present:
			expired := expiredBy(ms, ks.gen(ms.gen), invAt)
			t.unset(key, ks, mi, invAt, endHow(expired), source)
			if invAt == ns || expired {
				// No change was delivered, or the read's own GET may have expired
				// it: the invalidation for this removal may be yet to come.
				ms.aheadAt = ns
			}
		case merged:
			// Set and removed, and only the removal was seen: count both.
			t.set(key, ks, mi, invAt, Entry{}, source, false)
			t.unset(key, ks, mi, invAt, Released, source)
		}
		return
	}
	g := ks.gen(ms.gen)
	if merged && ms.present {
		// A read had applied a set before its invalidation came (see Invalidate); this
		// read says whether the invalidation since was that set's. A racing attempt's
		// set (another value than its generation's, aheadAt < 0) still there: it was,
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
	if !ms.present || g == nil || g.read && e.Value != g.value {
		if ms.present {
			t.unset(key, ks, mi, invAt, endHow(expiredBy(ms, g, invAt)), source) // deleted (or expired), and set again by another holder
		}
		t.setRead(key, ks, mi, invAt, ns, e, source, quiet, probe)
		return
	}
	t.refresh(key, ks, mi, g, invAt, ns, e, source)
}

// setRead: a read of master mi answered at ns found key set (e), which its state did
// not hold; the change that led to it came at invAt. Where no invalidation came while
// the read was out, the set's may be yet to come: the next one there may be it.
func (t *Tracker) setRead(key string, ks *keyState, mi int, invAt, ns int64, e Entry, source string, quiet, probe bool) {
	ms := &ks.m[mi]
	t.set(key, ks, mi, invAt, e, source, quiet)
	if !quiet && !ms.again && !probe {
		ms.aheadAt = ns
		if g := ks.gen(ms.gen); g != nil && g.value != e.Value {
			ms.aheadAt = -ns // a racing attempt's part of g (see the package doc)
		}
	}
}

// refresh records what a read of master mi, still holding generation g, found (its
// TTL, and the value when g's was not read yet): a deadline moved on a quorum of
// masters is an extension (at invAt, reported by source).
func (t *Tracker) refresh(key string, ks *keyState, mi int, g *gen, invAt, ns int64, e Entry, source string) {
	ms := &ks.m[mi]
	old := ms.deadline
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

// learn records what a read of a master holding generation g said about it.
func (t *Tracker) learn(key string, ks *keyState, g *gen, e Entry, ns int64) {
	if !g.read && e.Present {
		t.describe(key, g, e, ns)
		if g.acquiredAt != 0 && e.PTTLMs >= 0 {
			g.ttlMs = (ns-g.acquiredAt)/int64(time.Millisecond) + e.PTTLMs
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

// lockKey reports whether key may be a lock's: a lock's companion (a fence counter, a
// queue, a signal list) changes with its lock and is no lifecycle of its own.
func lockKey(key string) bool {
	_, _, companion := locks.CompanionOf(key)
	return !companion
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
	for key, ks := range t.keys {
		if owns != nil && !owns(key) {
			continue
		}
		ms := &ks.m[mi]
		ms.verify, ms.invAt, ms.invs, ms.invMark = false, 0, 0, 0
		ms.named, ms.fresh, ms.pendAt, ms.pendSet = false, false, 0, false
		ms.young, ms.heldNext, ms.held = false, false, 0
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
		}
		t.settle(key, ks, mi, ns, ns, e, source, quiet)
		if !quiet {
			found += max(t.openLifecycles(ks)-open, 0)
		}
	}
	return found
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
		deadline = cmp.Or(e.ReadAt, ns) + e.PTTLMs*int64(time.Millisecond)
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
		case timerRead, timerProbe:
			if g.phase == phaseEnded && tm.kind == timerRead {
				continue
			}
			if tm.kind == timerRead {
				t.readRound(tm.key, ks, g, ns)
				continue
			}
			for i := range ks.m {
				if m := &ks.m[i]; m.present && m.gen == g.n {
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

// readRound reads every master of key once generation g (acquired) has been held
// ReadDelay: those holding it for its value and TTL, the others to check that they do
// not (a change there inferred the wrong way round, a read's reply overtaking an
// invalidation or two changes merged into one, would otherwise turn every later set
// there into a removal and back). Their answers may realign the key (see realign).
func (t *Tracker) readRound(key string, ks *keyState, g *gen, ns int64) {
	if ks.round.left > 0 && ns-ks.round.at < int64(ContendWindow) {
		return // one is out
	}
	for i := range ks.m {
		ks.m[i].round, ks.m[i].peek = false, false // (an answer lost with its connection is not waited for)
	}
	ks.round.gen, ks.round.left, ks.round.at = g.n, 0, ns
	ks.round.bad, ks.round.value, ks.round.holders = false, "", 0
	for i := range ks.m {
		m := &ks.m[i]
		if m.reading && m.invAt != 0 || t.gapped[i] {
			ks.round.bad = true // a change there is being settled, or it is in a gap
			continue
		}
		// A master holding another generation (a lagging master's part, or one left
		// by a failed release) is read for the round only: taken as a change, its
		// answer would start a generation that the next lock's sets join.
		m.peek = !m.reading && m.present && m.gen != g.n
		t.askRead(i, key, m, 0) // no change to date: the answer's time is used
		m.round = true
		ks.round.left++
	}
}

// roundAnswer records master mi's answer e to the key's read round.
func (ks *keyState) roundAnswer(mi int, e Entry) {
	r := &ks.round
	r.left--
	switch {
	case e.ReadAt != 0 && e.ReadAt < r.at:
		// A read sent before the round, out when it began (a slow link's): it may
		// predate the lock's set there, still to be delivered.
		r.bad = true
	case !e.Present:
	case r.value == "" || r.value == e.Value:
		r.value = e.Value
		if mi < 64 {
			r.holders |= 1 << mi
		}
	default:
		r.bad = true // two values: a lock and another's attempt, or a new holder
	}
}

// realign makes the key's state what its read round found, when every master answered
// with nothing changing meanwhile, one value held on a quorum, and the round's
// generation still open: that generation is the lock, held by the masters that hold
// it, and taken part in by the others; any other generation open is let go (one
// reported acquired ends, released, at its last change). Removals that may still be
// a contender's parts (see early) stay so, as many as masters not holding it.
// Mistaken inferences (a racing round's parts numbered into the wrong generations,
// merged changes taken the wrong way round) then end with the lock they happened in,
// instead of carrying on to the next ones.
func (t *Tracker) realign(key string, ks *keyState, ns int64) {
	r := ks.round
	ks.round.gen = 0
	g := ks.gen(r.gen)
	if r.bad || g == nil || !g.open() || t.n > 64 || bits.OnesCount64(r.holders) < t.q {
		return
	}
	if g.value != "" && g.value != r.value {
		return // another lock since
	}
	for _, x := range ks.gens {
		if x != g && x.open() && !x.quiet {
			t.end(key, ks, x, x.lastChange, Released, SourceTracking)
		}
	}
	ks.gens = []*gen{g}
	ks.done = max(ks.done, g.n-1)
	holders := bits.OnesCount64(r.holders)
	// The masters it reached stay counted (one may have evicted it), each that no
	// longer holds it as having removed it; an early removal still waits for split.
	g.sets = max(g.sets, holders)
	g.dels, g.phase = g.sets-holders, phaseAcquired
	if g.early = min(g.early, t.n-holders); g.early == 0 {
		g.heldPast = 0 // a master whose removal looked like a contender's holds the lock
	}
	for i := range ks.m {
		m := &ks.m[i]
		m.gen, m.present, m.aheadAt, m.merged, m.probe = g.n, r.holders&(1<<i) != 0, 0, false, false
		if !m.present {
			m.deadline = 0
		}
	}
	t.validity(key, ks, g)
}

// settleAttempt decides, LagWindow after its last change, a generation that never
// reached a quorum: removed everywhere it got to, it was a failed attempt (reported
// within ContendWindow of its first set) and is taken back out of the numbering;
// still held somewhere, it is looked at again later.
func (t *Tracker) settleAttempt(key string, ks *keyState, g *gen, ns int64) {
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
	if g.lastChange-g.firstSet <= int64(ContendWindow) && !g.quiet {
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

// probeUnseen reads, once, the masters that may hold attempt g unseen: g is held on
// fewer than a quorum and unchanged for LagWindow, and masters last seen removing the
// generation before it could make up the quorum. Their removal may have been merged
// with g's set (Redis sends one invalidation for both when they fall in one
// event-loop iteration). A set found there is dated at that invalidation.
func (t *Tracker) probeUnseen(key string, ks *keyState, g *gen, ns int64) {
	if g.probed || g.quiet || g.dels >= g.sets || ns-g.lastChange < int64(LagWindow) {
		return
	}
	var unseen []int
	for i := range ks.m {
		if m := &ks.m[i]; !m.present && m.gen == g.n-1 && !m.reading && m.invAt == 0 && m.lastInv >= g.firstSet-int64(mergeSlack) {
			unseen = append(unseen, i)
		}
	}
	if ks.holders(g.n)+len(unseen) < t.q {
		return
	}
	g.probed = true
	for _, i := range unseen {
		ks.m[i].probe = true
		t.askRead(i, key, &ks.m[i], ks.m[i].lastInv)
	}
}

// unsure records that a change of key was taken for one of two things it may have
// been, and has the key read once it goes quiet.
func (t *Tracker) unsure(key string, ks *keyState, ns int64) {
	ks.unsure = true
	if ks.quietAt == 0 {
		ks.quietAt = ns + int64(LagWindow)
		t.schedule(ks.quietAt, key, timerQuiet, 0)
	}
}

// verifyQuiet reads every master of a key that has not changed for LagWindow since
// a change there was unsure, or since it was busy, and that is not held on a quorum
// as far as the inference goes: with the key quiet the reads race nothing, and each
// master is set right, as of its last change. Without this, a removal merged with the
// next set, on a quorum of masters or on one taken the wrong way round since, would
// leave every later change there taken the wrong way round, and a lock then held for
// long (one that overruns) unseen. Busy keys are read only when they pause; keys that
// are set and released once, or less often than every LagWindow, never are.
func (t *Tracker) verifyQuiet(key string, ks *keyState, ns int64) {
	ks.quietAt = 0
	if !ks.unsure {
		return
	}
	if ns-ks.last < int64(LagWindow) {
		ks.quietAt = ks.last + int64(LagWindow)
		t.schedule(ks.quietAt, key, timerQuiet, 0)
		return
	}
	ks.unsure, ks.busy = false, false
	if t.openLifecycles(ks) > 0 {
		return // held as far as the inference goes: its reads after ReadDelay check it
	}
	for i := range ks.m {
		if m := &ks.m[i]; !m.reading && m.invAt == 0 && !m.verify && m.lastInv != 0 && !t.gapped[i] {
			m.probe = true
			t.askRead(i, key, m, m.lastInv)
		}
	}
}

// Next returns when the next timer is due (zero when none is).
func (t *Tracker) Next() time.Time {
	if len(t.timers) == 0 {
		return time.Time{}
	}
	return time.Unix(0, t.timers[0].at)
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
