package live

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Keyspace notifications. Where an operator has enabled them on a master
// (notify-keyspace-events with K or E, and g, $ and x; e for evictions), the feed
// subscribes to them beside its invalidations: they come one per command, never merged,
// and name the change (set, expire, del, expired, evicted). Each key's notifications
// of an event-loop iteration come before that iteration's invalidation of it, on the
// same connection: an invalidation that follows a named change of its key is that
// change's, and is dropped; one that does not (a change of a kind not notified, such as
// a hash's HINCRBY without h) is inferred as before.

// Op is a change of a key as a keyspace notification names it.
type Op uint8

// The changes the feed subscribes to.
const (
	OpSet     Op = iota + 1 // set: SET in any form
	OpExpire                // expire: a TTL set or renewed (PEXPIRE, and the PX of a SET)
	OpDel                   // del: DEL, UNLINK, GETDEL, an EXPIRE in the past
	OpExpired               // expired: the server removed it at its TTL
	OpEvicted               // evicted: maxmemory eviction removed it
)

// keyspaceEvents are the notifications' event names, and the flag that enables each.
var keyspaceEvents = []struct {
	name string
	op   Op
	flag byte
}{
	{"set", OpSet, '$'}, {"expire", OpExpire, 'g'}, {"del", OpDel, 'g'},
	{"expired", OpExpired, 'x'}, {"evicted", OpEvicted, 'e'},
}

// opOf returns the Op of an event name (0 for one the feed does not follow).
func opOf(name string) Op {
	for _, ev := range keyspaceEvents {
		if ev.name == name {
			return ev.op
		}
	}
	return 0
}

// end is the end event of a removal.
func (op Op) end() string {
	switch op {
	case OpExpired:
		return Expired
	case OpEvicted:
		return Evicted
	}
	return Released
}

// notifyAll is what the flag A stands for.
const notifyAll = "g$lshzxetd"

// keyspacePlan is how a node's feed hears a master's keyspace notifications.
type keyspacePlan struct {
	cmd    string   // SUBSCRIBE (keyevent channels) or PSUBSCRIBE (keyspace channels)
	args   []string // its channels or patterns
	prefix string   // the channels' prefix: __keyevent@<db>__: or __keyspace@<db>__:
	note   string   // what is not named (evictions without e)
}

// planKeyspace reads notify-keyspace-events (as CONFIG GET gives it) and returns how to
// subscribe for db and patterns, or nil and why they cannot be used. It prefers the
// keyevent channels (E): five channels, whatever the patterns; with K alone, a
// keyspace channel pattern per configured pattern.
func planKeyspace(flags string, db int, patterns []string) (*keyspacePlan, string) {
	set := strings.ReplaceAll(flags, "A", notifyAll)
	has := func(c byte) bool { return strings.IndexByte(set, c) >= 0 }
	if !has('K') && !has('E') || !has('g') || !has('$') || !has('x') {
		return nil, fmt.Sprintf("notify-keyspace-events is %q; keyspace notifications need K or E, and g, $ and x", flags)
	}
	p := &keyspacePlan{}
	if !has('e') {
		p.note = "evictions are inferred (no e in notify-keyspace-events)"
	}
	if has('E') {
		p.cmd, p.prefix = "SUBSCRIBE", "__keyevent@"+strconv.Itoa(db)+"__:"
		for _, ev := range keyspaceEvents {
			if has(ev.flag) {
				p.args = append(p.args, p.prefix+ev.name)
			}
		}
		return p, ""
	}
	p.cmd, p.prefix = "PSUBSCRIBE", "__keyspace@"+strconv.Itoa(db)+"__:"
	for _, pat := range patterns {
		p.args = append(p.args, p.prefix+pat)
	}
	return p, ""
}

// parse returns the key and Op of a notification on channel with payload (a keyevent
// channel's payload is the key, a keyspace channel's the event); ok is false for a
// message that is not one.
func (p *keyspacePlan) parse(channel, payload string) (key string, op Op, ok bool) {
	rest, found := strings.CutPrefix(channel, p.prefix)
	if !found {
		return "", 0, false
	}
	if p.cmd == "SUBSCRIBE" {
		key, op = payload, opOf(rest)
	} else {
		key, op = rest, opOf(payload)
	}
	return key, op, op != 0
}

