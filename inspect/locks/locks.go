// Package locks recognises the locks that other libraries (and redlockctl itself) leave
// in Redis: from what one master holds at a key, it names the library, the kind of lock,
// why it thinks so, who holds it, which companion keys belong to it, how its holder
// renews it, and the protocol that releases it the way that library expects.
//
// It is pure: it reads nothing and writes nothing. The poller hands it what it read
// (Entry), the analysis judges rows by Lock.Holder, and the admin layer executes the
// Release scripts through the redlock library. Each library has its own decoder file,
// whose doc comment names the source file (repository, path, commit) its format was
// verified against, and its registry entry (Libraries) states the evidence the decoder
// needs. A decoder never claims more than the evidence carries: a library is named only
// on evidence beyond a value's shape (key shape, data type, a structured value, sibling
// keys). A value shape alone (a UUID, base64, a number) is a guess: the result is
// Unknown with the libraries that write that shape as Candidates, shown as
// "redsync|warlock?", and its release is compare-and-delete of the exact value, never
// a library's own protocol.
package locks

import (
	"strings"
	"time"
)

// Library ids, as reported in Lock.Library and the JSON field "library".
const (
	Unknown           = "unknown"
	Redlockctl        = "redlockctl"
	Redsync           = "redsync"
	NodeRedlock       = "node-redlock"
	RedisPy           = "redis-py"
	PythonRedisLock   = "python-redis-lock"
	RedlockNet        = "redlock-net"
	Pottery           = "pottery"
	Aioredlock        = "aioredlock"
	BsmRedislock      = "bsm-redislock"
	Redisson          = "redisson"
	SpringIntegration = "spring-integration"
	ShedLock          = "shedlock"
	Laravel           = "laravel"
	SidekiqUniqueJobs = "sidekiq-unique-jobs"
	Warlock           = "warlock"
	GoZero            = "go-zero"
	RedisSemaphore    = "redis-semaphore"
	SimpleRedisMutex  = "simple-redis-mutex"
	SymfonyLock       = "symfony-lock"
	SymfonySemaphore  = "symfony-semaphore"
	Rueidislock       = "rueidislock"
)

// Redis types as TYPE names them, plus TypeNone for a missing key.
const (
	TypeString = "string"
	TypeHash   = "hash"
	TypeList   = "list"
	TypeZSet   = "zset"
	TypeNone   = "none"
)

// Entry is what one master holds at one key, as the poller read it.
type Entry struct {
	Key    string
	Type   string            // a Redis type name; TypeNone (or "") when the key is absent
	Value  string            // a string key's value
	Fields map[string]string // a hash key's fields and values
	// Truncated is set when Fields is not the whole hash (the poller bounds HSCAN).
	Truncated bool
	// Items is a list's elements in order, or a sorted set's members by score.
	Items  []string
	Scores []float64 // a sorted set's scores, parallel to Items
	PTTLMs int64     // -2 absent, -1 no expiry, else ms left
}

// Present reports whether the entry holds a key.
func (e Entry) Present() bool { return e.Type != "" && e.Type != TypeNone && e.PTTLMs != -2 }

// Field is one decoded fact about a lock, for the detail view ("holder", "reentrancy").
type Field struct {
	Name  string
	Value string
}

// Lock is what a decoder made of one key on one master. The zero Lock (Library "") is
// an absent key.
type Lock struct {
	// Library is a library id, or Unknown when no decoder recognises the key or several
	// libraries write the same shape (then Candidates lists them).
	Library    string
	Candidates []string
	// Kind names the kind of lock where a library has several ("lock", "fair-lock",
	// "read-write-lock", "fenced-lock" for Redisson; "fenced" for redlockctl).
	Kind string
	// Evidence says briefly why: key naming, value shape, hash layout.
	Evidence string
	// Holder identifies the holder, compared across masters to judge a quorum: the value
	// for string locks, the holder field(s) for hash locks. Empty when the key is not a
	// lock anyone recognises (see Foreign) or absent.
	Holder string
	// Owner is what an operator sees as "held by", where the format carries one.
	Owner string
	Count int // reentrancy count of the holder (Redisson), 0 when the format has none
	// Permits is, for a semaphore, how many permits its holders hold (0 for a lock), and
	// Limit how many it has, where Redis holds that (0 when only the clients know it).
	Permits int
	Limit   int
	// Available is, for a semaphore whose free permits Redis counts (Redisson's
	// RPermitExpirableSemaphore), that count as read with the lock; nil otherwise.
	Available *int
	// LeasedMembers is set when every holder carries its own expiry (its member's
	// score) and the library sets no TTL on the key: a key without one is then by
	// design, no finding.
	LeasedMembers bool
	Token         int64 // fencing token, 0 when none
	// Foreign is set for a key that is not a lock any decoder recognises, saying why.
	Foreign string
	Fields  []Field  // decoded fields, in display order
	Waiters []string // Redisson fair lock: queued <uuid>:<threadId>, first in line first
	// Companions are the keys that belong to this lock's row (queues, counters, signal
	// lists); the poller reads those a decoder needs (see Companions).
	Companions []Companion
	Renewal    string // how the holder keeps the lock alive
	// Recreates is set when the holder may re-create a deleted key while it lives: a
	// force-release then lasts only until its next renewal. It names the library/option.
	Recreates string
	Release   Release
}

