package live

import (
	"container/heap"
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
)

// Timing of the inference (see the package doc).
const (
	// ReadDelay is how long a lock is held before the tracker reads its value and TTL:
	// short enough for every lock a person asks about, long enough that the
	// millisecond locks of a busy workload are never read.
	ReadDelay = 50 * time.Millisecond
	// ContendWindow bounds a failed attempt: values on fewer than a quorum removed
	// within it are `contended`; longer ones are locks of one server, not attempts.
	ContendWindow = time.Second
	// probeAfter is how long after a known deadline the key is read, so that the
	// server expires it then rather than when its sampling finds it.
	probeAfter = time.Millisecond
	// extendMin is how far a deadline must move to be an extension, not the jitter
	// of reading the same TTL twice.
	extendMin = 5 * time.Millisecond
)

// presence is what the tracker believes one master holds at one key.
type presence uint8

const (
	absent   presence = iota
	cand              // set, not (yet) part of a lifecycle
	member            // part of the key's current lifecycle
	leftover          // set, but its lifecycle ended (being deleted or expiring)
	unknown           // the master's feed is cut: settled by the next resync
)

// mstate is one master's side of one key.
type mstate struct {
	p        presence
	reading  bool  // a read of it is outstanding
	dirty    bool  // it changed while the read was outstanding
	verify   bool  // its next change is settled by a read, not inferred
	invAt    int64 // the first change not settled yet (unix ns)
	setAt    int64 // when it was set (unix ns)
	deadline int64 // its expiry, when read (unix ns; 0 unknown)
}

// life is one lifecycle of a key: from a quorum to its end.
type life struct {
	id         uint64
	acquiredAt int64 // 0 when it was already held when seen first
	members    int   // masters in it (member or unknown)
	most       int   // the most masters it was on at once
	value      string
	owner      string
	library    string
	ttlMs      int64
	read       bool // its value and TTL were read
	extends    int  // members whose deadline moved past the validity since the last extended
	validity   int64
	source     string
}

// keyState is everything tracked for one key.
type keyState struct {
	m         []mstate
	cands     int
	candSince int64
	candMax   int
	life      *life
}

// Entry is what one master holds at one key when read: Present false for absent.
type Entry struct {
	Present bool
	Type    string // "string", "hash", ...
	Value   string // a string's value, or a hash lock's holder
	PTTLMs  int64  // -1 no expiry
}

// Tracker infers lock lifecycles from changes and reads. It is not safe for
// concurrent use: one goroutine feeds it (see Run). Its methods take the time of the
// signal, so that tests can replay sequences.
type Tracker struct {
	n, q     int
	names    []string
	resource func(key string) string
	emit     func(Event)
	read     func(mi int, key string) // asks for a read; the result comes to ReadDone
	keys     map[string]*keyState
	timers   timerHeap
	lifeID   uint64
}

// NewTracker tracks n masters (names for events) with quorum q. emit receives every
// event; read asks for a read of one key on one master, answered by ReadDone.
func NewTracker(names []string, q int, resource func(string) string, emit func(Event), read func(mi int, key string)) *Tracker {
	return &Tracker{n: len(names), q: q, names: names, resource: resource, emit: emit, read: read, keys: make(map[string]*keyState)}
}

// Keys returns how many keys the tracker holds state for.
func (t *Tracker) Keys() int { return len(t.keys) }

func (t *Tracker) state(key string) *keyState {
	ks := t.keys[key]
	if ks == nil {
		ks = &keyState{m: make([]mstate, t.n)}
		t.keys[key] = ks
	}
	return ks
}

// forget drops a key nobody holds any more.
func (t *Tracker) forget(key string, ks *keyState) {
	if ks.life != nil || ks.cands > 0 {
		return
	}
	for i := range ks.m {
		if ks.m[i].p != absent || ks.m[i].reading {
			return
		}
	}
	delete(t.keys, key)
}

