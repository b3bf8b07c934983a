package interop

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

var update = flag.Bool("update", false, "rewrite inspect/locks/testdata/real-values.json from the real clients")

// realValuesPath is the fixture of real values, beside the decoders that its test
// (inspect/locks/realvalues_test.go) runs one by one.
const realValuesPath = "../../inspect/locks/testdata/real-values.json"

// RealValues is the fixture: every key the interop suite's clients and replays left
// on one master while holding their locks, as the poller reads them.
type RealValues struct {
	About    string      `json:"about"`
	Captured time.Time   `json:"captured"`
	Entries  []RealValue `json:"entries"`
}

// RealValue is one key: what wrote it and what it holds.
type RealValue struct {
	Library string `json:"library"`
	// Named: the decoders have the evidence to name the library; otherwise only the
	// value's shape, and the library must be a candidate of a guess.
	Named  bool   `json:"named"`
	Role   string `json:"role"` // "lock", "companion" (of Lock) or "bookkeeping"
	Lock   string `json:"lock,omitempty"`
	Source string `json:"source"`
	locks.Entry
}

// written is what the test expects of a lock key it had a client take.
type written struct {
	lib    string
	named  bool
	source string
}

// TestPrecisionRealValues: the real clients and replays take their locks on one
// master; every key they leave there is read as the poller reads it, and its own
// decoder must name it (or guess it, for libraries known by a value's shape only);
// companion and bookkeeping keys must be known as such. The values are the fixture of
// inspect/locks's TestRealValuesPrecision, which holds every other decoder to never
// claim them: -update rewrites it; otherwise the fixture must list the same keys.
func TestPrecisionRealValues(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 1)
	s := ms[0]
	want := map[string]written{}
	took := func(key, lib string, named bool, source string) { want[key] = written{lib, named, source} }

	goSrc := "real client, e2e/interop/testdata/go (versions in its go.mod)"
	nodeSrc := "real client, e2e/interop/testdata/node (versions in its package-lock.json)"
	redsyncClient(t, addrs, "p:redsync")
	took("p:redsync", locks.Redsync, false, "go-redsync/redsync, "+goSrc)
	bsm := startClient(t, goClient, "redislock", "-addrs", s.Addr, "-key", "p:bsm", "-ttl", "60s", "-metadata", "worker-9")
	bsm.next(t, "acquired", startup)
	took("p:bsm", locks.BsmRedislock, false, "bsm/redislock with metadata, "+goSrc)
	nodeClient(t, "acquire", addrs, "p:node", "--ttl", "60000")
	took("p:node", locks.NodeRedlock, false, "node-redlock, "+nodeSrc)
	py := pyClient(t, "hold", s.Addr, "p:redis-py", "--timeout", "60")
	py.next(t, "acquired", startup)
	took("p:redis-py", locks.RedisPy, false, "redis-py Lock, real client, e2e/interop/testdata/python/lock.py (Debian python3-redis)")
	for _, c := range []struct{ mode, name, lib string }{
		{"mutex", "p-orders", locks.RedisSemaphore},
		{"semaphore", "p-pool", locks.RedisSemaphore},
		{"warlock", "p-report", locks.Warlock},
		{"simple-mutex", "p-invoice", locks.SimpleRedisMutex},
	} {
		_, key, _ := otherClient(t, c.mode, addrs, c.name, "--ttl", "60000")
		took(key, c.lib, true, c.lib+" "+c.mode+", "+nodeSrc)
	}
	phpSrc := "real client, e2e/interop/testdata/php/lock.php (Debian php-symfony-lock and php-symfony-semaphore)"
	phpClient(t, "exclusive", addrs, "p-php-orders")
	took("p-php-orders", locks.SymfonyLock, true, "Symfony Lock exclusive, "+phpSrc)
	phpClient(t, "shared", addrs, "p-php-doc")
	took("p-php-doc", locks.SymfonyLock, true, "Symfony Lock shared, "+phpSrc)
	phpClient(t, "semaphore", addrs, "p-php-pool")
	took("{p-php-pool}:time", locks.SymfonySemaphore, true, "Symfony Semaphore, "+phpSrc)
	if code, out, errOut := cli(t, "acquire", "p:redlockctl", "--ttl", "60s", "--owner", "ops@batch-3", "--masters", addrs); code != 0 {
		t.Fatalf("redlockctl acquire: exit %d\n%s%s", code, out, errOut)
	}
	took("p:redlockctl", locks.Redlockctl, true, "redlockctl acquire (this project's binary)")

	red := loadReplay(t, "redisson")
	for op, name := range map[string]string{"lock": "p:redisson", "fair-lock": "p:fair", "read-lock": "p:rw", "fenced-lock": "p:fenced"} {
		replay(t, s, red, op, redissonVars(name, 1))
		took(name, locks.Redisson, true, "Redisson "+op+", replay of "+replaySource(t, "redisson"))
	}
	replay(t, s, red, "fair-wait", redissonVars("p:fair", 2))
	replay(t, s, loadReplay(t, "python-redis-lock"), "lock", map[string]string{"name": "p", "id": pyRedisLockID(), "expire_s": "60"})
	took("lock:p", locks.PythonRedisLock, true, "replay of "+replaySource(t, "python-redis-lock"))
	replay(t, s, loadReplay(t, "redlock-net"), "lock", map[string]string{"name": "p-net", "guid": uuid4(), "ttl_ms": "60000"})
	took("redlock:p-net", locks.RedlockNet, false, "replay of "+replaySource(t, "redlock-net"))
	replay(t, s, loadReplay(t, "pottery"), "lock", map[string]string{"name": "p-pottery", "uuid": uuid4(), "ttl_ms": "60000"})
	took("redlock:p-pottery", locks.Pottery, false, "replay of "+replaySource(t, "pottery"))
	replay(t, s, loadReplay(t, "spring-integration"), "lock", map[string]string{"registry": "p-registry", "path": "invoice-7", "client": uuid4(), "ttl_ms": "60000"})
	took("p-registry:invoice-7", locks.SpringIntegration, false, "replay of "+replaySource(t, "spring-integration"))
	replay(t, s, loadReplay(t, "shedlock"), "lock", shedlockVars())
	took("job-lock:default:nightly-report", locks.ShedLock, true, "replay of "+replaySource(t, "shedlock"))

	now := time.Now()
	entries := readAll(t, s)
	got := RealValues{
		About: "Keys and values written by other libraries' real clients (or replays of their own scripts and commands) " +
			"on a real redis-server while holding their locks, as the poller reads them. Generated by " +
			"`go test ./e2e/interop -run TestPrecisionRealValues -update`; source says where each came from. " +
			"inspect/locks/realvalues_test.go decodes each with every decoder.",
		Captured: now.UTC().Truncate(time.Second),
	}
	for _, e := range entries {
		got.Entries = append(got.Entries, classify(t, e, want))
	}
	for key := range want {
		if !slices.ContainsFunc(got.Entries, func(r RealValue) bool { return r.Key == key }) {
			t.Errorf("%s: the client took it, but the master does not hold it", key)
		}
	}
	checkLive(t, got, now)
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(realValuesPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	checkFixture(t, got)
}

