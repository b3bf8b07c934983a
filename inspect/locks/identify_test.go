package locks

import (
	"crypto/md5"
	"encoding/hex"
	"testing"
)

// seen3 is one Seen per master of three, each from what See makes of e.
func seen3(e Entry) []Seen {
	s := See(e, nil, now)
	return []Seen{s, s, s}
}

// asynq's uniqueness lock: `SET asynq:{<queue>}:unique:<type>:<md5 of payload> <task id>
// NX EX <ttl>`, the task id a uuid.NewString() (a UUIDv4), the md5 part empty for a task
// without payload (hibiken/asynq internal/base/base.go UniqueKey, internal/rdb
// enqueueUniqueCmd). The UUIDv4 is a shape many libraries write: the key is unknown,
// with the shape as its evidence, and no library is guessed.
func TestIdentifyAsynqUniqueLock(t *testing.T) {
	sum := md5.Sum([]byte(`{"user_id":42}`))
	for _, key := range []string{
		"asynq:{default}:unique:email:deliver:" + hex.EncodeToString(sum[:]),
		"asynq:{critical}:unique:cleanup:",
	} {
		id := Identify(key, rUUID, seen3(str(key, rUUID)), now)
		if id.Label != Unknown || id.Evidence != EvidenceUUID4 || id.Scope != "" || !id.IsLock() || id.Holding != 0 {
			t.Errorf("%s: %+v, want a lock of library unknown, the UUIDv4 shape as evidence, no scope", key, id)
		}
		if l, ok := id.Lock(); !ok || len(l.Candidates) != 0 || l.Label() != Unknown {
			t.Errorf("%s: lock %s (candidates %v), want unknown without candidates", key, l.Label(), l.Candidates)
		}
		if r := id.Release(); r.Protocol != ProtoCompareAndDelete || r.Checked.Args[0] != rUUID {
			t.Errorf("%s: release %+v, want compare-and-delete of the task id", key, r)
		}
	}
}

// Identify tells hashes apart by their fields: Redisson's holder fields, Sidekiq's job
// ids, and a plain hash that is no lock.
func TestIdentifyHashes(t *testing.T) {
	holder := rUUID + ":57"
	jid := "0123456789abcdef01234567"
	tests := []struct {
		name, value string
		e           Entry
		label       string
		lock        bool
		protocol    string
	}{
		{"redisson", holder, hash("orders", holder, "2"), Redisson, true, ProtoRedissonUnlock},
		{"sidekiq", jid, hash("uniquejobs:3f2a:LOCKED", jid, `{"type":"until_executed"}`), SidekiqUniqueJobs, true, ProtoNone},
		{"plain hash", "", hash("session:9", "user", "ann", "cart", "3"), Unknown, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := seen3(tt.e)
			id := Identify(tt.e.Key, seen[0].Value, seen, now)
			if id.Label != tt.label || id.IsLock() != tt.lock || seen[0].NotALock() == tt.lock {
				t.Fatalf("%+v (not a lock: %v), want %s, lock %v", id, seen[0].NotALock(), tt.label, tt.lock)
			}
			if tt.lock && (id.Release().Protocol != tt.protocol || id.Scope != ScopeOf(tt.label)) {
				t.Errorf("release %s scope %q, want %s, %q", id.Release().Protocol, id.Scope, tt.protocol, ScopeOf(tt.label))
			}
			if !tt.lock && (id.Foreign == "" || id.Evidence != id.Foreign || id.Release().Protocol != ProtoCompareAndDelete) {
				t.Errorf("foreign %q evidence %q, want why it is no lock", id.Foreign, id.Evidence)
			}
		})
	}
}

// The holding master is the first that answered and holds the value as a lock; this
// project's own values are identified without the decoders, the same as Decode does.
func TestIdentifyHolding(t *testing.T) {
	const v = "w-1@h#0123456789abcdef0123456789abcdef#42"
	seen := []Seen{
		{Failed: true},
		{Type: TypeString, Value: "other", PTTLMs: 100},
		{Type: TypeNone, PTTLMs: -2},
		{Type: TypeString, Value: v, PTTLMs: 5000},
	}
	id := Identify("lock:a", v, seen, now)
	l := Decode(str("lock:a", v), nil, now)
	if id.Holding != 3 || id.Label != l.Label() || id.Kind != l.Kind || id.Evidence != l.Evidence || id.Owner != l.Owner || id.Token != l.Token || id.Scope != ScopeRedlock {
		t.Fatalf("%+v, want the fourth master, as Decode: %s %s %q %s %d", id, l.Label(), l.Kind, l.Evidence, l.Owner, l.Token)
	}
	if c := id.Companions(); len(c) != 1 || c[0].Role != RoleFenceCounter {
		t.Errorf("companions %+v, want the fence counter", c)
	}
	if id := Identify("lock:a", "", seen, now); id.IsLock() || id.Label != "" || id.Foreign != "" {
		t.Errorf("no value: %+v, want nothing", id)
	}
	if id := Identify("lock:a", "gone", seen, now); id.IsLock() || id.Release().Protocol != ProtoCompareAndDelete {
		t.Errorf("value nobody holds: %+v, want no lock, released by compare-and-delete", id)
	}
	if !(Seen{Type: TypeHash}).NotALock() || (Seen{Type: TypeHash, Failed: true}).NotALock() || (Seen{Type: TypeNone}).NotALock() {
		t.Error("NotALock: want a present undecoded hash only")
	}
}

func TestMultiKey(t *testing.T) {
	for label, want := range map[string]bool{NodeRedlock: true, "redis-py|node-redlock?": true, BsmRedislock: true, Rueidislock: true, Redsync: false, Unknown: false, "": false} {
		if MultiKey(label) != want {
			t.Errorf("MultiKey(%q) = %v, want %v", label, !want, want)
		}
	}
}