// Invalidate is a change of key on master mi at at (one invalidation).
func (t *Tracker) Invalidate(mi int, key string, at time.Time) {
	ks := t.state(key)
	ms := &ks.m[mi]
	ns := at.UnixNano()
	switch {
	case ms.p == unknown:
		return // the resync after the gap settles it
	case ms.reading:
		ms.dirty = true
		if ms.invAt == 0 {
			ms.invAt = ns
		}
		return
	case ms.verify:
		t.askRead(mi, key, ms, ns)
		return
	}
	switch ms.p {
	case absent:
		t.set(key, ks, mi, ns, "", SourceTracking, false)
	case cand, leftover:
		t.unset(key, ks, mi, ns, false)
	case member:
		l := ks.life
		switch {
		case ms.deadline != 0 && ns >= ms.deadline:
			t.unset(key, ks, mi, ns, true) // a change at or after its deadline: the expiry
		case l.read:
			t.askRead(mi, key, ms, ns) // released, or extended? the read says
		default:
			t.unset(key, ks, mi, ns, false) // young locks are taken to end by release
		}
	}
	t.forget(key, ks)
}

// Flush is a FLUSHALL or FLUSHDB on master mi: every key there is gone.
func (t *Tracker) Flush(mi int, owns func(string) bool, at time.Time) {
	for key, ks := range t.keys {
		if owns != nil && !owns(key) {
			continue
		}
		if p := ks.m[mi].p; p != absent && p != unknown {
			t.unset(key, ks, mi, at.UnixNano(), false)
		}
		t.forget(key, ks)
	}
}

func (t *Tracker) askRead(mi int, key string, ms *mstate, invAt int64) {
	if ms.invAt == 0 {
		ms.invAt = invAt
	}
	ms.verify = false
	if ms.reading {
		ms.dirty = true
		return
	}
	ms.reading = true
	t.read(mi, key)
}

// set: master mi now holds key (since ns).
func (t *Tracker) set(key string, ks *keyState, mi int, ns int64, value string, source string, quiet bool) {
	ms := &ks.m[mi]
	ms.setAt, ms.deadline = ns, 0
	if l := ks.life; l != nil {
		ms.p = member // a late set of the holder (or a contender's, undistinguishable)
		l.members++
		l.most = max(l.most, l.members)
		return
	}
	ms.p = cand
	if ks.cands == 0 {
		ks.candSince, ks.candMax = ns, 0
		t.schedule(ns+int64(ReadDelay), key, timerCand, 0)
	}
	ks.cands++
	ks.candMax = max(ks.candMax, ks.cands)
	if ks.cands < t.q {
		return
	}
	t.lifeID++
	l := &life{id: t.lifeID, acquiredAt: ns, members: ks.cands, most: ks.cands, value: value, source: source}
	if quiet {
		l.acquiredAt = 0 // held before the feed saw it
	}
	ks.life, ks.cands = l, 0
	for i := range ks.m {
		if ks.m[i].p == cand {
			ks.m[i].p = member
		}
	}
	if !quiet {
		t.emit(Event{At: time.Unix(0, ns), Event: Acquired, Resource: t.resource(key), Key: key, Value: value,
			Masters: l.members, Quorum: t.q, Source: source})
	}
	t.schedule(ns+int64(ReadDelay), key, timerRead, l.id)
}

// unset: master mi no longer holds key (since ns); expired says it reached its TTL.
func (t *Tracker) unset(key string, ks *keyState, mi int, ns int64, expired bool) {
	ms := &ks.m[mi]
	was := ms.p
	ms.p, ms.deadline = absent, 0
	switch was {
	case cand:
		ks.cands--
		if ks.cands == 0 && ns-ks.candSince <= int64(ContendWindow) {
			t.emit(Event{At: time.Unix(0, ns), Event: Contended, Resource: t.resource(key), Key: key,
				Masters: ks.candMax, Quorum: t.q, HeldMs: millis(time.Duration(ns - ks.candSince)), Source: SourceTracking})
		}
	case member, unknown:
		if l := ks.life; l != nil {
			if l.members--; l.members < t.q {
				t.end(key, ks, ns, expired)
			}
		}
	}
}

