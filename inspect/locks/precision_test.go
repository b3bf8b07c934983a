package locks

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each generator writes values the way one library does (see each decoder's source
// note), with its key naming. lib is the library that wrote it; named says whether the
// decoders have the evidence to name it (key shape, data type, a structured value) or
// only a value shape, which never names a library: then the writer must be among the
// candidates of an Unknown lock. shared says the value shape is one many libraries
// write (a UUIDv4): then the lock is Unknown with no candidates, the shape its evidence.
type format struct {
	name   string
	lib    string
	named  bool
	shared bool
	gen    func(r *rand.Rand) (key, value string)
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func uuid4(r *rand.Rand) string {
	b := randBytes(r, 16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// uuid1Hex is Python's uuid.uuid1(node, clock_seq).hex at t.
func uuid1Hex(t time.Time, clockSeq uint16, node [6]byte) string {
	ticks := uint64(t.Unix()-uuid1EpochUnix)*1e7 + uint64(t.Nanosecond()/100)
	var b [16]byte
	low, mid, hi := uint32(ticks), uint16(ticks>>32), uint16(ticks>>48)&0x0fff|0x1000
	b[0], b[1], b[2], b[3] = byte(low>>24), byte(low>>16), byte(low>>8), byte(low)
	b[4], b[5], b[6], b[7] = byte(mid>>8), byte(mid), byte(hi>>8), byte(hi)
	b[8], b[9] = byte(clockSeq>>8)&0x3f|0x80, byte(clockSeq)
	copy(b[10:], node[:])
	return hex.EncodeToString(b[:])
}

// recentUUID1 is a uuid1 stamped within the last day, with a random node and clock.
func recentUUID1(r *rand.Rand) string {
	var node [6]byte
	copy(node[:], randBytes(r, 6))
	at := now.Add(-time.Duration(r.Int64N(int64(24 * time.Hour))))
	return uuid1Hex(at, uint16(r.UintN(1<<14)), node)
}

var alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randAlnum(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

var formats = []format{
	{name: "redlockctl", lib: Redlockctl, named: true, gen: func(r *rand.Rand) (string, string) {
		v := fmt.Sprintf("worker-%d@host-%d#%s", r.IntN(100), r.IntN(9), hex.EncodeToString(randBytes(r, 16)))
		if r.IntN(2) == 0 {
			v += fmt.Sprintf("#%d", 1+r.IntN(1e6))
		}
		return "lock:job", v
	}},
	{name: "redsync", lib: Redsync, gen: func(r *rand.Rand) (string, string) {
		return "job", base64.StdEncoding.EncodeToString(randBytes(r, 16))
	}},
	{name: "redsync at a :lock key", lib: Redsync, gen: func(r *rand.Rand) (string, string) {
		return "job:lock", base64.StdEncoding.EncodeToString(randBytes(r, 16))
	}},
	// node-redis-warlock: key <name>:lock, value base64 of a uuid1's 16 bytes.
	{name: "warlock", lib: Warlock, named: true, gen: func(r *rand.Rand) (string, string) {
		b, _ := hex.DecodeString(recentUUID1(r))
		return "job:lock", base64.StdEncoding.EncodeToString(b)
	}},
	{name: "node-redlock", lib: NodeRedlock, gen: func(r *rand.Rand) (string, string) {
		return "locks:job", hex.EncodeToString(randBytes(r, 16))
	}},
	{name: "redis-py", lib: RedisPy, gen: func(r *rand.Rand) (string, string) {
		return "job", recentUUID1(r)
	}},
	{name: "python-redis-lock", lib: PythonRedisLock, named: true, gen: func(r *rand.Rand) (string, string) {
		return "lock:job", base64.StdEncoding.EncodeToString(randBytes(r, 18))
	}},
	{name: "RedLock.net", lib: RedlockNet, gen: func(r *rand.Rand) (string, string) {
		return "redlock:job", uuid4(r)
	}},
	{name: "pottery", lib: Pottery, gen: func(r *rand.Rand) (string, string) {
		return "redlock:job", uuid4(r)
	}},
	{name: "spring-integration", lib: SpringIntegration, shared: true, gen: func(r *rand.Rand) (string, string) {
		return "registry:job", uuid4(r)
	}},
	{name: "aioredlock", lib: Aioredlock, shared: true, gen: func(r *rand.Rand) (string, string) {
		return "job", uuid4(r)
	}},
	{name: "aioredlock with a colon", lib: Aioredlock, shared: true, gen: func(r *rand.Rand) (string, string) {
		return "jobs:nightly", uuid4(r)
	}},
	// redis-semaphore's RedisMutex and RedlockMutex: key mutex:<name>, crypto.randomUUID().
	{name: "redis-semaphore mutex", lib: RedisSemaphore, named: true, gen: func(r *rand.Rand) (string, string) {
		return "mutex:job", uuid4(r)
	}},
	// simple-redis-mutex: key @simple-redis-mutex:lock-<name>, String(Math.random()).
	{name: "simple-redis-mutex", lib: SimpleRedisMutex, named: true, gen: func(r *rand.Rand) (string, string) {
		return "@simple-redis-mutex:lock-job", strconv.FormatFloat(r.Float64(), 'g', -1, 64)
	}},
	{name: "bsm-redislock", lib: BsmRedislock, gen: func(r *rand.Rand) (string, string) {
		v := base64.RawURLEncoding.EncodeToString(randBytes(r, 16))
		if r.IntN(2) == 0 {
			v += fmt.Sprintf(`{"worker":%d}`, r.IntN(100))
		}
		return "job", v
	}},
	{name: "shedlock", lib: ShedLock, named: true, gen: func(r *rand.Rand) (string, string) {
		at := now.Add(-time.Duration(r.Int64N(int64(time.Hour)))).UTC().Format("2006-01-02T15:04:05.000Z")
		return "job-lock:default:job", fmt.Sprintf("ADDED:%s@host-%d:%s", at, r.IntN(50), uuid4(r))
	}},
	// Laravel: the cache prefix (<app>_cache, or <app>_cache_ since Laravel 11) plus ":"
	// and the name, maybe behind the connection's <app>_database_ prefix.
	{name: "laravel", lib: Laravel, named: true, gen: func(r *rand.Rand) (string, string) {
		keys := []string{"laravel_cache:job", "laravel_cache_:job", "laravel_database_laravel_cache_:job", "my_app_cache:reports"}
		return keys[r.IntN(len(keys))], randAlnum(r, 16)
	}},
	// rueidislock: key rueidislock:<i>:<name>, 24 random bytes (rueidis util.RandomBytes).
	{name: "rueidislock", lib: Rueidislock, named: true, gen: func(r *rand.Rand) (string, string) {
		return fmt.Sprintf("rueidislock:%d:job", r.IntN(3)), string(randBytes(r, 24))
	}},
	// go-zero's RedisLock: 16 random letters and digits at the key the caller names.
	{name: "go-zero", lib: GoZero, gen: func(r *rand.Rand) (string, string) {
		keys := []string{"cache:job", "job", "lock:cache:orders"}
		return keys[r.IntN(len(keys))], randAlnum(r, 16)
	}},
}

// TestFingerprintPrecision decodes 10,000 values of each format and fails on any value
// named for a library that did not write it, on a value shape alone naming a library,
// and on a guess whose candidates leave out the writer. A release chosen from a guess
// is never a library's own protocol: it is compare-and-delete of the exact value.
func TestFingerprintPrecision(t *testing.T) {
	const n = 10000
	for i, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 2026))
			named, guessed := 0, 0
			for range n {
				key, v := f.gen(r)
				l := Decode(str(key, v), nil, now)
				switch {
				case l.Library == f.lib && f.named:
					named++
				case f.shared && l.Library == Unknown && len(l.Candidates) == 0 && l.Evidence == EvidenceUUID4:
					if l.Release.Protocol != ProtoCompareAndDelete {
						t.Fatalf("%q at %q: unknown released by %s, want compare-and-delete", v, key, l.Release.Protocol)
					}
				case !f.shared && l.Library == Unknown && slices.Contains(l.Candidates, f.lib):
					guessed++
					if l.Release.Protocol != ProtoCompareAndDelete {
						t.Fatalf("%q at %q: guess %s released by %s, want compare-and-delete", v, key, l.Label(), l.Release.Protocol)
					}
				default:
					t.Fatalf("%q at %q decoded as %s (%s), written by %s (named by evidence: %v)", v, key, l.Label(), l.Evidence, f.lib, f.named)
				}
			}
			if f.named && guessed > n/100 {
				t.Errorf("%d of %d values only guessed", guessed, n)
			}
			t.Logf("%d named, %d guessed", named, guessed)
		})
	}
}

