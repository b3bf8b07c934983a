package carry

import (
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// The rules of carrying, written once. Tracker and Carrier keep different records of
// the last poll they tracked (its rows; a few bytes a row) and ask these alone what to
// carry, until when, onto which row, and how a carried row counts.

// downSince returns the masters that do not answer in masters and that answered the
// last tracked poll by the same name at the same place (was: that poll's master names;
// none when their number changed). Only a master down since is carried from: one that
// answers again is read again, with or without the key, and carries nothing.
func downSince(was []string, masters []inspect.Master) []int {
	if len(was) != len(masters) {
		return nil
	}
	var down []int
	for i := range masters {
		if !masters[i].Up && masters[i].Name == was[i] {
			down = append(down, i)
		}
	}
	return down
}

// names returns dst set to the names of masters (was, for the next downSince).
func names(dst []string, masters []inspect.Master) []string {
	dst = dst[:0]
	for i := range masters {
		dst = append(dst, masters[i].Name)
	}
	return dst
}

// A deadline is until when a node is carried once its master stops answering: while
// its projection, ms less the whole milliseconds since at, stays above zero; for ever
// (until its master answers) when ms is -1 (no TTL); never when ms is 0.
type deadline struct {
	at time.Time
	ms int64
}

// carries reports whether d still carries at now.
func (d deadline) carries(now time.Time) bool {
	return d.ms == -1 || d.ms > 0 && now.Sub(d.at).Milliseconds() < d.ms
}

// nodeDeadline is the deadline of n, read at at from a master that answered (up) or
// not: only a string key read without error is carried, for the PTTL it had then.
func nodeDeadline(up bool, n *inspect.Node, at time.Time) deadline {
	if !up || n.Error != "" || n.PTTLMs == -2 || n.Type != inspect.TypeString {
		return deadline{}
	}
	return deadline{at: at, ms: n.PTTLMs}
}

// lastSeenDeadline is the deadline of a node carried already: that of the node it
// was last seen as.
func lastSeenDeadline(ls *inspect.LastSeen) deadline {
	return deadline{at: ls.At, ms: ls.SampledPTTLMs}
}

// A past is a carrier's record of the last poll it tracked: a row for each row of
// that poll and each row it carried, with each master's deadline (nodeDeadline of
// what the master answered; for a master down, the deadline it carried).
type past interface {
	deadline(ri, mi int) deadline
}

// carriedOn returns dst with the masters of down on which row ri of p is carried at
// now appended.
func carriedOn(dst []int, p past, ri int, down []int, now time.Time) []int {
	for _, mi := range down {
		if p.deadline(ri, mi).carries(now) {
			dst = append(dst, mi)
		}
	}
	return dst
}

// carryFrom walks the rows of p (rows of them, in order) into the poll taken at now,
// on whose masters down nothing was read: each row carried on one of them (nodes:
// which, valid during the call) goes onto the row of the same resource that this poll
// has (find: its index; its figures are judged from what answered and do not change),
// or, where it has none, becomes a row of its own (ownRow).
func carryFrom(p past, rows int, down []int, now time.Time, find func(ri int) (int, bool), onto func(ri, row int, nodes []int), own func(ri int, nodes []int)) {
	var nodes []int
	for ri := range rows {
		if nodes = carriedOn(nodes[:0], p, ri, down, now); len(nodes) == 0 {
			continue
		}
		if row, ok := find(ri); ok {
			onto(ri, row, nodes)
		} else {
			own(ri, nodes)
		}
	}
}

// ownRow is the row that a carried row no master that answered has becomes:
// Uncertain, in the state it had when last seen. It is counted by that state alone
// (its Scope is not carried).
func ownRow(state string) inspect.Resource {
	return inspect.Resource{State: state, Uncertain: true}
}