// end closes the key's lifecycle at ns: the change that left it below a quorum.
func (t *Tracker) end(key string, ks *keyState, ns int64, expired bool) {
	l := ks.life
	ks.life = nil
	for i := range ks.m {
		if ks.m[i].p == member {
			ks.m[i].p = leftover
		}
	}
	e := Event{At: time.Unix(0, ns), Event: Released, Resource: t.resource(key), Key: key, Value: l.value,
		Owner: l.owner, Library: l.library, Quorum: t.q, TTLMs: l.ttlMs, Source: l.source}
	e.Masters = l.most
	if expired {
		e.Event = Expired
	}
	if l.acquiredAt != 0 {
		e.HeldMs = millis(time.Duration(ns - l.acquiredAt))
	}
	if !expired && l.validity != 0 {
		e.MarginMs = millis(time.Duration(l.validity - ns))
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
	invAt := ms.invAt
	if invAt == 0 {
		invAt = ns
	}
	ms.invAt = 0
	t.settle(key, ks, mi, invAt, ns, e, SourceTracking)
	if ms.dirty {
		ms.dirty = false
		t.askRead(mi, key, ms, ns)
	}
	t.forget(key, ks)
}

// settle makes master mi's state of key what a read found (at ns; the change that
// led to it came at invAt).
func (t *Tracker) settle(key string, ks *keyState, mi int, invAt, ns int64, e Entry, source string) {
	ms := &ks.m[mi]
	l := ks.life
	if !e.Present {
		switch ms.p {
		case absent:
		case member:
			t.unset(key, ks, mi, invAt, ms.deadline != 0 && invAt >= ms.deadline)
		case unknown:
			t.unset(key, ks, mi, invAt, false)
		default:
			t.unset(key, ks, mi, invAt, false)
		}
		return
	}
	deadline := int64(0)
	if e.PTTLMs >= 0 {
		deadline = ns + e.PTTLMs*int64(time.Millisecond)
	}
	switch ms.p {
	case absent:
		t.set(key, ks, mi, invAt, e.Value, source, false)
	case unknown:
		ms.p = member // held through the gap (or so it seems: the value says)
	case member:
		if l.read && e.Value != l.value {
			t.unset(key, ks, mi, invAt, false) // deleted and set again by another holder
			t.set(key, ks, mi, invAt, e.Value, source, false)
			return
		}
	}
	ms = &ks.m[mi]
	old := ms.deadline
	ms.deadline = deadline
	if l = ks.life; l == nil || ms.p != member {
		return
	}
	t.learn(key, ks, l, e, ns)
	if old != 0 && deadline > old+int64(extendMin) && deadline > l.validity && l.read {
		l.extends++
		if l.extends == t.q {
			l.extends = 0
			t.validity(key, ks, l)
			t.emit(Event{At: time.Unix(0, invAt), Event: Extended, Resource: t.resource(key), Key: key, Value: l.value,
				Owner: l.owner, Library: l.library, Masters: l.members, Quorum: t.q, TTLMs: e.PTTLMs, Source: source})
		}
	}
}

// learn records what a read of a member said about the lifecycle.
func (t *Tracker) learn(key string, ks *keyState, l *life, e Entry, ns int64) {
	if !l.read {
		l.read, l.value = true, e.Value
		lk := locks.Decode(locks.Entry{Key: key, Type: e.Type, Value: e.Value, PTTLMs: e.PTTLMs}, nil, time.Unix(0, ns))
		if e.Type == locks.TypeHash {
			lk = locks.Lock{Library: locks.Redisson, Owner: e.Value}
		}
		l.library, l.owner = lk.Library, lk.Owner
		if l.acquiredAt != 0 && e.PTTLMs >= 0 {
			l.ttlMs = (ns-l.acquiredAt)/int64(time.Millisecond) + e.PTTLMs
		}
	}
	t.validity(key, ks, l)
}

// validity is the q-th latest known deadline of the members: when the lock stops
// being held on a quorum. A probe is scheduled at each member's deadline.
func (t *Tracker) validity(key string, ks *keyState, l *life) {
	var ds []int64
	for i := range ks.m {
		if ks.m[i].p == member && ks.m[i].deadline != 0 {
			ds = append(ds, ks.m[i].deadline)
		}
	}
	if len(ds) < t.q {
		return
	}
	// sort descending, small n
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j] > ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	if v := ds[t.q-1]; v != l.validity {
		l.validity = v
		t.schedule(v+int64(probeAfter), key, timerProbe, l.id)
	}
}

