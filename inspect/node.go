package inspect

import (
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
)

// Seen is what the node's master holds, as locks.Identify takes it.
func (n *Node) Seen() locks.Seen {
	return locks.Seen{Type: n.Type, Value: n.Value, PTTLMs: n.PTTLMs, Lock: n.Lock, Failed: n.Error != ""}
}

// Holds reports whether a node takes part in the quorum verdict: a string value, or a
// hash a decoder recognised as a lock (its holder is then in Value).
func (n *Node) Holds() bool { return locks.Holds(n.Type, n.Lock) }

// Identity asks locks.Identify what r's key is, from what each master holds (on the
// stack for up to 8 masters); now is the instant of the reads. Identify answers from
// the first master holding the row's value as a lock, so where one does it is asked
// of that master alone.
func (r *Resource) Identity(now time.Time) locks.Identity {
	if r.Value != "" {
		for i := range r.Nodes {
			if s := r.Nodes[i].Seen(); s.Holding(r.Value) {
				id := locks.Identify(r.Key, r.Value, []locks.Seen{s}, now)
				id.Holding = i
				return id
			}
		}
	}
	var buf [8]locks.Seen
	seen := buf[:0]
	for i := range r.Nodes {
		seen = append(seen, r.Nodes[i].Seen())
	}
	return locks.Identify(r.Key, r.Value, seen, now)
}

// Releasable returns the lock a force-release acts on: Decoded, or, for a row without a
// holding value that a decoder recognises (a foreign key), a plain delete of its key.
func (r *Resource) Releasable(now time.Time) locks.Lock {
	if l, ok := r.Decoded(now); ok {
		return l
	}
	return locks.Lock{Library: r.Library, Evidence: r.LibraryEvidence, Holder: r.Value,
		Release: locks.PlainRelease(r.Key, r.Value)}
}

// Decoded returns what the decoders make of the row's holding value on one of its
// masters: library, fields, waiters, companions, renewal and the release plan. ok is
// false for a row without a holding value (free, or foreign).
func (r *Resource) Decoded(now time.Time) (l locks.Lock, ok bool) {
	if r.Value == "" {
		return locks.Lock{}, false
	}
	return r.Identity(now).Lock()
}

// Leased reports whether a node's lock expires by its holders' own expiries (each
// member's score), so that a key without TTL is no finding.
func (n *Node) Leased() bool { return n.Lock != nil && n.Lock.LeasedMembers }

// Reportable reports whether a row is worth an operator's attention: it has anomalies
// or is split, no-ttl or foreign.
func (r *Resource) Reportable() bool {
	if len(r.Anomalies) > 0 {
		return true
	}
	switch r.State {
	case StateSplit, StateNoTTL, StateForeign:
		return true
	}
	return false
}
