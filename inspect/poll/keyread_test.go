package poll

import (
	"context"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The key reader over a redigo connection (admin's, the live feed's) reads what the
// poller reads: for every kind of key, locks.Identify answers the same library,
// holder and lock-or-not as the poller's row, and a Redisson hash, a Sidekiq hash and
// a plain hash are told apart by their fields.
func TestReadKeysOverRedigoAsThePoller(t *testing.T) {
	srv := redistest.StartN(t, 1, redistest.Options{})
	s := srv[:1]
	nowMs := time.Now().UnixMilli()
	const jid = "0123456789abcdef01234567"
	do(t, s, "HSET", "orders", rsHolder, 2)
	do(t, s, "PEXPIRE", "orders", 30000)
	do(t, s, "RPUSH", "redisson_lock_queue:{orders}", rsWaiter)
	do(t, s, "ZADD", "redisson_lock_timeout:{orders}", nowMs+300000, rsWaiter)
	do(t, s, "HSET", "uniquejobs:3f2a:LOCKED", jid, `{"type":"until_executed"}`)
	do(t, s, "HSET", "session:9", "user", "ann", "cart", "3")
	do(t, s, "RPUSH", "queue:mail", "a", "b")
	do(t, s, "SET", "mine", "w-1@h#"+hex32, "PX", 30000)
	do(t, s, "SET", "asynq:{default}:unique:email:deliver:5d41402abc4b2a76b9719d911017c592", "6f1c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41", "PX", 30000)
	keys := []string{"orders", "uniquejobs:3f2a:LOCKED", "session:9", "queue:mail", "mine",
		"asynq:{default}:unique:email:deliver:5d41402abc4b2a76b9719d911017c592", "absent"}

	snap := newPoller(t, testConfig(t, s, func(c *config.Config) { c.Lock.KeyPrefix = "" })).Poll(context.Background())
	conn := s[0].Pool.Get()
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reads, err := ReadKeys(RedigoPipe(ctx, conn), keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		label string
		lock  bool
	}{
		"orders":                 {locks.Redisson, true},
		"uniquejobs:3f2a:LOCKED": {locks.SidekiqUniqueJobs, true},
		"session:9":              {locks.Unknown, false},
		"queue:mail":             {locks.Unknown, false},
		"mine":                   {locks.Redlockctl, true},
		"asynq:{default}:unique:email:deliver:5d41402abc4b2a76b9719d911017c592": {locks.Unknown, true},
		"absent": {"", false},
	}
	for i, k := range keys {
		seen := locks.See(reads[i].Entry, reads[i].Related, time.Now())
		id := locks.Identify(k, seen.Value, []locks.Seen{seen}, time.Now())
		if w := want[k]; id.Label != w.label || id.IsLock() != w.lock {
			t.Errorf("%s: %q lock %v (%s), want %q lock %v", k, id.Label, id.IsLock(), id.Evidence, w.label, w.lock)
		}
		if k == "absent" {
			if seen.Type != locks.TypeNone || seen.PTTLMs != -2 {
				t.Errorf("absent: %+v", seen)
			}
			continue
		}
		r := row(t, snap, k)
		if r.Library != id.Label || r.Value != seen.Value {
			t.Errorf("%s: poller %q holder %q, key reader %q holder %q", k, r.Library, r.Value, id.Label, seen.Value)
		}
	}
	if l, _ := locks.Identify("orders", rsHolder, []locks.Seen{locks.See(reads[0].Entry, reads[0].Related, time.Now())}, time.Now()).Lock(); len(l.Waiters) != 1 || l.Waiters[0] != rsWaiter {
		t.Errorf("orders: waiters %v, want the fair-lock queue's %s", l.Waiters, rsWaiter)
	}
}
