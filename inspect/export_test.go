package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
)

// FixedSnapshot builds a snapshot from fixed raw reads at fixed times, through the
// same merge, judge and findings code as a live poll.
func FixedSnapshot(t *testing.T) *Snapshot {
	t.Helper()
	cfg := config.Default()
	cfg.Lock.KeyPrefix = "lock:"
	cfg.Inspect.Resources = []string{"reports:weekly"}
	cfg.Inspect.MaxTTL = time.Minute
	for _, n := range []string{"m1", "m2", "m3", "m4", "m5"} {
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: n, Addr: "10.0.0." + n[1:] + ":6379"})
	}
	now := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	held := "billing-7f9c:4242#" + hex32 + "#118"
	other := "billing-2b1a:77#" + strings.Repeat("f", 32)
	binary := "\x00\xff\xfe bin\x01"
	long := strings.Repeat("x", 3000)
	read := func(i int) *masterRead {
		sent := now.Add(-5 * time.Millisecond)
		return &masterRead{
			clock:  &ClockSample{Sent: sent, Received: sent.Add(400 * time.Microsecond), Server: sent.Add(200*time.Microsecond + time.Duration(i)*1500*time.Microsecond)},
			health: &health{role: "master", uptimeS: 86400, runID: "run" + string(rune('a'+i)), replID: "repl" + string(rune('a'+i)), appendOnly: "yes", fsync: "always", maxmemory: 0, policy: "noeviction", server: "redis", version: "7.2.4", secondReplOffset: -1, minReplicas: -1},
		}
	}
	col := newCollector(cfg)
	batch := func(mi int, kvs ...any) { // key, value, pttl triples; a value "hash" is a hash
		kb := &keyBatch{}
		for i := 0; i < len(kvs); i += 3 {
			kb.keys = append(kb.keys, []byte("lock:"+kvs[i].(string)))
			v := kvs[i+1].(string)
			typ := ""
			if v == "hash" {
				typ, v = "hash", ""
			}
			kb.vals = append(kb.vals, []byte(v))
			kb.types = append(kb.types, typ)
			kb.pttls = append(kb.pttls, int64(kvs[i+2].(int)))
		}
		col.add(mi, now.Add(-3*time.Millisecond), kb)
	}
	batch(0, "billing:nightly", held, 12400, "deploy:api", other, 8000, "search:reindex", "opaque-uuid-550e8400", -1, "blob", binary, 9000, "billing:nightly:fence", "118", -1)
	batch(1, "billing:nightly", held, 12390, "deploy:api", other, 7990, "blob", binary, 9000, "big", long, 20000)
	batch(2, "billing:nightly", held, 12380, "deploy:api", held, 7000, "blob", binary, 9000, "queue", "hash", -1)
	batch(3, "billing:nightly", held, 12410, "deploy:api", held, 7000)
	batch(4, "stale", held, 5000) // m5 fails after sending this: it must not show
	reads := []*masterRead{read(0), read(1), read(2), read(3), {err: errDown}}
	p := NewPoller(cfg, nil)
	return p.build(now, reads, col)
}

var errDown = errorString("connect: dial tcp 10.0.0.5:6379: connection refused")

type errorString string

func (e errorString) Error() string { return string(e) }

// Exported for the external tests of this directory (package inspect_test).
var (
	TestConfig    = testConfig
	NewTestPoller = newPoller
	Do            = do
	Row           = row
)

// Hex32 is a valid 32-hex random part for test lock values.
const Hex32 = hex32
