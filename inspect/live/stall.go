package live

import (
	"slices"
	"time"
)

// The feed's own stalls. On a busy host the feed's process waits for a core; what
// reached it meanwhile (invalidations, read replies) is handled in one burst, stamped
// when it is read, so that the inference's times, and the order of one master's
// changes against another's and against a read's answer, are lost for that span. The
// tracker cannot undo that; it says so. While anything is in flight it keeps a
// heartbeat every beatEvery (Next includes it, so that the feed's driver wakes for it);
// a heartbeat handled more than stallMin late, with a signal stamped in the burst that
// follows, is reported as Stalled, from when the feed last ran on time to when it ran
// again. A late heartbeat with nothing that came late is no event.
const (
	beatEvery = 5 * time.Millisecond
	stallMin  = 10 * time.Millisecond
	// activeFor: the heartbeat runs while a timer is pending or a signal came this
	// recently; an idle feed does not wake for it (it has nothing to get wrong, and
	// waking 200 times a second cost `events` on an idle fleet 1.5% of a core).
	activeFor = time.Second
)

// The feed's lateness per master. A core can be short without the heartbeat running
// late: on a machine with more work than cores the feed keeps running, but reads its
// connections later and later, and what it reads is stamped late and in bursts, one
// master's against another's. Each mark (a PING on a master's subscription, every
// markIdle, and every markEvery while one is late or a decision waits for one: see
// MarkWanted) measures it: its answer read more than stallMin later than that master's
// fastest mark says that what the feed read from the master since its last mark was
// read that late. Such spans, from the last mark before the first late one to the
// answer of the last, are reported as Stalled once every master's mark is on time
// again, or at least every lateEvery while they go on.
const lateEvery = time.Second

// lateState is the marks' record of lateness.
type lateState struct {
	rtt      []int64 // per master: the fastest answer to a mark so far (0: none yet)
	sent     []int64 // per master: the send time of its last mark answered
	late     []bool  // per master: its last mark was late
	from, to int64   // the span not reported yet (to 0: none)
	worst    int64   // the latest answer in it, beyond the master's fastest
}

// Late records the answer to master mi's mark sent at sent, read at got (see lateState).
func (t *Tracker) Late(mi int, sent, got time.Time) {
	l := &t.late
	if l.rtt == nil {
		l.rtt, l.sent, l.late = make([]int64, t.n), make([]int64, t.n), make([]bool, t.n)
	}
	s, g := sent.UnixNano(), got.UnixNano()
	rtt := g - s
	if l.rtt[mi] == 0 || rtt < l.rtt[mi] {
		l.rtt[mi] = max(rtt, 1)
	}
	prev := l.sent[mi]
	l.sent[mi] = max(prev, s)
	if prev == 0 {
		return
	}
	if late := rtt - l.rtt[mi]; late > int64(stallMin) {
		if l.to == 0 {
			l.from = prev
		}
		l.from, l.to, l.worst = min(l.from, prev), max(l.to, g), max(l.worst, late)
		t.wantMoved = t.wantMoved || !l.late[mi]
		l.late[mi] = true
	} else {
		t.wantMoved = t.wantMoved || l.late[mi]
		l.late[mi] = false
	}
	if l.to == 0 {
		return
	}
	if !slices.Contains(l.late, true) || l.to-l.from >= int64(lateEvery) {
		t.emit(Event{At: time.Unix(0, l.to), Event: Stalled, From: time.Unix(0, l.from), To: time.Unix(0, l.to),
			Reason: "marks came back up to " + time.Duration(l.worst).Round(time.Millisecond).String() + " late (the feed, or a master, waited for a core): what came then was handled late"})
		t.stall.lastFrom, t.stall.lastTo = l.from, l.to
		l.from, l.to, l.worst = 0, 0, 0
	}
}

// WatchStalls turns the heartbeat on: the driver promises to call Tick when Next says
// (Feed.Run does), so that a Tick late by more than stallMin is the feed's own stall.
// A driver that jumps time (a test replaying signals) leaves it off.
func (t *Tracker) WatchStalls() { t.stall.on = true }

// stallState is the heartbeat's state.
type stallState struct {
	on       bool  // see WatchStalls
	armed    bool  // the heartbeat runs: something is in flight (see heartbeat)
	beat     int64 // when the next heartbeat is due
	from, to int64 // a late heartbeat not reported yet (to 0: none)
	heard    int64 // the stamp of the last signal handled
	// lastFrom, lastTo: the last span of lateness reported, the feed's own or its
	// marks' (see madeAfter).
	lastFrom, lastTo int64
}

// heard records a signal stamped ns (an invalidation, a read's answer, a named change).
func (t *Tracker) heard(ns int64) { t.stall.heard = max(t.stall.heard, ns) }

// madeAfter is the earliest a change the feed stamped ns may have been made: where the
// feed has just waited for a core (its heartbeat is overdue by more than stallMin at
// ns), or ns falls in a span of lateness (a late heartbeat, late marks: reported or
// not yet), what it handled then reached it meanwhile, and its stamp is when it was
// read, not when it was made.
func (t *Tracker) madeAfter(ns int64) int64 {
	from := ns
	if s := &t.stall; s.on {
		if s.armed && ns-s.beat > int64(stallMin) {
			from = min(from, s.beat-int64(beatEvery))
		}
		if s.to != 0 {
			from = min(from, s.from)
		}
	}
	if s := &t.stall; s.lastTo != 0 && ns >= s.lastFrom && ns <= s.lastTo+int64(beatEvery) {
		from = min(from, s.lastFrom)
	}
	if l := &t.late; l.to != 0 {
		from = min(from, l.from)
	}
	return from
}

// heartbeat runs the heartbeat at ns (see Tick).
func (t *Tracker) heartbeat(ns int64) {
	s := &t.stall
	if !s.on {
		return
	}
	if s.armed && ns >= s.beat && ns-s.beat > int64(stallMin) {
		if s.to == 0 {
			s.from = s.beat - int64(beatEvery)
		}
		s.to = ns
	}
	if !s.armed || ns >= s.beat {
		s.beat = ns + int64(beatEvery)
		s.armed = len(t.timers) > 0 || ns-s.heard < int64(activeFor)
	}
	switch {
	case s.to == 0:
	case s.heard >= s.from+int64(beatEvery) && s.heard <= s.to+int64(beatEvery):
		t.emit(Event{At: time.Unix(0, s.to), Event: Stalled, From: time.Unix(0, s.from), To: time.Unix(0, s.to),
			Reason: "the feed waited " + time.Duration(s.to-s.from).Round(time.Millisecond).String() + " for a core: what reached it meanwhile was handled late"})
		s.lastFrom, s.lastTo = s.from, s.to
		s.from, s.to = 0, 0
	case ns > s.to+int64(beatEvery):
		s.from, s.to = 0, 0 // nothing came late
	}
}
