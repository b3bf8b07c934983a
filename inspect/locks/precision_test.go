package locks

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Each generator writes values the way one library does (see each decoder's source
// note), with its key naming.
type format struct {
	name string
	lib  string   // what Decode must say, or Unknown
	cand []string // with Unknown: what Candidates must be
	// alsoUnknown lists the candidate sets a value may fall back to (Unknown) when its
	// shape is genuinely shared; anything else is a wrong library.
	alsoUnknown [][]string
	gen         func(r *rand.Rand) (key, value string)
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

var alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

var formats = []format{
	{name: "redlockctl", lib: Redlockctl, gen: func(r *rand.Rand) (string, string) {
		v := fmt.Sprintf("worker-%d@host-%d#%s", r.IntN(100), r.IntN(9), hex.EncodeToString(randBytes(r, 16)))
		if r.IntN(2) == 0 {
			v += fmt.Sprintf("#%d", 1+r.IntN(1e6))
		}
		return "lock:job", v
	}},
	{name: "redsync", lib: Redsync, gen: func(r *rand.Rand) (string, string) {
		return "job", base64.StdEncoding.EncodeToString(randBytes(r, 16))
	}},
	{name: "node-redlock", lib: NodeRedlock, alsoUnknown: [][]string{{RedisPy, NodeRedlock}}, gen: func(r *rand.Rand) (string, string) {
		return "locks:job", hex.EncodeToString(randBytes(r, 16))
	}},
	{name: "redis-py", lib: RedisPy, gen: func(r *rand.Rand) (string, string) {
		var node [6]byte
		copy(node[:], randBytes(r, 6))
		at := now.Add(-time.Duration(r.Int64N(int64(24 * time.Hour))))
		return "job", uuid1Hex(at, uint16(r.UintN(1<<14)), node)
	}},
	{name: "python-redis-lock", lib: PythonRedisLock, gen: func(r *rand.Rand) (string, string) {
		return "lock:job", base64.StdEncoding.EncodeToString(randBytes(r, 18))
	}},
	{name: "RedLock.net/pottery", lib: Unknown, cand: []string{RedlockNet, Pottery}, gen: func(r *rand.Rand) (string, string) {
		return "redlock:job", uuid4(r)
	}},
	{name: "spring-integration", lib: Unknown, cand: []string{Aioredlock, SpringIntegration}, gen: func(r *rand.Rand) (string, string) {
		return "registry:job", uuid4(r)
	}},
	{name: "aioredlock", lib: Aioredlock, gen: func(r *rand.Rand) (string, string) {
		return "job", uuid4(r)
	}},
	{name: "bsm-redislock", lib: BsmRedislock, gen: func(r *rand.Rand) (string, string) {
		v := base64.RawURLEncoding.EncodeToString(randBytes(r, 16))
		if r.IntN(2) == 0 {
			v += fmt.Sprintf(`{"worker":%d}`, r.IntN(100))
		}
		return "job", v
	}},
	{name: "shedlock", lib: ShedLock, gen: func(r *rand.Rand) (string, string) {
		at := now.Add(-time.Duration(r.Int64N(int64(time.Hour)))).UTC().Format("2006-01-02T15:04:05.000Z")
		return "job-lock:default:job", fmt.Sprintf("ADDED:%s@host-%d:%s", at, r.IntN(50), uuid4(r))
	}},
	{name: "laravel", lib: Laravel, gen: func(r *rand.Rand) (string, string) {
		b := make([]byte, 16)
		for i := range b {
			b[i] = alnum[r.IntN(len(alnum))]
		}
		return "laravel-cache-job", string(b)
	}},
}

// TestFingerprintPrecision decodes 10,000 values of each string format and fails on any
// value assigned to a library that did not write it: a shape shared by several
// libraries must come out Unknown with them as candidates.
func TestFingerprintPrecision(t *testing.T) {
	const n = 10000
	for i, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 2026))
			right, unknown := 0, 0
			for range n {
				key, v := f.gen(r)
				l := Decode(str(key, v), nil, now)
				switch {
				case l.Library == f.lib && (f.lib != Unknown || slices.Equal(l.Candidates, f.cand)):
					right++
				case l.Library == Unknown && slices.ContainsFunc(f.alsoUnknown, func(c []string) bool { return slices.Equal(c, l.Candidates) }):
					unknown++
				default:
					t.Fatalf("%q at %q decoded as %q %v (%s), want %q %v", v, key, l.Library, l.Candidates, l.Evidence, f.lib, f.cand)
				}
			}
			if unknown > n/100 {
				t.Errorf("%d of %d values fell back to Unknown", unknown, n)
			}
			t.Logf("%d right, %d honestly unknown", right, unknown)
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
