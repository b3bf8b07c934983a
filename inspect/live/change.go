package live

import (
	"cmp"
	"time"
)

// The change round: one change of a lock whose value is known (an extension, or a
// release: its holder's one write reaches every master), read on the master it came
// on first, for all of them. Every master's change of the round would otherwise be
// read on its own, and where locks are held long and extended often (a keep-alive, a
// `redlockctl run` job) those reads were a large share of the servers' work.
//
//	round master   answer: held, the value, its deadline moved   every master whose change is the same write's
//	                                                             (see changeWindow): extended, with that TTL
//	round master   answer: gone                                  each: released (expired past its deadline)
//	round master   any other answer, or none                     each reads its own change
//	waiting        another change, or any read asked             its change joins its own read

// A change of another master joins a change round where it came within changeWindow
// of the round's first, and, each taken back by its master's lag (see lagEstimate),
// within changeSlack of it: the one write reaches every master within its links'
// latencies, a holder's next write comes a round trip after, and a master's second
// change is never the round's.
const (
	changeWindow = 50 * time.Millisecond
	changeSlack  = 3 * time.Millisecond
)

// changeRound is the last change round of a key.
type changeRound struct {
	gen    uint32 // the generation changed (0: none yet)
	found  found  // what its read found (foundNone: not answered yet)
	by     int    // the master read
	at     int64  // its change (unix ns)
	seen   uint64 // masters whose change of the round came (bit i: master i)
	pttlMs int64  // where found is foundExtended: the TTL the read found,
	readAt int64  // and when it was sent (unix ns)
	goneAt int64  // where found is foundGone: when the answer came (unix ns)
}

// found is what a change round's read found.
type found uint8

const (
	foundNone     found = iota // no answer yet
	foundExtended              // the generation's value, its deadline moved on
	foundGone                  // nothing
	foundOther                 // anything else, or the read failed: each master reads its own
)

// joinChange takes master mi's change at ns of generation g, whose value is known,
// into the key's change round: it reports whether the change is settled or waits on
// the round's read; otherwise the caller reads it (it starts a round, or cannot join
// one).
func (t *Tracker) joinChange(key string, ks *keyState, mi int, g *gen, ns int64) bool {
	if mi >= 64 || ks.short && ks.handedOn {
		// Where locks are handed on in one write, and some held short, the next change
		// may come within a read's round trip of this one: each master's read goes at
		// once, before it can find the key moved on.
		return false
	}
	c, bit, ms := &ks.change, uint64(1)<<mi, &ks.m[mi]
	// When the write was made, as far as each master's lag says.
	off := (ns - t.lag[mi].est) - (c.at - t.lag[c.by].est)
	if c.gen != g.n || c.seen&bit != 0 || ns-c.at > int64(changeWindow) || max(off, -off) > int64(changeSlack) || g.value == "" {
		t.settleWaiting(key, ks) // on the round before, unanswered: each reads its own
		*c = changeRound{gen: g.n, by: mi, at: ns, seen: bit}
		ms.changeBy = true
		return false
	}
	c.seen |= bit
	switch c.found {
	case foundNone:
		ms.waiting, ms.waitAt = true, ns
		return true
	case foundExtended, foundGone:
		return t.shareChange(key, ks, mi, g, ns)
	}
	return false
}

// changeFound records what the read of the key's change round by master mi found, e,
// its answer: ok when it settled that change alone (nothing else pending, the
// master's part of the round's generation before), old the deadline it had read. The
// masters waiting on it are settled.
func (t *Tracker) changeFound(key string, ks *keyState, mi int, e Entry, ns int64, ok bool, old int64) {
	c := &ks.change
	if mi != c.by {
		return // a round before (its waiters read on their own when this one began)
	}
	g := ks.gen(c.gen)
	c.found = foundOther
	e.ReadAt = cmp.Or(e.ReadAt, ns)
	if ok && g != nil && g.value != "" && e.ReadAt >= c.at {
		switch {
		case !e.Present:
			c.found, c.goneAt = foundGone, ns
		case e.Value != g.value:
			ks.handedOn = true // (a new holder's set, a round trip after the release at most)
		case e.PTTLMs >= 0 && old != 0 && e.ReadAt+e.PTTLMs*int64(time.Millisecond) > old+int64(extendMin):
			c.found, c.pttlMs, c.readAt = foundExtended, e.PTTLMs, e.ReadAt
		}
	}
	t.settleWaiting(key, ks)
}

// settleWaiting settles the change of each master waiting on the key's change round
// as the round found it, where it can (see shareChange); the others read their own.
func (t *Tracker) settleWaiting(key string, ks *keyState) {
	c := &ks.change
	g := ks.gen(c.gen)
	for i := range ks.m {
		if m := &ks.m[i]; m.waiting {
			m.waiting = false
			if g == nil || !m.present || m.gen != c.gen || !t.shareChange(key, ks, i, g, m.waitAt) {
				t.askRead(i, key, m, m.waitAt)
			}
		}
	}
}

// shareChange settles master mi's change at ns of generation g as the key's change
// round found it, and reports whether it could: extended, with the TTL the round's
// read found (its deadline moved on by as long after the round's change as this one
// came); gone, released, unless past its deadline (expired).
func (t *Tracker) shareChange(key string, ks *keyState, mi int, g *gen, ns int64) bool {
	c := &ks.change
	switch c.found {
	case foundExtended:
		e := Entry{Present: true, Type: g.vtype, Value: g.value, PTTLMs: c.pttlMs, ReadAt: c.readAt + ns - c.at}
		t.refresh(key, ks, mi, g, ns, ns, e, SourceTracking)
	case foundGone:
		t.removed(key, ks, mi, ns, SourceTracking)
		ks.m[mi].goneAt = c.goneAt
	default:
		return false
	}
	return true
}

// changeLost ends the key's change round where its read will not be answered (its
// master in a gap): the masters waiting on it read their own changes.
func (t *Tracker) changeLost(key string, ks *keyState, mi int) {
	if ms := &ks.m[mi]; ms.changeBy {
		ms.changeBy = false
		t.changeFound(key, ks, mi, Entry{}, 0, false, 0)
	}
}
