package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/admin"
)

const libsHolder = "6f1c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41:57"

// release --force --key of a Redisson lock follows Redisson's protocol: the hash goes,
// the unlock message wakes a subscribed waiter, and the audit line names the library
// and the protocol.
func TestReleaseForceRedisson(t *testing.T) {
	c := newAdminCLI(t, 3)
	for _, s := range c.servers {
		// RedissonLock.tryLockInnerAsync: HINCRBY name <uuid>:<tid> 1; PEXPIRE.
		if _, err := s.Do("HINCRBY", "orders", libsHolder, 1); err != nil {
			t.Fatal(err)
		}
		s.Do("PEXPIRE", "orders", 60000)
	}
	sub, err := redis.Dial("tcp", c.servers[1].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ps := redis.PubSubConn{Conn: sub}
	if err := ps.Subscribe("redisson_lock__channel:{orders}"); err != nil {
		t.Fatal(err)
	}
	if _, ok := ps.Receive().(redis.Subscription); !ok {
		t.Fatal("subscription not confirmed")
	}
	code, _, stderr := c.run(t, "", "release", "orders", "--force", "--key", "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"library   redisson lock", "protocol  redisson-unlock", "DELETE"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("plan lacks %q:\n%s", want, stderr)
		}
	}
	msg, ok := ps.ReceiveWithTimeout(5 * time.Second).(redis.Message)
	if !ok || string(msg.Data) != "0" {
		t.Fatalf("waiter got %#v, want the unlock message 0", msg)
	}
	for i := range c.servers {
		if n, _ := redis.Int(c.servers[i].Do("EXISTS", "orders")); n != 0 {
			t.Errorf("master %d still holds the lock", i)
		}
	}
	b, err := os.ReadFile(c.audit)
	if err != nil {
		t.Fatal(err)
	}
	var r admin.ActionResult // the outcome line, after the intent line
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Library != "redisson" || r.Protocol != "redisson-unlock" || r.Value != libsHolder || r.Done != 3 {
		t.Errorf("audit %+v, want library redisson, protocol redisson-unlock, value the holder, done 3", r)
	}
}

// The plan warns when the holder puts a deleted key back (RedLock.net, aioredlock).
func TestReleaseForceWarnsRecreate(t *testing.T) {
	c := newAdminCLI(t, 3)
	for i := range c.servers {
		c.set(t, i, "redlock:orders", "0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3")
	}
	code, _, stderr := c.run(t, "", "release", "redlock:orders", "--force", "--key", "--yes")
	if code != 0 || !strings.Contains(stderr, "WARNING   if the holder is RedLock.net") || !strings.Contains(stderr, "stop the holder's process") {
		t.Fatalf("exit %d, plan:\n%s", code, stderr)
	}
}

// release --value of another library's lock follows its protocol too: a
// python-redis-lock waiter blocked on the signal list wakes, and a wrong value deletes
// nothing.
func TestReleaseValuePythonRedisLock(t *testing.T) {
	c := newAdminCLI(t, 1)
	const id = "AAECAwQFBgcICQoLDA0ODxAR"
	if _, err := c.servers[0].Do("SET", "lock:report", id, "NX"); err != nil { // Lock.acquire, no expire
		t.Fatal(err)
	}
	code, _, stderr := c.run(t, "", "release", "lock:report", "--key", "--value", "BBECAwQFBgcICQoLDA0ODxAR")
	if code != 1 || c.get(t, 0, "lock:report") != id {
		t.Fatalf("wrong value: exit %d, lock %q: %s", code, c.get(t, 0, "lock:report"), stderr)
	}
	w, err := redis.Dial("tcp", c.servers[0].Addr, redis.DialPassword(adminTestPassword))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	woke := make(chan error, 1)
	go func() {
		_, err := redis.Values(w.Do("BLPOP", "lock-signal:report", 10))
		woke <- err
	}()
	for i := 0; ; i++ {
		info, _ := redis.String(c.servers[0].Do("INFO", "clients"))
		if strings.Contains(info, "blocked_clients:1") {
			break
		}
		if i > 500 {
			t.Fatal("the waiter never blocked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, _, stderr = c.run(t, "", "release", "lock:report", "--key", "--value", id)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the BLPOP waiter was not woken")
	}
	if v := c.get(t, 0, "lock:report"); v != "" {
		t.Errorf("lock still there: %q", v)
	}
}
