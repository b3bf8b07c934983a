package interop

import (
	"strings"
	"testing"
	"time"
)

// Real clients of further libraries: redis-semaphore, node-redis-warlock and
// simple-redis-mutex (npm), Symfony Lock and Semaphore (Debian's PHP packages). Their
// locks are named by the evidence their decoders need, sorted-set locks and semaphores
// are held rows, a library's bookkeeping key is no lock, and a force-release removes
// exactly the holder's member or value so that the library notices.

func otherClient(t *testing.T, mode, addrs, key string, extra ...string) (*client, string, string) {
	t.Helper()
	c := startClient(t, "node", append([]string{nodeDir + "/others.mjs", mode, "--addrs", addrs, "--key", key}, extra...)...)
	ev := c.next(t, "acquired", startup)
	return c, str(ev, "key"), str(ev, "value")
}

func phpClient(t *testing.T, mode, addrs, key string, extra ...string) *client {
	t.Helper()
	c := startClient(t, "php", append([]string{phpScript, mode, "--addrs", addrs, "--key", key}, extra...)...)
	c.next(t, "acquired", startup)
	return c
}

// phpLost closes a PHP client's stdin and checks that Symfony no longer believes it
// holds its lock.
func phpLost(t *testing.T, c *client) {
	t.Helper()
	c.stdin.Close()
	ev := c.next(t, "state", 10*time.Second)
	if ev["acquired"] != false {
		t.Errorf("%s: Symfony still believes it holds the lock after force-release: %v", c.name, ev)
	}
}

func TestOtherLibrariesOnOneMaster(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	mutex, mutexKey, mutexID := otherClient(t, "mutex", addrs, "orders", "--ttl", "4000")
	sem, semKey, semID := otherClient(t, "semaphore", addrs, "pool", "--ttl", "4000")
	_, warlockKey, _ := otherClient(t, "warlock", addrs, "report", "--ttl", "60000")
	_, simpleKey, _ := otherClient(t, "simple-mutex", addrs, "invoice", "--ttl", "60000")
	excl := phpClient(t, "exclusive", addrs, "php-orders")
	shared := phpClient(t, "shared", addrs, "php-doc")
	phpSem := phpClient(t, "semaphore", addrs, "php-pool")

	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump of healthy locks: exit %d, want 0\n%s", code, snap.rows())
	}
	for _, c := range []struct{ key, lib, kind string }{
		{mutexKey, "redis-semaphore", ""},
		{semKey, "redis-semaphore", "semaphore"},
		{warlockKey, "warlock", ""},
		{simpleKey, "simple-redis-mutex", ""},
		{"php-orders", "symfony-lock", "exclusive"},
		{"php-doc", "symfony-lock", "shared"},
		{"{php-pool}:time", "symfony-semaphore", "semaphore"},
	} {
		r := snap.find(t, c.key)
		if c.kind == "semaphore" { // a semaphore's state is its own, with its permits
			if r.Library != c.lib || r.State != "semaphore" || r.Holders != 1 || len(r.Anomalies) != 0 {
				t.Errorf("%s: library %q state %q holders %d anomalies %v, want %s, state semaphore, 1 holder, none\n%s",
					r.Key, r.Library, r.State, r.Holders, r.Anomalies, c.lib, r.Raw)
			}
		} else {
			held(t, r, c.lib, 1)
		}
		if r.Kind != c.kind {
			t.Errorf("%s: kind %q, want %q", c.key, r.Kind, c.kind)
		}
	}
	if r := snap.find(t, semKey); r.Value != semID {
		t.Errorf("%s: holder %q, want the client's identifier %q", semKey, r.Value, semID)
	}
	if r := snap.find(t, mutexKey); r.Value != mutexID {
		t.Errorf("%s: value %q, want %q", mutexKey, r.Value, mutexID)
	}
	if r := snap.find(t, "@simple-redis-mutex:fencing-tokens"); r.State != "bookkeeping" || r.Library != "simple-redis-mutex" || len(r.Anomalies) != 0 {
		t.Errorf("fencing counter: state %q library %q anomalies %v, want bookkeeping of simple-redis-mutex", r.State, r.Library, r.Anomalies)
	}
	if snap.has("{php-pool}:weight") {
		t.Error("Symfony's {php-pool}:weight has a row of its own: it belongs to {php-pool}:time")
	}

	t.Run("redis-semaphore notices", func(t *testing.T) {
		for _, c := range []struct {
			key string
			cl  *client
		}{{mutexKey, mutex}, {semKey, sem}} {
			out, a := forceRelease(t, addrs, c.key)
			if a.Library != "redis-semaphore" || a.Done != 1 {
				t.Errorf("%s audit: %+v\n%s", c.key, a, out)
			}
			c.cl.next(t, "lost", 10*time.Second)
		}
	})
	t.Run("Symfony notices", func(t *testing.T) {
		for key, c := range map[string]*client{"php-orders": excl, "php-doc": shared, "{php-pool}:time": phpSem} {
			out, a := forceRelease(t, addrs, key)
			if a.Protocol != "zrem" || a.Done != 1 {
				t.Errorf("%s audit: %+v, want protocol zrem done on 1\n%s", key, a, out)
			}
			if !strings.Contains(out, "ZREM") {
				t.Errorf("%s: the plan does not state the ZREM it sends:\n%s", key, out)
			}
			phpLost(t, c)
		}
		for _, k := range []string{"php-orders", "php-doc", "{php-pool}:time", "{php-pool}:weight"} {
			if n, _ := ms[0].Do("EXISTS", k); n.(int64) != 0 {
				t.Errorf("%s still exists after force-release", k)
			}
		}
	})
}
