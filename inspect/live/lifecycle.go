package live

import "time"

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
			t.contender(key, ks, g, ns, ev.how)
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
	t.emit(Event{At: time.Unix(0, ns), Event: Acquired, Resource: t.resource(key), Key: key, Value: g.value,
		Masters: g.sets, Quorum: t.q, Source: source})
	t.schedule(ns+int64(ReadDelay), key, timerRead, g.n)
	// Deadlines that the sets were read with already give the validity, and a probe
	// at it, should the read after ReadDelay come too late.
	t.validity(key, ks, g)
}
