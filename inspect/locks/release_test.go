package locks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// These tests write each lock the way its library writes it (the same commands and
// values; see each decoder's source note), decode what a master holds, and run the
// decoded Release through redlock.RunScript against real redis-servers: the lock goes,
// and the library's waiters get the wake-up they listen for.

func client(t *testing.T, servers []*redistest.Server) *redlock.Client {
	t.Helper()
	c, err := redlock.New(redistest.Pools(servers), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t *testing.T, s *redistest.Server, cmd string, args ...any) any {
	t.Helper()
	v, err := s.Do(cmd, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return v
}

// read returns what s holds at key, as the poller would hand it to Decode.
func read(t *testing.T, s *redistest.Server, key string) Entry {
	t.Helper()
	typ, _ := redis.String(s.Do("TYPE", key))
	pttl, _ := redis.Int64(s.Do("PTTL", key))
	e := Entry{Key: key, Type: typ, PTTLMs: pttl}
	switch typ {
	case TypeString:
		e.Value, _ = redis.String(s.Do("GET", key))
	case TypeHash:
		e.Fields, _ = redis.StringMap(s.Do("HGETALL", key))
	case TypeList:
		e.Items, _ = redis.Strings(s.Do("LRANGE", key, 0, -1))
	case TypeZSet:
		kv, _ := redis.Strings(s.Do("ZRANGE", key, 0, -1, "WITHSCORES"))
		for i := 0; i+1 < len(kv); i += 2 {
			f, _ := strconv.ParseFloat(kv[i+1], 64)
			e.Items, e.Scores = append(e.Items, kv[i]), append(e.Scores, f)
		}
	}
	return e
}

func decodeOn(t *testing.T, s *redistest.Server, key string) Lock {
	t.Helper()
	e := read(t, s, key)
	rel := map[string]Entry{}
	for _, c := range Companions(key, e.Type) {
		rel[c.Key] = read(t, s, c.Key)
	}
	return Decode(e, rel, time.Now())
}

// subscriber listens on channels (or patterns with psub) on s and hands each message on.
type subscriber struct {
	msgs chan redis.Message
	conn redis.PubSubConn
}

func subscribe(t *testing.T, s *redistest.Server, psub bool, channels ...any) *subscriber {
	t.Helper()
	c, err := redis.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	sub := &subscriber{msgs: make(chan redis.Message, 16), conn: redis.PubSubConn{Conn: c}}
	if psub {
		err = sub.conn.PSubscribe(channels...)
	} else {
		err = sub.conn.Subscribe(channels...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		n := 0
		for {
			switch v := sub.conn.Receive().(type) {
			case redis.Message:
				sub.msgs <- v
			case redis.Subscription:
				if n++; n == len(channels) {
					close(ready)
				}
			case error:
				close(sub.msgs)
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	t.Cleanup(func() { c.Close() })
	return sub
}

// expect waits for one message and checks its channel and payload.
func (s *subscriber) expect(t *testing.T, channel, data string) {
	t.Helper()
	select {
	case m := <-s.msgs:
		if m.Channel != channel || string(m.Data) != data {
			t.Fatalf("got %q on %q, want %q on %q", m.Data, m.Channel, data, channel)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no message on %q", channel)
	}
}

// none checks that nothing was published to the subscriber before now: it publishes a
// marker on channel and expects the marker to be the next message (Redis delivers one
// subscriber's messages in order).
func (s *subscriber) none(t *testing.T, srv *redistest.Server, channel string) {
	t.Helper()
	do(t, srv, "PUBLISH", channel, "marker")
	s.expect(t, channel, "marker")
}

func run(t *testing.T, c *redlock.Client, s Script) redlock.Result {
	t.Helper()
	res, err := c.RunScript(context.Background(), redlock.NewScript(s.Lua), s.Keys, s.Args...)
	if err != nil {
		t.Fatalf("RunScript: %v", err)
	}
	return res
}

func outcome(t *testing.T, res redlock.Result, want redlock.Outcome) {
	t.Helper()
	for _, n := range res.Nodes {
		if n.Outcome != want {
			t.Fatalf("master %d: %v (%v), want %v", n.Master, n.Outcome, n.Err, want)
		}
	}
}

func TestReleaseRedisson(t *testing.T) {
	srv := redistest.StartN(t, 1, redistest.Options{})
	s, c := srv[0], client(t, srv)
	holder, other := rUUID+":57", rUUID2+":1"

	t.Run("lock: owner-checked, then publish 0", func(t *testing.T) {
		// RedissonLock.tryLockInnerAsync: HINCRBY name <uuid>:<tid> 1; PEXPIRE name lease.
		do(t, s, "HINCRBY", "orders", holder, 1)
		do(t, s, "PEXPIRE", "orders", 30000)
		sub := subscribe(t, s, false, "redisson_lock__channel:{orders}")
		l := decodeOn(t, s, "orders")
		if l.Library != Redisson || l.Kind != "lock" || l.Holder != holder {
			t.Fatalf("decoded %+v", l)
		}
		stale := redissonRelease("orders", other, redissonPrefixName("redisson_lock__channel", "orders"), "0")
		outcome(t, run(t, c, stale.Checked), redlock.Taken)
		sub.none(t, s, "redisson_lock__channel:{orders}")
		if n, _ := redis.Int(s.Do("EXISTS", "orders")); n != 1 {
			t.Fatal("a checked release for another holder deleted the lock")
		}
		outcome(t, run(t, c, l.Release.Checked), redlock.OK)
		sub.expect(t, "redisson_lock__channel:{orders}", "0")
		if n, _ := redis.Int(s.Do("EXISTS", "orders")); n != 0 {
			t.Fatal("lock still there")
		}
		outcome(t, run(t, c, l.Release.Checked), redlock.Absent)
	})

	t.Run("fair lock: queued waiters on their own channels", func(t *testing.T) {
		dead, live := rUUID2+":7", rUUID2+":8"
		nowMs := time.Now().UnixMilli()
		// RedissonFairLock.tryLockInnerAsync: the holder's field, waiters RPUSHed on the
		// queue with their deadline (client epoch ms) in the timeout set.
		do(t, s, "HSET", "report", holder, 1)
		do(t, s, "PEXPIRE", "report", 30000)
		do(t, s, "RPUSH", "redisson_lock_queue:{report}", dead, live)
		do(t, s, "ZADD", "redisson_lock_timeout:{report}", nowMs-1000, dead, nowMs+300000, live)
		subLive := subscribe(t, s, false, "redisson_lock__channel:{report}:"+live)
		subBase := subscribe(t, s, false, "redisson_lock__channel:{report}")
		l := decodeOn(t, s, "report")
		if l.Kind != "fair-lock" || len(l.Waiters) != 2 || l.Waiters[0] != dead {
			t.Fatalf("decoded kind %q waiters %v", l.Kind, l.Waiters)
		}
		outcome(t, run(t, c, l.Release.Checked), redlock.OK)
		// The live waiter is woken even though a dead one is ahead of it in the queue.
		subLive.expect(t, "redisson_lock__channel:{report}:"+live, "0")
		subBase.expect(t, "redisson_lock__channel:{report}", "0")
		if q, _ := redis.Strings(s.Do("LRANGE", "redisson_lock_queue:{report}", 0, -1)); len(q) != 2 {
			t.Errorf("queue after release %v: the release must leave Redisson's queue to Redisson", q)
		}
	})

	t.Run("write lock: publish 1 on the rwlock channel, braces kept", func(t *testing.T) {
		name := "{tenant}:doc"
		// RedissonWriteLock.tryLockInnerAsync: HSET mode write; HSET <uuid>:<tid>:write 1.
		do(t, s, "HSET", name, "mode", "write", holder+":write", 1)
		do(t, s, "PEXPIRE", name, 30000)
		sub := subscribe(t, s, false, "redisson_rwlock:{tenant}:doc")
		l := decodeOn(t, s, name)
		if l.Kind != "read-write-lock" {
			t.Fatalf("decoded %+v", l)
		}
		outcome(t, run(t, c, l.Release.Any), redlock.OK)
		sub.expect(t, "redisson_rwlock:{tenant}:doc", "1")
	})

	t.Run("fenced lock keeps its token counter", func(t *testing.T) {
		// RedissonFencedLock.tryLockInnerAsync: INCR token; HINCRBY; PEXPIRE.
		do(t, s, "INCR", "redisson_lock_token:{pay}")
		do(t, s, "HINCRBY", "pay", holder, 1)
		do(t, s, "PEXPIRE", "pay", 30000)
		l := decodeOn(t, s, "pay")
		if l.Kind != "fenced-lock" || l.Token != 1 {
			t.Fatalf("decoded kind %q token %d", l.Kind, l.Token)
		}
		outcome(t, run(t, c, l.Release.Checked), redlock.OK)
		if v, _ := redis.String(s.Do("GET", "redisson_lock_token:{pay}")); v != "1" {
			t.Errorf("token counter %q after release, want 1", v)
		}
	})
}

func TestReleasePythonRedisLock(t *testing.T) {
	srv := redistest.StartN(t, 1, redistest.Options{})
	s, c := srv[0], client(t, srv)
	// Lock.acquire: SET lock:<name> <id> NX (no expire given: no TTL).
	do(t, s, "SET", "lock:report", "AAECAwQFBgcICQoLDA0ODxAR", "NX")
	l := decodeOn(t, s, "lock:report")
	if l.Library != PythonRedisLock {
		t.Fatalf("decoded %+v", l)
	}
	// A waiter blocks on the signal list, as Lock.acquire does after a failed SET NX.
	w, err := redis.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	woke := make(chan error, 1)
	go func() {
		_, err := redis.Values(w.Do("BLPOP", "lock-signal:report", 10))
		woke <- err
	}()
	waitBlocked(t, s)
	outcome(t, run(t, c, l.Release.Checked), redlock.OK)
	select {
	case err := <-woke:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the BLPOP waiter was not woken")
	}
	if n, _ := redis.Int(s.Do("EXISTS", "lock:report")); n != 0 {
		t.Error("lock still there")
	}
}

// waitBlocked waits until a client is blocked on s.
func waitBlocked(t *testing.T, s *redistest.Server) {
	t.Helper()
	for range 500 {
		info, _ := redis.String(s.Do("INFO", "clients"))
		if containsLine(info, "blocked_clients:1") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the waiter never blocked")
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if l := s[:i]; l == line || l == line+"\r" {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

// A UUIDv4 at a registry key (spring-integration's, aioredlock's, asynq's shape) is
// Unknown, released by compare-and-delete of the exact value, on the masters that hold
// it: no library's own protocol, no publish.
func TestReleaseGuessAndCompareAndDelete(t *testing.T) {
	srv := redistest.StartN(t, 3, redistest.Options{})
	c := client(t, srv)
	for _, s := range srv {
		// RedisLockRegistry OBTAIN_LOCK_SCRIPT: SET <registryKey>:<path> <clientId> PX.
		do(t, s, "SET", "registry:orders", rUUID, "PX", 60000)
	}
	sub := subscribe(t, srv[1], true, "registry-channel:*")
	l := decodeOn(t, srv[0], "registry:orders")
	if l.Label() != Unknown || l.Release.Protocol != ProtoCompareAndDelete {
		t.Fatalf("decoded %s %+v", l.Label(), l.Release)
	}
	do(t, srv[2], "SET", "registry:orders", rUUID2, "PX", 60000) // another holder there
	res := run(t, c, l.Release.Checked)
	if res.Count(redlock.OK) != 2 || res.Nodes[2].Outcome != redlock.Taken {
		t.Fatalf("result %+v, want ok on 2 masters, taken on the third", res)
	}
	sub.none(t, srv[1], "registry-channel:marker")

	// Everyone else: compare-and-delete; Any deletes whatever is there.
	for _, s := range srv {
		do(t, s, "SET", "jobs", "q83vEjRWeJCrze8SNFZ4kA==", "PX", 60000)
	}
	do(t, srv[0], "SET", "jobs", "other", "PX", 60000)
	l = decodeOn(t, srv[1], "jobs")
	if l.Label() != "redsync?" || l.Release.Protocol != ProtoCompareAndDelete {
		t.Fatalf("decoded %+v", l)
	}
	res = run(t, c, l.Release.Checked)
	if res.Nodes[0].Outcome != redlock.Taken || res.Count(redlock.OK) != 2 {
		t.Fatalf("result %+v", res)
	}
	res = run(t, c, l.Release.Any)
	if res.Nodes[0].Outcome != redlock.OK || res.Count(redlock.Absent) != 2 {
		t.Fatalf("any-value result %+v, want the other value deleted on the first master", res)
	}
}

// TestCompareAndDeleteCommands: the command texts state key and value quoted as Go
// quotes them (%q), escapes and long values included, each its own string.
func TestCompareAndDeleteCommands(t *testing.T) {
	long := strings.Repeat("v", 300)
	for _, c := range []struct{ key, value string }{
		{"lock:a", "tok"},
		{`lock:"q"`, "a\nb\x00\xff"},
		{"lock:é", long},
		{"", ""},
	} {
		r := compareAndDelete(c.key, c.value)
		if want := fmt.Sprintf("EVAL compare-and-delete: GET %q, DEL %q if it holds value=%q", c.key, c.key, c.value); r.Checked.Command != want {
			t.Errorf("Checked.Command = %q, want %q", r.Checked.Command, want)
		}
		if want := fmt.Sprintf("EVAL: DEL %q", c.key); r.Any.Command != want {
			t.Errorf("Any.Command = %q, want %q", r.Any.Command, want)
		}
		if r.Checked.Keys[0] != c.key || r.Checked.Args[0] != c.value || r.Any.Keys[0] != c.key {
			t.Errorf("keys/args %v %v %v, want %q %q", r.Checked.Keys, r.Checked.Args, r.Any.Keys, c.key, c.value)
		}
	}
}
