package locks

import (
	"time"

	"github.com/redlockctl/redlockctl/redlock"
)

// Seen is what one master holds at a key, as a reader read it: the key's type, its
// string value, its PTTL, and for a key of another type what Decode made of it with its
// companions (see See). It is the input of Identify, one per master.
type Seen struct {
	Type   string // TYPE's answer; "" or TypeNone when the key is absent
	Value  string // a string's value, or the holder of a recognised hash or sorted set
	PTTLMs int64  // -2 absent, -1 no expiry, else ms left
	Lock   *Lock  // the decoded lock of a key that is no string; nil for a string
	Failed bool   // the master did not answer for this key
}

// See decodes what one master holds at e.Key (a hash's fields, a sorted set's members,
// with related the companions read for it: see Related) into the Seen that Identify
// takes. now is the instant of the read. A key of another type (a list, a set, a
// stream) is left undecoded: Identify calls it no lock.
func See(e Entry, related map[string]Entry, now time.Time) Seen {
	s := Seen{Type: e.Type, PTTLMs: e.PTTLMs}
	if !e.Present() {
		if s.Type == "" {
			s.Type = TypeNone
		}
		s.PTTLMs = -2
		return s
	}
	switch e.Type {
	case TypeString:
		s.Value = e.Value
		return s
	case TypeHash, TypeZSet:
	default:
		return s
	}
	l := Decode(e, related, now)
	s.Lock = &l
	if l.Recognised() {
		s.Value = l.Holder
	}
	return s
}

// Holds reports whether the master takes part in a lock's verdict: it holds a string
// value, or a key a decoder recognised as a lock (its holder is then in Value).
func (s Seen) Holds() bool { return Holds(s.Type, s.Lock) }

// Holds reports whether a key of type typ, decoded as l (nil for a string), takes part
// in a lock's verdict: a string value, or a key a decoder recognised as a lock.
func Holds(typ string, l *Lock) bool {
	return typ == TypeString || (l != nil && l.Recognised())
}

// NotALock reports whether the master holds a key that is no lock: present, of a type
// other than string, and not recognised by any decoder. Nothing may delete such a key.
func (s Seen) NotALock() bool {
	return !s.Failed && s.Type != "" && s.Type != TypeString && s.Type != TypeNone && !s.Holds()
}

// Holding reports whether the master holds value as a lock.
func (s Seen) Holding(value string) bool {
	return !s.Failed && s.Holds() && s.Value == value && s.PTTLMs != -2
}

// Identity is what a key is across the masters, as Identify answers it.
type Identity struct {
	// Label names the library (a Lock.Label: an id, the candidates of a guess with a
	// "?", Unknown) and Evidence why; Kind the kind of lock where a library has several.
	// All three are empty for a key that no master holds.
	Label    string
	Kind     string
	Evidence string
	// Owner, Token and Count are what the holding value's format carries: who holds it,
	// its fencing token, its reentrancy count (0 or "" when the format has none).
	Owner string
	Token int64
	Count int
	// Holding is the index of the master whose read is the lock's (the first that holds
	// the value as a lock), or -1 when no master does.
	Holding int
	// Foreign says why the key is no lock, when no master holds the value and one
	// holds a key no decoder recognises ("a hash that no decoder recognises as a lock").
	Foreign string
	// Scope is the scope the library declares (ScopeOf of Label): "" when it names none,
	// and then the fleet's default applies.
	Scope string

	key, value string
	seen       Seen
	now        time.Time
}

// Identify answers what the key holds on the masters, given what each master holds
// there (seen, one per master, in any order) and value, the holding value the caller
// judged (the quorum's, or the only one); now is the instant of the reads. This
// project's own values are known by their format (redlock.ParseValue) without the
// decoders; another string is decoded from its value and key (without its release
// plan: Release decodes again); a hash or sorted set by the decoder that read it
// (See). Identify reads nothing and never fails.
func Identify(key, value string, seen []Seen, now time.Time) Identity {
	id := Identity{Holding: -1, key: key, value: value, now: now}
	if value != "" {
		for i, s := range seen {
			if !s.Holding(value) {
				continue
			}
			id.Holding, id.seen = i, s
			if s.Type != TypeString {
				l := s.Lock
				id.Label, id.Kind, id.Evidence = l.Label(), l.Kind, l.Evidence
				id.Owner, id.Count, id.Token = l.Owner, l.Count, l.Token
			} else if owner, token, ok := redlock.ParseValue(value); ok {
				id.Label, id.Evidence, id.Owner, id.Token = Redlockctl, EvidenceRedlockctl, owner, token
				if token > 0 {
					id.Kind, id.Evidence = "fenced", EvidenceRedlockctlFenced
				}
			} else {
				l := decode(input{Entry: Entry{Key: key, Type: TypeString, Value: value, PTTLMs: s.PTTLMs}, now: now})
				id.Label, id.Kind, id.Evidence, id.Owner = l.Label(), l.Kind, l.Evidence, l.Owner
			}
			id.Scope = ScopeOf(id.Label)
			return id
		}
	}
	for _, s := range seen {
		if s.NotALock() {
			id.Label, id.Evidence = Unknown, "a "+s.Type+" that no decoder recognises as a lock"
			if s.Lock != nil && s.Lock.Foreign != "" {
				id.Evidence = s.Lock.Foreign
			}
			id.Foreign = id.Evidence
			return id
		}
	}
	return id
}

// IsLock reports whether a master holds the value as a lock.
func (id Identity) IsLock() bool { return id.Holding >= 0 }

// Lock returns everything the decoders make of the holding value: fields, waiters,
// companions, renewal, the release protocol. ok is false when no master holds the
// value as a lock.
func (id Identity) Lock() (l Lock, ok bool) {
	if id.Holding < 0 {
		return Lock{}, false
	}
	if id.seen.Type != TypeString {
		return *id.seen.Lock, true
	}
	return Decode(Entry{Key: id.key, Type: TypeString, Value: id.value, PTTLMs: id.seen.PTTLMs}, nil, id.now), true
}

// Release is how the value is released the way its library expects: the decoded
// lock's protocol, or compare-and-delete of the value where no decoder gives one (a
// key that is no lock is released by nobody: its plan keeps it).
func (id Identity) Release() Release {
	l, ok := id.Lock()
	if ok && (id.seen.Type != TypeString || l.Release.Supported() || l.Release.Unsupported != "") {
		return l.Release
	}
	return PlainRelease(id.key, id.value)
}

// Companions returns the keys that belong to the lock's row (see Lock.Companions).
func (id Identity) Companions() []Companion {
	l, _ := id.Lock()
	return l.Companions
}

// MultiKey reports whether a label's library (or a candidate of its guess) puts one
// value on several keys: node-redlock, bsm/redislock and rueidislock lock several
// resources with one value, so the rows that share it are one lock.
func MultiKey(label string) bool {
	for _, id := range LabelNames(label) {
		if id == NodeRedlock || id == BsmRedislock || id == Rueidislock {
			return true
		}
	}
	return false
}