// Label is the library as a row shows it: the library's id, the candidates of a guess
// joined by "|" with a "?" ("redsync|warlock?"), or Unknown.
func (l *Lock) Label() string {
	if l.Library == Unknown && len(l.Candidates) > 0 {
		return strings.Join(l.Candidates, "|") + "?"
	}
	return l.Library
}

// LabelNames returns the library ids a Label names: the library, or the candidates of
// a guess; none for Unknown or "".
func LabelNames(label string) []string {
	if label == "" || label == Unknown {
		return nil
	}
	return strings.Split(strings.TrimSuffix(label, "?"), "|")
}

// Semaphore reports whether the lock is a semaphore: several holders by design.
func (l *Lock) Semaphore() bool { return l.Permits > 0 }

// Recognised reports whether a decoder took the key as a lock (of a known library, or of
// an unknown one holding an opaque string value).
func (l *Lock) Recognised() bool { return l.Foreign == "" && l.Holder != "" }

// Decode recognises the lock at e.Key from what one master holds. related holds the
// companion keys the poller read for it (see Companions), by key; nil is fine. now is
// the instant of the read, for formats that carry a time. Decode never fails: a key no
// decoder takes is Unknown, with Foreign set when it is not a string.
func Decode(e Entry, related map[string]Entry, now time.Time) Lock {
	return decode(input{Entry: e, related: related, now: now, release: true})
}

// decode is Decode of in.
func decode(in input) Lock {
	if !in.Present() {
		return Lock{}
	}
	switch in.Type {
	case TypeString:
		for _, d := range stringDecoders {
			if l, ok := d(in); ok {
				return l
			}
		}
		return opaque(in)
	case TypeHash:
		for _, d := range hashDecoders {
			if l, ok := d(in); ok {
				return l
			}
		}
		return Lock{Library: Unknown, Foreign: "a " + in.Type + " that no decoder recognises as a lock"}
	case TypeZSet:
		return decodeZSet(in)
	}
	return Lock{Library: Unknown, Foreign: "a " + in.Type + " key, not a lock any decoder knows"}
}

// input is what a decoder sees. Decoders take it by value: they are called through
// func values, through which a pointer would put every input on the heap.
type input struct {
	Entry
	related map[string]Entry
	now     time.Time
	// release asks for the lock's release plan (Lock.Release), as Decode does. The
	// string decoders leave it out otherwise: Identify reads what a string key is, not
	// how to release it (a dump of 100k rows would build 100k plans it never shows).
	release bool
}

// rel returns the related entry at key (absent when not read).
func (in input) rel(key string) Entry {
	if e, ok := in.related[key]; ok {
		return e
	}
	return Entry{Key: key, Type: TypeNone, PTTLMs: -2}
}

// The decoders, most specific first. A string decoder that matches only by shape comes
// after those that match by a prefix or a structure.
var stringDecoders = []func(input) (Lock, bool){
	decodeRedlockctl,
	decodeShedLock,
	decodeRueidislock,
	decodePythonRedisLock,
	decodeSimpleRedisMutex,
	decodeBase64x16,
	decodeUUID4,
	decodeHex32,
	decodeLaravel,
	decodeBsm,
}

var hashDecoders = []func(input) (Lock, bool){
	decodeRedisson,
	decodeSidekiq,
}

// opaque is an unrecognised string value: a lock of an unknown library, released by
// compare-and-delete.
func opaque(in input) Lock {
	l := stringLock(in, Unknown, "opaque string value: no decoder recognises its shape")
	l.Renewal = "unknown"
	return l
}

// guess is a string lock known by its value's shape only: Unknown with the libraries
// that write that shape, released by compare-and-delete of the exact value.
func guess(in input, evidence string, candidates ...string) Lock {
	l := stringLock(in, Unknown, evidence)
	l.Candidates = candidates
	return l
}

// stringLock fills what every string lock shares: the holder is the value, released
// by compare-and-delete (if in asks for the release).
func stringLock(in input, lib, evidence string) Lock {
	l := Lock{Library: lib, Evidence: evidence, Holder: in.Value}
	if in.release {
		l.Release = compareAndDelete(in.Key, in.Value)
	}
	return l
}

// hasPrefix reports whether key starts with prefix and has something after it.
func hasPrefix(key, prefix string) bool {
	return len(key) > len(prefix) && strings.HasPrefix(key, prefix)
}
