package locks

import (
	"encoding/base64"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func str(key, value string) Entry {
	return Entry{Key: key, Type: TypeString, Value: value, PTTLMs: 30000}
}

func hash(key string, kv ...string) Entry {
	e := Entry{Key: key, Type: TypeHash, Fields: map[string]string{}, PTTLMs: 30000}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Fields[kv[i]] = kv[i+1]
	}
	return e
}

const (
	rUUID  = "6f1c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41"
	rUUID2 = "0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3"
)

func TestDecodeStrings(t *testing.T) {
	// uuid1 for 2026-11-23T08:59:00Z (a minute before now), node 02:42:ac:11:00:02.
	py := uuid1Hex(now.Add(-time.Minute), 0x1234, [6]byte{0x02, 0x42, 0xac, 0x11, 0x00, 0x02})
	pyOld := uuid1Hex(now.Add(-90*24*time.Hour), 0x1234, [6]byte{0x02, 0x42, 0xac, 0x11, 0x00, 0x02})
	warlock, warlockOld := b64hex(py), b64hex(pyOld)
	tests := []struct {
		name       string
		e          Entry
		lib, kind  string
		owner      string
		token      int64
		candidates []string
		evidence   string // substring
		protocol   string
		recreates  bool
	}{
		{"redlockctl", str("lock:a", "w-1@h#0123456789abcdef0123456789abcdef"), Redlockctl, "", "w-1@h", 0, nil, "redlockctl", ProtoCompareAndDelete, false},
		{"redlockctl fenced", str("lock:a", "w-1@h#0123456789abcdef0123456789abcdef#42"), Redlockctl, "fenced", "w-1@h", 42, nil, "fenced", ProtoCompareAndDelete, false},
		{"redsync", str("jobs", "q83vEjRWeJCrze8SNFZ4kA=="), Unknown, "", "", 0, []string{Redsync}, "value shape only", ProtoCompareAndDelete, true},
		{"warlock", str("jobs:lock", warlock), Warlock, "", "02:42:ac:11:00:02@2026-11-23T08:59:00Z", 0, nil, "node-redis-warlock", ProtoCompareAndDelete, false},
		{"warlock old stamp", str("jobs:lock", warlockOld), Unknown, "", "", 0, []string{Redsync, Warlock}, "uuid1 layout", ProtoCompareAndDelete, false},
		{"uuid1 base64 without :lock", str("jobs", warlock), Unknown, "", "", 0, []string{Redsync}, "value shape only", ProtoCompareAndDelete, true},
		{"redsync spare bits set", str("jobs", "q83vEjRWeJCrze8SNFZ4kB=="), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
		{"node-redlock", str("locks:x", "0123456789abcdef0123456789abcdef"), Unknown, "", "", 0, []string{NodeRedlock}, "value shape only", ProtoCompareAndDelete, false},
		{"redis-py", str("mylock", py), Unknown, "", "02:42:ac:11:00:02@2026-11-23T08:59:00Z", 0, []string{RedisPy}, "uuid1", ProtoCompareAndDelete, false},
		{"redis-py old", str("mylock", pyOld), Unknown, "", "", 0, []string{RedisPy, NodeRedlock}, "old redis-py", ProtoCompareAndDelete, false},
		{"rueidislock", str("rueidislock:0:orders", "0123456789abcdefghijklmn"), Rueidislock, "multi-key", "", 0, nil, "rueidislock:<i>:<name>", ProtoCompareAndDelete, false},
		{"python-redis-lock", str("lock:report", "AAECAwQFBgcICQoLDA0ODxAR"), PythonRedisLock, "", "", 0, nil, "lock:<name>", ProtoSignalList, false},
		{"18-byte base64 elsewhere", str("report", "AAECAwQFBgcICQoLDA0ODxAR"), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
		{"redlock prefix uuid4", str("redlock:orders", rUUID), Unknown, "", "", 0, []string{RedlockNet, Pottery}, "RedLock.net or pottery", ProtoCompareAndDelete, true},
		{"spring-style uuid4", str("registry:orders", rUUID), Unknown, "", "", 0, nil, EvidenceUUID4, ProtoCompareAndDelete, true},
		{"redis-semaphore mutex", str("mutex:orders", rUUID), RedisSemaphore, "", "", 0, nil, "mutex:<name>", ProtoCompareAndDelete, false},
		{"simple-redis-mutex", str("@simple-redis-mutex:lock-orders", "0.7401829733390478"), SimpleRedisMutex, "", "", 0, nil, "Math.random", ProtoCompareAndDelete, false},
		{"simple-redis-mutex key, other value", str("@simple-redis-mutex:lock-orders", "x"), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
		{"bare uuid4", str("orders", rUUID), Unknown, "", "", 0, nil, EvidenceUUID4, ProtoCompareAndDelete, true},
		{"uuid1 with dashes", str("orders", "6f1c3a2e-9b4d-1c1e-8f2a-0d9e7b6a5c41"), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
		{"bsm", str("bsm:key", "AAECAwQFBgcICQoLDA0ODw"), Unknown, "", "", 0, []string{BsmRedislock}, "base64url", ProtoCompareAndDelete, false},
		{"bsm metadata", str("bsm:key", "AAECAwQFBgcICQoLDA0ODwworker-7"), Unknown, "", "", 0, []string{BsmRedislock}, "metadata", ProtoCompareAndDelete, false},
		{"shedlock", str("job-lock:default:nightly", "ADDED:2026-11-23T08:55:01.123Z@app-3:"+rUUID), ShedLock, "", "app-3 at 2026-11-23T08:55:01Z", 0, nil, "job-lock", ProtoCompareAndDelete, false},
		{"shedlock old", str("x", "ADDED:2018-12-07T12:30:37.819Z@host-1"), ShedLock, "", "host-1 at 2018-12-07T12:30:37Z", 0, nil, "ADDED", ProtoCompareAndDelete, false},
		{"shedlock bad time", str("x", "ADDED:yesterday@host-1"), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
		{"laravel", str("laravel_cache:report", "aB3dE5fG7hJ9kL1m"), Laravel, "", "", 0, nil, "cache prefix", ProtoCompareAndDelete, false},
		{"laravel 11 behind the connection prefix", str("shop_database_shop_cache_:report", "aB3dE5fG7hJ9kL1m"), Laravel, "", "", 0, nil, "cache prefix", ProtoCompareAndDelete, false},
		{"go-zero under cache:", str("cache:report", "aB3dE5fG7hJ9kL1m"), Unknown, "", "", 0, []string{GoZero, Laravel}, "go-zero", ProtoCompareAndDelete, false},
		{"16 alnum without cache", str("report", "aB3dE5fG7hJ9kL1m"), Unknown, "", "", 0, []string{GoZero, Laravel}, "value shape only", ProtoCompareAndDelete, false},
		{"binary", str("k", "\x00\xff\x01binary"), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
		{"uppercase hex", str("k", "0123456789ABCDEF0123456789ABCDEF"), Unknown, "", "", 0, nil, "opaque", ProtoCompareAndDelete, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Decode(tt.e, nil, now)
			if l.Library != tt.lib || l.Kind != tt.kind || l.Token != tt.token {
				t.Fatalf("library %q kind %q token %d, want %q %q %d (evidence %q)", l.Library, l.Kind, l.Token, tt.lib, tt.kind, tt.token, l.Evidence)
			}
			if tt.owner != "" && l.Owner != tt.owner {
				t.Errorf("owner %q, want %q", l.Owner, tt.owner)
			}
			if !slices.Equal(l.Candidates, tt.candidates) {
				t.Errorf("candidates %v, want %v", l.Candidates, tt.candidates)
			}
			if !strings.Contains(l.Evidence, tt.evidence) {
				t.Errorf("evidence %q lacks %q", l.Evidence, tt.evidence)
			}
			if l.Holder != tt.e.Value || l.Foreign != "" {
				t.Errorf("holder %q foreign %q, want the value and not foreign", l.Holder, l.Foreign)
			}
			if l.Release.Protocol != tt.protocol || !l.Release.Supported() {
				t.Errorf("release %q (supported %v), want %q", l.Release.Protocol, l.Release.Supported(), tt.protocol)
			}
			// Identify decodes the value without its release plan, and nothing else differs.
			full := l
			full.Release = Release{}
			if bare := decode(input{Entry: tt.e, now: now}); !reflect.DeepEqual(bare, full) {
				t.Errorf("without the release: %+v, want %+v", bare, full)
			}
			if (l.Recreates != "") != tt.recreates {
				t.Errorf("recreates %q, want set=%v", l.Recreates, tt.recreates)
			}
			if strings.ContainsAny(l.Evidence, "\x00\xff") {
				t.Errorf("evidence carries raw bytes: %q", l.Evidence)
			}
		})
	}
}

// b64hex is the standard base64 of the bytes of a hex string.
func b64hex(h string) string {
	b, _ := hex.DecodeString(h)
	return base64.StdEncoding.EncodeToString(b)
}

func TestDecodeAbsentAndOtherTypes(t *testing.T) {
	if l := Decode(Entry{Key: "k", Type: TypeNone, PTTLMs: -2}, nil, now); l.Library != "" || l.Recognised() {
		t.Errorf("absent key decoded as %+v", l)
	}
	l := Decode(Entry{Key: "k", Type: "set", PTTLMs: -1}, nil, now)
	if l.Library != Unknown || l.Foreign == "" || l.Recognised() {
		t.Errorf("set decoded as %+v, want unknown foreign", l)
	}
}

func TestDecodeRedisson(t *testing.T) {
	holder := rUUID + ":57"
	t.Run("lock", func(t *testing.T) {
		l := Decode(hash("orders", holder, "2"), nil, now)
		if l.Library != Redisson || l.Kind != "lock" || l.Holder != holder || l.Owner != holder || l.Count != 2 || l.Foreign != "" {
			t.Fatalf("got %+v", l)
		}
		r := l.Release
		if r.Protocol != ProtoRedissonUnlock || r.Checked.Keys[1] != "redisson_lock__channel:{orders}" || r.Checked.Args[0] != holder || r.Checked.Args[1] != "0" {
			t.Errorf("release %+v", r)
		}
		if l.Recreates != "" {
			t.Errorf("Redisson's watchdog never re-creates, got %q", l.Recreates)
		}
	})
	t.Run("brace rule", func(t *testing.T) {
		l := Decode(hash("{tenant-1}:orders", holder, "1"), nil, now)
		if got := l.Release.Checked.Keys[1]; got != "redisson_lock__channel:{tenant-1}:orders" {
			t.Errorf("channel %q: no braces may be added when the name has one", got)
		}
		if got := l.Release.Checked.Keys[2]; got != "redisson_lock_queue:{tenant-1}:orders" {
			t.Errorf("queue %q", got)
		}
	})
	t.Run("fair lock waiters in order", func(t *testing.T) {
		w1, w2 := rUUID2+":12", rUUID2+":13"
		rel := map[string]Entry{
			"redisson_lock_queue:{orders}":   {Key: "redisson_lock_queue:{orders}", Type: TypeList, Items: []string{w1, w2}, PTTLMs: -1},
			"redisson_lock_timeout:{orders}": {Key: "redisson_lock_timeout:{orders}", Type: TypeZSet, Items: []string{w1, w2}, Scores: []float64{1795420000000, 1795420005000}, PTTLMs: -1},
		}
		l := Decode(hash("orders", holder, "1"), rel, now)
		if l.Kind != "fair-lock" || !slices.Equal(l.Waiters, []string{w1, w2}) {
			t.Fatalf("kind %q waiters %v", l.Kind, l.Waiters)
		}
		var names []string
		for _, f := range l.Fields {
			names = append(names, f.Name)
		}
		if !slices.Contains(names, "waiter 1") || !slices.Contains(names, "waiter 2") {
			t.Errorf("fields %v lack the waiters", names)
		}
		if len(l.Companions) != 2 {
			t.Errorf("companions %+v, want queue and timeouts", l.Companions)
		}
	})
	t.Run("fenced", func(t *testing.T) {
		rel := map[string]Entry{"redisson_lock_token:{orders}": {Key: "redisson_lock_token:{orders}", Type: TypeString, Value: "17", PTTLMs: -1}}
		l := Decode(hash("orders", holder, "1"), rel, now)
		if l.Kind != "fenced-lock" || l.Token != 17 {
			t.Fatalf("kind %q token %d", l.Kind, l.Token)
		}
		for _, k := range append(l.Release.Checked.Keys, l.Release.Any.Keys...) {
			if k == "redisson_lock_token:{orders}" {
				t.Errorf("release touches the token counter")
			}
		}
	})
	t.Run("write lock", func(t *testing.T) {
		l := Decode(hash("doc", "mode", "write", holder+":write", "1", holder, "1"), nil, now)
		if l.Library != Redisson || l.Kind != "read-write-lock" || l.Holder != holder+":write" || !strings.Contains(l.Owner, "(write)") {
			t.Fatalf("got %+v", l)
		}
		if r := l.Release.Checked; r.Keys[1] != "redisson_rwlock:{doc}" || r.Args[1] != "1" || r.Args[0] != holder+":write" {
			t.Errorf("release %+v", r)
		}
	})
	t.Run("read lock, two readers", func(t *testing.T) {
		r2 := rUUID2 + ":3"
		l := Decode(hash("doc", "mode", "read", holder, "2", r2, "1"), nil, now)
		if l.Kind != "read-write-lock" || l.Holder != r2+","+holder || !strings.Contains(l.Owner, "+1") {
			t.Fatalf("got holder %q owner %q", l.Holder, l.Owner)
		}
		// One rwlock_timeout key per read acquisition: 2 + 1.
		if len(l.Companions) != 3 || l.Companions[0].Role != RoleRWLockTimeout {
			t.Errorf("companions %+v", l.Companions)
		}
	})
	for _, tt := range []struct {
		name   string
		e      Entry
		reason string
	}{
		{"extra field", hash("orders", holder, "1", "owner", "x"), `unexpected field "owner"`},
		{"count not a number", hash("orders", holder, "yes"), "not a positive integer"},
		{"two holders", hash("orders", holder, "1", rUUID2+":1", "1"), "2 holder fields"},
		{"bad mode", hash("doc", "mode", "exclusive", holder, "1"), `mode "exclusive"`},
		{"write mode without writer", hash("doc", "mode", "write", holder, "1"), "write lock has one"},
		{"truncated", func() Entry { e := hash("orders", holder, "1"); e.Truncated = true; return e }(), "more fields"},
	} {
		t.Run("unknown layout: "+tt.name, func(t *testing.T) {
			l := Decode(tt.e, nil, now)
			if l.Foreign == "" || l.Library != Unknown || l.Recognised() {
				t.Fatalf("got %+v, want foreign", l)
			}
			if !strings.Contains(l.Foreign, "Redisson-looking") || !strings.Contains(l.Foreign, tt.reason) {
				t.Errorf("reason %q lacks %q", l.Foreign, tt.reason)
			}
		})
	}
	t.Run("non-Redisson hash stays foreign", func(t *testing.T) {
		l := Decode(hash("user:1", "name", "ada", "email", "a@b"), nil, now)
		if l.Foreign == "" || l.Library != Unknown || strings.Contains(l.Foreign, "Redisson") {
			t.Fatalf("got %+v", l)
		}
	})
}

func TestDecodeSidekiq(t *testing.T) {
	jid := "0123456789abcdef01234567"
	l := Decode(hash("uniquejobs:3f2a:LOCKED", jid, `{"type":"until_executed"}`), nil, now)
	if l.Library != SidekiqUniqueJobs || l.Holder != jid || l.Release.Supported() {
		t.Fatalf("got %+v", l)
	}
	if l := Decode(hash("uniquejobs:3f2a:LOCKED", "not-a-jid", "1"), nil, now); l.Foreign == "" {
		t.Errorf("a LOCKED hash with non-jid fields must stay foreign: %+v", l)
	}
}

func TestCompanionOf(t *testing.T) {
	tests := []struct {
		key  string
		want []string
		role string
	}{
		{"redisson_lock_queue:{orders}", []string{"orders", "{orders}"}, RoleFairQueue},
		{"redisson_lock_timeout:{orders}", []string{"orders", "{orders}"}, RoleFairTimeouts},
		{"redisson_lock_token:{t}:orders", []string{"{t}:orders"}, RoleFenceToken},
		{"redisson_unlock_latch:{orders}:0123456789abcdef0123456789abcdef", []string{"orders", "{orders}"}, RoleUnlockLatch},
		{"{doc}:" + rUUID + ":57:rwlock_timeout:1", []string{"doc", "{doc}"}, RoleRWLockTimeout},
		{"{t}:doc:" + rUUID + ":57:rwlock_timeout:2", []string{"{t}:doc"}, RoleRWLockTimeout},
		{"lock-signal:report", []string{"lock:report"}, RoleSignalList},
		{"uniquejobs:3f2a:QUEUED", []string{"uniquejobs:3f2a:LOCKED"}, RoleJobState},
		{"lock:billing:fence", []string{"lock:billing"}, RoleFenceCounter},
	}
	for _, tt := range tests {
		got, role, ok := CompanionOf(tt.key)
		if !ok || role != tt.role || !slices.Equal(got, tt.want) {
			t.Errorf("CompanionOf(%q) = %v %q %v, want %v %q", tt.key, got, role, ok, tt.want, tt.role)
		}
	}
	for _, key := range []string{"orders", "redisson_lock_queue:", "lock-signal:", "x:rwlock_timeout:1", "uniquejobs:LOCKED", ":fence"} {
		if got, role, ok := CompanionOf(key); ok {
			t.Errorf("CompanionOf(%q) = %v %q, want not a companion", key, got, role)
		}
	}
	// What Companions asks the poller to read is what CompanionOf folds back.
	for _, c := range Companions("orders", TypeHash) {
		got, role, ok := CompanionOf(c.Key)
		if !ok || got[0] != "orders" || role != c.Role {
			t.Errorf("CompanionOf(%q) = %v %q, want orders %q", c.Key, got, role, c.Role)
		}
	}
}

func TestRelated(t *testing.T) {
	if got := Related(hash("orders", rUUID+":1", "1")); len(got) != 3 || got[0].Key != "redisson_lock_queue:{orders}" {
		t.Errorf("Related(Redisson hash) = %+v, want its queue, timeouts and token", got)
	}
	for _, e := range []Entry{hash("user:1", "name", "ada"), str("orders", rUUID)} {
		if got := Related(e); len(got) != 0 {
			t.Errorf("Related(%s %s) = %+v, want none", e.Type, e.Key, got)
		}
	}
}

func zset(key string, kv ...any) Entry {
	e := Entry{Key: key, Type: TypeZSet, PTTLMs: 30000}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Items, e.Scores = append(e.Items, kv[i].(string)), append(e.Scores, kv[i+1].(float64))
	}
	return e
}

// Sorted-set locks are named by data type, member shape and score meaning; any other
// sorted set stays foreign.
func TestDecodeSortedSets(t *testing.T) {
	tok, tok2 := "/6pYeqESk3bVyDvxQ/+6SMhdFuU1Qrl/OTqkfefnkqY=", "5xbM6jU9c9a99Z/pjuD6J9I03umhOi/kr86QAU2nATE="
	ms, s := float64(now.Add(time.Minute).UnixMilli()), float64(now.Add(time.Minute).Unix())
	for _, c := range []struct {
		name       string
		e          Entry
		lib, kind  string
		holder     string
		releaseKey int // keys the release touches
	}{
		{"symfony exclusive", zset("orders", tok, ms, "__write__", ms), SymfonyLock, "exclusive", tok, 1},
		{"symfony shared", zset("doc", tok, ms, tok2, ms), SymfonyLock, "shared", tok + "," + tok2, 1},
		{"symfony semaphore", zset("{pool}:time", tok, s), SymfonySemaphore, "semaphore", tok, 2},
		{"redis-semaphore", zset("semaphore:pool", rUUID, ms, rUUID2+"_0", ms), RedisSemaphore, "semaphore", rUUID2 + "_0," + rUUID, 1},
	} {
		l := Decode(c.e, nil, now)
		if l.Library != c.lib || l.Kind != c.kind || l.Holder != c.holder || !l.Recognised() {
			t.Errorf("%s: %s %q holder %q foreign %q", c.name, l.Label(), l.Kind, l.Holder, l.Foreign)
		}
		if l.Release.Protocol != ProtoZRem || len(l.Release.Checked.Keys) != c.releaseKey || !strings.Contains(l.Release.Checked.Command, "ZREM") {
			t.Errorf("%s: release %+v", c.name, l.Release)
		}
	}
	for name, e := range map[string]Entry{
		"leaderboard":          zset("scores", "ada", 12.0, "bob", 7.0),
		"token scored small":   zset("orders", tok, 42.0),
		"write alone":          zset("orders", "__write__", ms),
		"semaphore bad member": zset("semaphore:pool", "worker-1", ms),
		"symfony truncated":    func() Entry { e := zset("orders", tok, ms); e.Truncated = true; return e }(),
	} {
		if l := Decode(e, nil, now); l.Recognised() || l.Foreign == "" {
			t.Errorf("%s: decoded as %s %+v, want foreign", name, l.Label(), l)
		}
	}
	if keys, role, ok := CompanionOf("{pool}:weight"); !ok || keys[0] != "{pool}:time" || role != RoleSemaphoreWeights {
		t.Errorf("CompanionOf({pool}:weight) = %v %q %v", keys, role, ok)
	}
}

// b64Digit gives every byte the value its index in the alphabet string gives it, in
// both alphabets, and -1 to every byte outside them.
func TestB64Digit(t *testing.T) {
	for _, alphabet := range []string{b64Std, b64URL} {
		for c := range 256 {
			want := strings.IndexByte(alphabet, byte(c))
			if got := b64Digit(alphabet, byte(c)); got != want {
				t.Errorf("%q: b64Digit(%q) = %d, want %d", alphabet, byte(c), got, want)
			}
		}
	}
}