// classify says what wrote e: a lock a client took, a companion of one, or a
// library's bookkeeping key; any other key fails the test.
func classify(t *testing.T, e locks.Entry, want map[string]written) RealValue {
	t.Helper()
	if w, ok := want[e.Key]; ok {
		return RealValue{Library: w.lib, Named: w.named, Role: "lock", Source: w.source, Entry: e}
	}
	if b, ok := locks.BookkeepingOf(e.Key, e.Type, e.Value); ok {
		return RealValue{Library: b.Library, Named: true, Role: "bookkeeping", Source: "beside " + b.Library + "'s lock: " + b.Role, Entry: e}
	}
	if lockKeys, role, ok := locks.CompanionOf(e.Key); ok {
		for _, k := range lockKeys {
			if w, ok := want[k]; ok {
				return RealValue{Library: w.lib, Named: true, Role: "companion", Lock: k, Source: role + " of " + k + ", " + w.source, Entry: e}
			}
		}
	}
	t.Errorf("%s (%s): a key no client took, known neither as a companion nor as bookkeeping", e.Key, e.Type)
	return RealValue{Role: "unknown", Entry: e}
}

// checkLive decodes every lock as dump does: its own library named, or guessed among
// the candidates for a value shape alone, or unknown for a UUIDv4 (a shape many
// libraries write); and no other library named.
func checkLive(t *testing.T, rv RealValues, now time.Time) {
	t.Helper()
	related := map[string]locks.Entry{}
	for _, r := range rv.Entries {
		related[r.Key] = r.Entry
	}
	for _, r := range rv.Entries {
		if r.Role != "lock" {
			continue
		}
		l := locks.Decode(r.Entry, related, now)
		switch {
		case r.Named && l.Library == r.Library && l.Holder != "":
		case !r.Named && l.Library == locks.Unknown && slices.Contains(l.Candidates, r.Library):
		case !r.Named && l.Library == locks.Unknown && len(l.Candidates) == 0 && l.Evidence == locks.EvidenceUUID4:
		default:
			t.Errorf("%s, written by %s (named %v): decoded as %s (%s)", r.Key, r.Library, r.Named, l.Label(), l.Evidence)
		}
	}
}

