// Package inspecttest provides fixed snapshots for tests of the packages that present
// what inspect reads (report's goldens, the console), the way net/http/httptest serves
// net/http. Its snapshots are built by poll.Replay from fixed reads at fixed times,
// through the same merge, judge and findings code as a live poll; it never dials.
package inspecttest

import (
	"errors"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/internal/config"
)

// Hex32 is a valid 32-hex random part for lock values.
const Hex32 = "0123456789abcdef0123456789abcdef"

// FixedTime is the instant FixedSnapshot was taken.
var FixedTime = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// FixedSnapshot is five masters (m1-m5 at 10.0.0.N:6379, m5 down) holding one lock of
// every state: held with a fencing token, split, no-ttl, a binary value, a 3000-byte
// value, a hash (foreign), a fence counter, and a configured resource nobody holds.
func FixedSnapshot() *inspect.Snapshot {
	cfg := config.Default()
	cfg.Lock.KeyPrefix = "lock:"
	cfg.Inspect.Resources = []string{"reports:weekly"}
	cfg.Inspect.MaxTTL = time.Minute
	for _, n := range []string{"m1", "m2", "m3", "m4", "m5"} {
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: n, Addr: "10.0.0." + n[1:] + ":6379"})
	}
	now := FixedTime
	held := "billing-7f9c:4242#" + Hex32 + "#118"
	other := "billing-2b1a:77#" + strings.Repeat("f", 32)
	binary := "\x00\xff\xfe bin\x01"
	long := strings.Repeat("x", 3000)
	master := func(i int, kvs ...any) poll.Recorded { // key, value, pttl triples; a value "hash" is a hash
		sent := now.Add(-5 * time.Millisecond)
		r := poll.Recorded{
			Clock: verdict.ClockSample{Sent: sent, Received: sent.Add(400 * time.Microsecond), Server: sent.Add(200*time.Microsecond + time.Duration(i)*1500*time.Microsecond)},
			Health: poll.RecordedHealth{Role: "master", UptimeS: 86400, RunID: "run" + string(rune('a'+i)), ReplID: "repl" + string(rune('a'+i)),
				AppendOnly: "yes", Fsync: "always", Policy: "noeviction", Server: "redis", Version: "7.2.4"},
			ReadAt: now.Add(-3 * time.Millisecond),
		}
		for k := 0; k < len(kvs); k += 3 {
			key := poll.RecordedKey{Key: "lock:" + kvs[k].(string), Value: kvs[k+1].(string), PTTLMs: int64(kvs[k+2].(int))}
			if key.Value == "hash" {
				key.Type, key.Value = "hash", ""
			}
			r.Keys = append(r.Keys, key)
		}
		return r
	}
	down := master(4, "stale", held, 5000) // m5 fails after sending this: it must not show
	down.Err = errors.New("connect: dial tcp 10.0.0.5:6379: connection refused")
	return poll.Replay(cfg, now, []poll.Recorded{
		master(0, "billing:nightly", held, 12400, "deploy:api", other, 8000, "search:reindex", "opaque-uuid-550e8400", -1, "blob", binary, 9000, "billing:nightly:fence", "118", -1),
		master(1, "billing:nightly", held, 12390, "deploy:api", other, 7990, "blob", binary, 9000, "big", long, 20000),
		master(2, "billing:nightly", held, 12380, "deploy:api", held, 7000, "blob", binary, 9000, "queue", "hash", -1),
		master(3, "billing:nightly", held, 12410, "deploy:api", held, 7000),
		down,
	})
}
