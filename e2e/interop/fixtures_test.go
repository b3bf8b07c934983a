package interop

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The values the replayed libraries generate, made the way their sources make them.

// uuid4 is java.util.UUID.randomUUID(), Python's uuid.uuid4(), .NET's Guid.NewGuid().
func uuid4() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// pyRedisLockID is python-redis-lock's b64encode(urandom(18)).
func pyRedisLockID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func nowMs() string { return fmt.Sprint(time.Now().UnixMilli()) }

// redissonVars are one Redisson client thread's: its connection manager id and thread id.
func redissonVars(name string, tid int) map[string]string {
	return map[string]string{"name": name, "uuid": uuid4(), "tid": fmt.Sprint(tid), "lease_ms": "30000",
		"now_ms": nowMs(), "request": strings.ReplaceAll(uuid4(), "-", "")}
}

// TestReplayFixturesNameTheirSource checks that every replayed script and replay file
// names the repository, file and commit it was copied from, and that every EVAL names
// a script that exists.
func TestReplayFixturesNameTheirSource(t *testing.T) {
	t.Parallel()
	libs, _ := filepath.Glob(filepath.Join(replayDir, "*.replay"))
	if len(libs) < 6 {
		t.Fatalf("want replay files for at least 6 libraries, found %d", len(libs))
	}
	commit := regexp.MustCompile(`(?m)^--   commit: [0-9a-f]{40}$`)
	scripts, _ := filepath.Glob(filepath.Join(replayDir, "*", "*.lua"))
	for _, s := range scripts {
		rel, _ := filepath.Rel(replayDir, s)
		if !commit.MatchString(luaScript(t, rel)) {
			t.Errorf("%s: no 40-hex commit line", rel)
		}
	}
	for _, l := range libs {
		lib := strings.TrimSuffix(filepath.Base(l), ".replay")
		for name, op := range loadReplay(t, lib) {
			if len(op.lines) == 0 {
				t.Errorf("%s op %s: no commands", lib, name)
			}
			for _, ln := range op.lines {
				if ln.args[0] == "EVAL" && strings.HasPrefix(ln.args[1], "@") {
					if _, err := os.Stat(filepath.Join(replayDir, ln.args[1][1:])); err != nil {
						t.Errorf("%s op %s: %v", lib, name, err)
					}
				}
			}
		}
	}
}

// TestReplayFixturesBehaveLikeTheirLibrary runs the replays against a real server
// without redlockctl: each library's own release must wake its own waiters, so that the
// tests below, which expect redlockctl to do the same, wait on the right channel or list.
func TestReplayFixturesBehaveLikeTheirLibrary(t *testing.T) {
	t.Parallel()
	ms, _ := masters(t, 1)
	s := ms[0]
	t.Run("redisson", func(t *testing.T) {
		ops := loadReplay(t, "redisson")
		for _, c := range []struct{ lock, wait, unlock, msg, name string }{
			{"lock", "wait", "unlock", "0", "orders"},
			{"lock", "wait", "unlock", "0", "{orders}:export"}, // a name with a hash tag gets no extra braces
			{"fair-lock", "fair-wait", "fair-unlock", "0", "fair"},
			{"write-lock", "write-wait", "write-unlock", "1", "rw"},
		} {
			holder, other := redissonVars(c.name, 1), redissonVars(c.name, 2)
			replay(t, s, ops, c.lock, holder)
			w := replay(t, s, ops, c.wait, other)[0]
			replay(t, s, ops, c.unlock, holder)
			if got := w.receive(t, 5*time.Second); got != c.msg {
				t.Errorf("%s: waiter got %q, want %q", c.unlock, got, c.msg)
			}
			w.close()
			mustDel(t, s, c.name, "redisson_lock_queue:{"+c.name+"}", "redisson_lock_timeout:{"+c.name+"}")
		}
		// A bare DEL publishes nothing: the waiter sleeps on.
		holder, other := redissonVars("bare", 1), redissonVars("bare", 2)
		replay(t, s, ops, "lock", holder)
		w := replay(t, s, ops, "wait", other)[0]
		mustDel(t, s, "bare")
		w.silent(t, time.Second)
		replay(t, s, ops, "fenced-lock", redissonVars("fenced", 1))
		replay(t, s, ops, "read-lock", redissonVars("rw2", 1))
	})
	t.Run("python-redis-lock", func(t *testing.T) {
		ops := loadReplay(t, "python-redis-lock")
		holder := map[string]string{"name": "reports", "id": pyRedisLockID(), "expire_s": "30"}
		replay(t, s, ops, "lock", holder)
		w := replay(t, s, ops, "wait", map[string]string{"name": "reports", "id": pyRedisLockID(), "expire_s": "30"})[0]
		replay(t, s, ops, "release", holder)
		if got := w.receive(t, 5*time.Second); got != "1" {
			t.Errorf("BLPOP waiter got %q after the library's release, want 1", got)
		}
	})
	t.Run("spring-integration", func(t *testing.T) {
		ops := loadReplay(t, "spring-integration")
		v := map[string]string{"registry": "orders-registry", "path": "invoice-7", "client": uuid4(), "other": uuid4(), "ttl_ms": "60000"}
		replay(t, s, ops, "lock", v)
		w := replay(t, s, ops, "wait", v)[0]
		replay(t, s, ops, "unlock", v)
		if got, want := w.receive(t, 5*time.Second), "orders-registry-channel:orders-registry:invoice-7=orders-registry:invoice-7"; got != want {
			t.Errorf("pattern waiter got %q, want %q", got, want)
		}
	})
	t.Run("redlock-net re-creates, pottery does not", func(t *testing.T) {
		net := map[string]string{"name": "billing", "guid": uuid4(), "ttl_ms": "30000"}
		ops := loadReplay(t, "redlock-net")
		replay(t, s, ops, "lock", net)
		mustDel(t, s, "redlock:billing")
		replay(t, s, ops, "extend", net) // => 1: the key is back
		if v, _ := redis.String(s.Do("GET", "redlock:billing")); v != net["guid"] {
			t.Errorf("RedLock.net extend after DEL: key holds %q, want it re-created with %q", v, net["guid"])
		}
		replay(t, s, ops, "unlock", net)
		pot := map[string]string{"name": "billing", "uuid": uuid4(), "ttl_ms": "30000"}
		ops = loadReplay(t, "pottery")
		replay(t, s, ops, "lock", pot)
		replay(t, s, ops, "extend", pot)
		replay(t, s, ops, "release", pot)
	})
	t.Run("shedlock", func(t *testing.T) {
		ops := loadReplay(t, "shedlock")
		v := shedlockVars()
		replay(t, s, ops, "lock", v)
		replay(t, s, ops, "unlock", v)
	})
}

func shedlockVars() map[string]string {
	return map[string]string{"env": "default", "name": "nightly-report", "host": "batch-host-3", "uuid": uuid4(),
		"added": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "ttl_ms": "60000"}
}

func mustDel(t *testing.T, s *redistest.Server, keys ...string) {
	t.Helper()
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	if _, err := s.Do("DEL", args...); err != nil {
		t.Fatal(err)
	}
}