// checkFixture fails when the fixture does not list the keys the clients wrote now.
func checkFixture(t *testing.T, got RealValues) {
	t.Helper()
	b, err := os.ReadFile(realValuesPath)
	if err != nil {
		t.Fatalf("%s: %v (go test ./e2e/interop -run TestPrecisionRealValues -update writes it)", realValuesPath, err)
	}
	var fixture RealValues
	if err := json.Unmarshal(b, &fixture); err != nil {
		t.Fatalf("%s: %v", realValuesPath, err)
	}
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	shape := func(rv RealValues) []string {
		var s []string
		for _, r := range rv.Entries {
			key := uuid.ReplaceAllString(r.Key, "<uuid>") // a Redisson client's id
			s = append(s, fmt.Sprintf("%s %s %s %s", key, r.Type, r.Library, r.Role))
		}
		slices.Sort(s)
		return s
	}
	if g, f := shape(got), shape(fixture); !slices.Equal(g, f) {
		t.Errorf("%s is stale: rerun with -update.\nclients wrote:\n  %s\nfixture lists:\n  %s", realValuesPath, strings.Join(g, "\n  "), strings.Join(f, "\n  "))
	}
}

// readAll reads every key of s as the poller does: type, PTTL and content.
func readAll(t *testing.T, s *redistest.Server) []locks.Entry {
	t.Helper()
	keys, err := redis.Strings(s.Do("KEYS", "*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var out []locks.Entry
	for _, k := range keys {
		e := locks.Entry{Key: k}
		if e.Type, err = redis.String(s.Do("TYPE", k)); err != nil {
			t.Fatal(err)
		}
		if e.PTTLMs, err = redis.Int64(s.Do("PTTL", k)); err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case locks.TypeString:
			e.Value, err = redis.String(s.Do("GET", k))
		case locks.TypeHash:
			e.Fields, err = redis.StringMap(s.Do("HGETALL", k))
		case locks.TypeList:
			e.Items, err = redis.Strings(s.Do("LRANGE", k, 0, -1))
		case locks.TypeZSet:
			var vs []string
			vs, err = redis.Strings(s.Do("ZRANGE", k, 0, -1, "WITHSCORES"))
			for i := 0; err == nil && i+1 < len(vs); i += 2 {
				var f float64
				f, err = strconv.ParseFloat(vs[i+1], 64)
				e.Items, e.Scores = append(e.Items, vs[i]), append(e.Scores, f)
			}
		}
		if err == nil && e.PTTLMs == -2 {
			continue // gone meanwhile (Symfony's 1 ms probe)
		}
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out = append(out, e)
	}
	return out
}

// replaySource is the "source" line of a replay file: repository, path and commit.
func replaySource(t *testing.T, lib string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "replay", lib+".replay"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if src, ok := strings.CutPrefix(sc.Text(), "source "); ok {
			return src
		}
	}
	t.Fatalf("%s.replay names no source", lib)
	return ""
}