// Change is a change of key on master mi at at, named by a keyspace notification. It
// is applied as named: a set is the next generation there, a del a release, expired
// an expiry, evicted an eviction. A set or expire of a key held there is settled by a
// read (extended, or set by another holder?). The invalidation that follows it is
// dropped (see Invalidate).
func (t *Tracker) Change(mi int, key string, op Op, at time.Time) {
	t.heard(at.UnixNano())
	if !lockKey(key) {
		return
	}
	ns := at.UnixNano()
	ks := t.state(key, ns)
	ms := &ks.m[mi]
	t.heldPast(ks, mi)
	if ks.round.left > 0 {
		ks.round.bad = true // the reads race a change
	}
	ms.named = true
	if ms.invAt != 0 || ms.verify {
		t.askRead(mi, key, ms, ns) // an unnamed change waits for a read: it settles this one too
		return
	}
	switch op {
	case OpSet:
		if ms.present {
			ms.pendAt, ms.pendSet = ns, true
			t.askRead(mi, key, ms, 0)
		} else {
			t.set(key, ks, mi, ns, Entry{}, SourceKeyspace, false)
		}
		ms.fresh = true
	case OpExpire:
		switch {
		case !ms.present:
			ms.named = false // a TTL on a key set by a change not named: its invalidation says
		case ms.fresh:
			ms.fresh = false // the TTL of the set just named (a SET's PX)
		default:
			ms.pendAt = cmp.Or(ms.pendAt, ns)
			t.askRead(mi, key, ms, 0)
		}
	case OpDel, OpExpired, OpEvicted:
		if ms.present {
			t.unset(key, ks, mi, ns, op.end(), SourceKeyspace)
		}
	}
}

// ReadTyped is the answer to a read of key on master mi, taken at at, where the feed
// names changes: it reaches the tracker after every change made before the read was
// served (see node.waitMark). A read that settles an unnamed change is ReadDone's;
// any other only adds to what the named changes said (the value, the TTL, whether a
// set or expire of a held key extended it or changed its holder), and only where the
// master has not set the key again since it was asked: then it shows the generation
// it was asked for. Otherwise it is asked again where that is still needed. A read
// that finds the key gone says nothing the notifications (or the invalidation of a
// change they do not name) will not.
func (t *Tracker) ReadTyped(mi int, key string, at time.Time, e Entry) {
	ks := t.keys[key]
	if !t.answered(mi, key, &e) || ks == nil {
		return
	}
	ms := &ks.m[mi]
	if ms.invAt != 0 {
		ms.pendAt, ms.pendSet = 0, false // the read settles them with the rest
		t.readDone(mi, key, at, e)
		if ms.present {
			ms.ahead = aheadNone // the feed delivered the set it found before the read came back
		}
		return
	}
	ms.reading = false
	// Named changes are each master's own, in order; which generation each master's
	// set joined is still counted, and a racing round's parts can number it wrong: the
	// read round realigns the key as it does without notifications.
	if ms.round {
		ks.roundAnswer(ms, mi, e)
		defer t.roundDone(key, ks, at.UnixNano())
	}
	if ms.peek {
		ms.peek = false
		return // the round's alone (see readRound)
	}
	g := ks.gen(ms.gen)
	if !ms.present || g == nil {
		ms.pendAt, ms.pendSet = 0, false
		return
	}
	if ms.gen != ms.askedGen {
		if ms.pendAt != 0 || g.open() && !g.read {
			t.askRead(mi, key, ms, 0) // what it was for is still to learn
		}
		return
	}
	if !e.Present {
		return
	}
	ns, invAt := at.UnixNano(), cmp.Or(ms.pendAt, at.UnixNano())
	overwritten := ms.pendSet && g.read && e.Value != g.value
	ms.pendAt, ms.pendSet = 0, false
	if overwritten {
		t.unset(key, ks, mi, invAt, Released, SourceKeyspace) // set again by another holder
		t.set(key, ks, mi, invAt, e, SourceKeyspace, false)
		return
	}
	t.refresh(key, ks, mi, g, invAt, ns, e, SourceKeyspace)
}