// Gap: master mi's feed was cut; its keys (those owns reports, nil: all) are unknown
// until the next Sync.
func (t *Tracker) Gap(mi int, owns func(string) bool) {
	for key, ks := range t.keys {
		if owns != nil && !owns(key) {
			continue
		}
		ms := &ks.m[mi]
		switch ms.p {
		case member:
			ms.p = unknown
		case cand:
			ms.p = absent
			ks.cands--
		case leftover:
			ms.p = absent
		}
		ms.verify, ms.dirty, ms.invAt = false, false, 0
		t.forget(key, ks)
	}
}

// Sync makes master mi's state what a read of all its keys (those owns reports, nil:
// all) found at at: present holds every key it has. quiet is for the first read of a master: what it finds was
// there before the feed, and starts no acquisition. It returns how many lifecycles the
// read ended and how many it found that the feed had not seen.
func (t *Tracker) Sync(mi int, owns func(string) bool, at time.Time, present map[string]Entry, source string, quiet bool) (ended, found int) {
	ns := at.UnixNano()
	for key, ks := range t.keys {
		if _, ok := present[key]; ok || ks.m[mi].p == absent || owns != nil && !owns(key) {
			continue
		}
		had := ks.life != nil
		t.settle(key, ks, mi, ns, ns, Entry{}, source)
		if had && ks.life == nil {
			ended++
		}
		t.forget(key, ks)
	}
	for key, e := range present {
		ks := t.state(key)
		ms := &ks.m[mi]
		if ms.p == absent {
			had := ks.life != nil
			t.settleSeen(key, ks, mi, ns, e, source, quiet)
			if !had && ks.life != nil {
				found++
			}
			continue
		}
		if ms.p == unknown {
			ms.p = member
		}
		t.settle(key, ks, mi, ns, ns, e, source)
	}
	return ended, found
}

// settleSeen: a key found present by a whole read, not by a change: it joins the
// lifecycle (or starts a candidate episode) without an acquisition time when it
// was there before the feed.
func (t *Tracker) settleSeen(key string, ks *keyState, mi int, ns int64, e Entry, source string, quiet bool) {
	t.set(key, ks, mi, ns, e.Value, source, quiet)
	ms := &ks.m[mi]
	if e.PTTLMs >= 0 {
		ms.deadline = ns + e.PTTLMs*int64(time.Millisecond)
	}
	if l := ks.life; l != nil && ms.p == member {
		t.learn(key, ks, l, e, ns)
	}
}

// ReadFailed: a read of key on master mi got no answer; its next change is read.
func (t *Tracker) ReadFailed(mi int, key string) {
	ks := t.keys[key]
	if ks == nil {
		return
	}
	ms := &ks.m[mi]
	ms.reading, ms.dirty, ms.invAt, ms.verify = false, false, 0, true
}

// Verify marks key on master mi: its next change (or this one) is settled by a read.
func (t *Tracker) Verify(mi int, key string, at time.Time) {
	ks := t.state(key)
	t.askRead(mi, key, &ks.m[mi], at.UnixNano())
}

// Tick runs the timers due at now.
func (t *Tracker) Tick(now time.Time) {
	ns := now.UnixNano()
	for len(t.timers) > 0 && t.timers[0].at <= ns {
		tm := heap.Pop(&t.timers).(timer)
		ks := t.keys[tm.key]
		if ks == nil {
			continue
		}
		switch tm.kind {
		case timerRead, timerProbe:
			if ks.life == nil || ks.life.id != tm.life {
				continue
			}
			for i := range ks.m {
				if ks.m[i].p == member {
					t.askRead(i, tm.key, &ks.m[i], ns)
					ks.m[i].invAt = 0
				}
			}
		case timerCand:
			if ks.cands == 0 {
				continue
			}
			for i := range ks.m {
				if ks.m[i].p == cand {
					ks.m[i].verify = true
				}
			}
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

func (t *Tracker) schedule(at int64, key string, kind timerKind, lifeID uint64) {
	heap.Push(&t.timers, timer{at: at, key: key, kind: kind, life: lifeID})
}

type timerKind uint8

const (
	timerRead  timerKind = iota // read a lifecycle's members (value, TTL)
	timerProbe                  // read members at their deadline
	timerCand                   // verify a candidate episode's next change by read
)

type timer struct {
	at   int64
	key  string
	kind timerKind
	life uint64
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
