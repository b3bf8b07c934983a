package live

import (
	"math/bits"
)

// The reads that check the inference: the read round after ReadDelay (which may
// realign a key), the probes of masters that may hold an attempt unseen, and the reads
// of a key that went quiet after an unsure change.

// leaveRound takes ms's outstanding read out of the key's read round, which then
// realigns nothing (a read failed, or a keyspace notification names the changes).
func (ks *keyState) leaveRound(ms *mstate) {
	if ms.round {
		ms.round, ms.peek = false, false
		ks.round.left--
		ks.round.bad = true
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

// roundAnswer records master mi's answer e to the key's read round, where its read
// (ms) is one of the round's.
func (ks *keyState) roundAnswer(ms *mstate, mi int, e Entry) {
	if !ms.round {
		return
	}
	ms.round = false
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

// roundDone realigns the key once every answer to its read round came.
func (t *Tracker) roundDone(key string, ks *keyState, ns int64) {
	if ks.round.left == 0 && ks.round.gen != 0 {
		t.realign(key, ks, ns)
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
	if g.dels == 0 {
		g.firstDel = 0 // a removal taken earlier was none (see looping, which reads it)
	}
	if g.early = min(g.early, t.n-holders); g.early == 0 {
		g.heldPast = 0 // a master whose removal looked like a contender's holds the lock
	}
	for i := range ks.m {
		m := &ks.m[i]
		was := m.present
		m.gen, m.present, m.merged, m.probe = g.n, r.holders&(1<<i) != 0, false, false
		if !m.present {
			m.deadline = 0
		}
		if m.present || was {
			// What a read found ahead of the feed is kept only where the round leaves
			// the master as that read did: gone (its removal's invalidation, still to
			// come, is no set).
			m.ahead = aheadNone
		}
	}
	t.validity(key, ks, g)
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
		if m := &ks.m[i]; !m.reading && m.invAt == 0 && !m.verify && m.lastInv != 0 && !t.gapped[i] && !m.apart {
			m.probe = true
			t.askRead(i, key, m, m.lastInv)
		}
	}
}

// firstRead reads, at the acquisition of a key's first lock (g), the masters holding
// it, for its value alone: where a quorum of them answer promptly, with no change
// there meanwhile, and show one value held, the lock is known by that value, and its
// next change is read (keyState.handoff). A holder that hands the lock on in one
// write (a release and the next set, merged into one change on every master) is so
// told from a release from its first lock on; a key whose reads then find plain
// releases goes back to inferring its short locks' changes. The reads hold nothing
// up: changes meanwhile are inferred as ever, and their answers then ignored.
func (t *Tracker) firstRead(key string, ks *keyState, g *gen, ns int64) {
	if g.phase != phaseAcquired {
		return
	}
	ks.first.value, ks.first.agree, ks.first.bad = "", 0, false
	for i := range ks.m {
		if m := &ks.m[i]; m.present && m.gen == g.n && !m.reading && !m.first && !t.gapped[i] {
			m.first, m.firstAt = true, ns // (not in t.reads: it holds nothing up)
			t.read(i, key)
		}
	}
}

// firstAnswer takes the answer e to master mi's firstRead.
func (t *Tracker) firstAnswer(key string, ks *keyState, mi int, e Entry) {
	ms := &ks.m[mi]
	ms.first = false
	f := &ks.first
	g := ks.gen(ms.gen)
	if g != nil && !g.read && ms.present && !ms.reading && ms.lastInv <= ms.firstAt && e.Present && e.ReadAt != 0 {
		ms.seen = e // what its part holds, read with no change since (see keyState.name)
	}
	if g == nil || !g.open() || !ms.present || ms.reading || ms.lastInv > ms.firstAt || g.acquiredAt > ms.firstAt || !e.Present ||
		e.ReadAt == 0 || e.ReadAt-g.acquiredAt > int64(firstPrompt) || f.value != "" && f.value != e.Value {
		f.bad = true // a change came (one a keyspace notification named: the next lock), it went out late (a feed handling what came late) or found another value
		return
	}
	f.value = e.Value
	if f.agree++; f.agree == t.q && !f.bad && !g.read {
		t.describe(key, g, e, e.ReadAt)
		ks.handoff = true
	}
}