// TestRandomHexNotRedisPy: random 32-hex values that happen to fit the uuid1 layout are
// not called redis-py unless their timestamp is recent.
func TestRandomHexNotRedisPy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	layout := 0
	for layout < 5000 {
		b := randBytes(r, 16)
		b[6] = b[6]&0x0f | 0x10
		b[8] = b[8]&0x3f | 0x80
		v := hex.EncodeToString(b)
		layout++
		if l := Decode(str("k", v), nil, now); l.Library == RedisPy {
			t.Fatalf("random uuid1-layout value %s called redis-py (%s)", v, l.Evidence)
		}
	}
}

// zsetFormat writes a sorted set the way one library does: key, members, scores.
type zsetFormat struct {
	name string
	gen  func(r *rand.Rand) Entry
}

// members returns 1 to 5 members made by gen, each scored by score.
func members(r *rand.Rand, key string, gen func() string, score func() float64) Entry {
	n := 1 + r.IntN(5)
	ms, ss := make([]string, n), make([]float64, n)
	for i := range n {
		ms[i], ss[i] = gen(), score()
	}
	return Entry{Key: key, Type: TypeZSet, Items: ms, Scores: ss, PTTLMs: -1}
}

// timeoutKey is a key an RPermitExpirableSemaphore could have its timeout set at.
func timeoutKey(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return "{job}:timeout"
	}
	return "jobs:{job}:timeout"
}

// otherSets are the other libraries' sorted sets, at their own keys and at keys an
// RPermitExpirableSemaphore's timeout set could have, with scores they write.
var otherSets = []zsetFormat{
	{"Symfony Semaphore tokens scored in epoch s", func(r *rand.Rand) Entry {
		tok := func() string { return base64.StdEncoding.EncodeToString(randBytes(r, 32)) }
		return members(r, []string{"{job}:time", timeoutKey(r)}[r.IntN(2)], tok, func() float64 { return float64(now.Unix() + r.Int64N(300)) })
	}},
	{"Symfony Lock tokens scored in epoch ms", func(r *rand.Rand) Entry {
		tok := func() string { return base64.StdEncoding.EncodeToString(randBytes(r, 32)) }
		return members(r, []string{"job", timeoutKey(r)}[r.IntN(2)], tok, func() float64 { return float64(now.UnixMilli() + r.Int64N(3e5)) })
	}},
	{"redis-semaphore UUIDv4 ids scored in epoch ms", func(r *rand.Rand) Entry {
		return members(r, []string{"semaphore:job", timeoutKey(r)}[r.IntN(2)], func() string { return uuid4(r) }, func() float64 { return float64(now.UnixMilli() - r.Int64N(6e4)) })
	}},
	{"Redisson fair-lock waiters scored in epoch ms", func(r *rand.Rand) Entry {
		w := func() string { return uuid4(r) + ":" + strconv.Itoa(1+r.IntN(200)) }
		return members(r, []string{"redisson_lock_timeout:{job}", timeoutKey(r)}[r.IntN(2)], w, func() float64 { return float64(now.UnixMilli() + r.Int64N(3e5)) })
	}},
	{"16-byte members scored in epoch s", func(r *rand.Rand) Entry {
		return members(r, timeoutKey(r), func() string { return string(randBytes(r, 16)) }, func() float64 { return float64(now.Unix() + r.Int64N(300)) })
	}},
	{"16-byte permit ids at a key without a brace", func(r *rand.Rand) Entry {
		return members(r, "job:timeout", func() string { return string(randBytes(r, 16)) }, func() float64 { return float64(now.UnixMilli() + r.Int64N(3e5)) })
	}},
}

// TestRedissonPermitSemaphorePrecision: 10,000 timeout sets as RPermitExpirableSemaphore
// writes them are all named, with their permit count read at the name; 10,000 sets of
// each other format are never claimed (nor their keys' names read as a count), and
// 10,000 integers at a name (a plain RSemaphore's count, or any counter) are never
// named nor guessed.
func TestRedissonPermitSemaphorePrecision(t *testing.T) {
	const n = 10000
	r := rand.New(rand.NewPCG(11, 2026))
	for range n {
		e := members(r, timeoutKey(r), func() string { return string(randBytes(r, 16)) }, func() float64 {
			if r.IntN(4) == 0 {
				return redissonNoLease
			}
			return float64(now.UnixMilli() + r.Int64N(3e5) - 6e4)
		})
		name := strings.TrimSuffix(e.Key, ":timeout") // jobs:{job}
		if e.Key == "{job}:timeout" {
			name = "job"
		}
		count := strconv.Itoa(r.IntN(10))
		l := Decode(e, map[string]Entry{name: {Key: name, Type: TypeString, Value: count, PTTLMs: -1}}, now)
		if l.Library != Redisson || l.Kind != "permit-expirable-semaphore" || l.Permits != len(e.Items) || l.Available == nil || strconv.Itoa(*l.Available) != count {
			t.Fatalf("%q %q: %s %s permits %d available %v, want a Redisson permit-expirable-semaphore of %d, %s available", e.Key, e.Items, l.Label(), l.Kind, l.Permits, l.Available, len(e.Items), count)
		}
	}
	for i, f := range otherSets {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 11))
			for range n {
				e := f.gen(r)
				if l, ok := decodeRedissonPermitSemaphore(input{Entry: e, now: now}); ok || len(Related(e)) != 0 {
					t.Fatalf("%q %q %v: claimed as %s %s (related %v)", e.Key, e.Items, e.Scores, l.Label(), l.Kind, Related(e))
				}
			}
		})
	}
	for range n {
		v := strconv.FormatInt(r.Int64N(1e6)-10, 10)
		if l := Decode(Entry{Key: "job", Type: TypeString, Value: v, PTTLMs: -1}, nil, now); l.Library != Unknown || len(l.Candidates) != 0 {
			t.Fatalf("integer %s: %s, want unknown", v, l.Label())
		}
	}
}
