package interop

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/export"
)

// Lock scope with real clients: a single-instance lock (redis-py, a Redisson RLock,
// rueidislock, redis-semaphore's Mutex and Semaphore) is judged on its own master,
// never partial or split; a lock its library wrote on several masters (RedissonRedLock,
// RedlockMutex, RedlockSemaphore) is judged by the quorum; a semaphore is in state
// semaphore with its permits.

// single checks that row r is a healthy single-instance lock of lib on the masters on.
func single(t *testing.T, r resource, lib string, on ...string) {
	t.Helper()
	if r.Library != lib || r.State != "held" || r.Scope != "single" || !slices.Equal(r.Instances, on) || len(r.Anomalies) != 0 {
		t.Errorf("%s: library %q state %q scope %q on %v anomalies %v, want %s held, scope single on %v, none\n%s",
			r.Key, r.Library, r.State, r.Scope, r.Instances, r.Anomalies, lib, on, r.Raw)
	}
}

// TestRedisPyLockOnOneOfFive: a real redis-py Lock on m3 of five masters is held there,
// single-instance, and dump exits 0: the other four masters are no missing quorum.
func TestRedisPyLockOnOneOfFive(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 5)
	py := pyClient(t, "hold", ms[2].Addr, "py:one-of-five", "--timeout", "60")
	value := str(py.next(t, "acquired", startup), "value")

	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump: exit %d, want 0 (a healthy single-instance lock)\n%s", code, snap.rows())
	}
	r := snap.find(t, "py:one-of-five")
	single(t, r, "redis-py?", "m3")
	if r.Value != value || r.Holders != 1 {
		t.Errorf("value %q holders %d, want the client's %q on 1", r.Value, r.Holders, value)
	}
}

// TestTwoRedisPyLocksOneName: two services take redis-py locks of one name on two
// masters (m1 and m4, two owners). dump shows one held single-instance row on both,
// no split; serve's real /metrics exports it as scope="single", and the scraped series,
// fed to promtool with the shipped rules, fire neither RedlockSplitLock nor
// RedlockLockWithoutTTL.
func TestTwoRedisPyLocksOneName(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 5)
	a := pyClient(t, "hold", ms[0].Addr, "py:shared", "--timeout", "120")
	va := str(a.next(t, "acquired", startup), "value")
	b := pyClient(t, "hold", ms[3].Addr, "py:shared", "--timeout", "120")
	vb := str(b.next(t, "acquired", startup), "value")
	if va == vb {
		t.Fatalf("two redis-py clients wrote one value %q", va)
	}

	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump: exit %d, want 0\n%s", code, snap.rows())
	}
	single(t, snap.find(t, "py:shared"), "redis-py?", "m1", "m4")

	config, _ := writeConfig(t, addrs)
	series := scrapeLocks(t, config, `redlockctl_locks{scope="single",state="held"} 1`)
	for _, want := range []string{`redlockctl_locks{scope="redlock",state="split"} 0`, `redlockctl_locks{scope="redlock",state="partial"} 0`} {
		if !slices.Contains(series, want) {
			t.Errorf("serve's /metrics lacks %s:\n%s", want, strings.Join(series, "\n"))
		}
	}
	promtoolQuiet(t, series, "RedlockSplitLock", "RedlockLockWithoutTTL")
}

// scrapeLocks runs `serve` with config until its /metrics shows want, and returns the
// redlockctl_locks series it scraped ("name{labels} value").
func scrapeLocks(t *testing.T, config, want string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, redlockctl, "serve", "--config", config, "--listen", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`serving http://([0-9.:]+)/metrics`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/metrics"
	case <-time.After(startup):
		t.Fatal("serve printed no listening address")
	}
	var series []string
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := client.Get(url)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		series = series[:0]
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "redlockctl_locks{") {
				series = append(series, line)
			}
		}
		if slices.Contains(series, want) {
			return series
		}
	}
	t.Fatalf("serve's /metrics never showed %s; last redlockctl_locks:\n%s", want, strings.Join(series, "\n"))
	return nil
}

// promtoolQuiet feeds the scraped series, held for ten minutes, to promtool's rule unit
// test with the shipped alert rules, and fails unless none of alerts fires.
func promtoolQuiet(t *testing.T, series []string, alerts ...string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run `make deps` (Debian package prometheus)")
	}
	var b strings.Builder
	b.WriteString("rule_files: [alerts.yml]\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n    input_series:\n")
	for _, s := range series {
		name, value, _ := strings.Cut(s, "} ")
		fmt.Fprintf(&b, "      - series: %s\n        values: '%sx40'\n", strconv.Quote(name+"}"), value)
	}
	b.WriteString("    alert_rule_test:\n")
	for _, a := range alerts {
		fmt.Fprintf(&b, "      - eval_time: 10m\n        alertname: %s\n        exp_alerts: []\n", a)
	}
	dir := t.TempDir()
	for name, content := range map[string][]byte{"alerts.yml": export.Alerts(), "scraped_test.yml": []byte(b.String())} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "test", "rules", "scraped_test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool test rules on the scraped series: %v\n%s\n%s", err, out, b.String())
	}
}

// TestRedissonLockScope: a Redisson RLock (replayed by value from its Lua) on one
// master of five is a single-instance lock; the same holder's lock on three of five,
// as RedissonRedLock takes it when its RLocks share one Redisson client id, is one
// multi-master lock, held by the quorum.
//
// A RedissonRedLock over independent masters usually has one Redisson client (and so
// one client id) per master: its holders then differ, and no decoder can tell it from
// independent RLocks; [[inspect.scopes]] is the operator's way to say so.
func TestRedissonLockScope(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 5)
	red := loadReplay(t, "redisson")
	one, multi := redissonVars("rs:one", 1), redissonVars("rs:multi", 7)
	replay(t, ms[1], red, "lock", one)
	for _, s := range ms[:3] {
		replay(t, s, red, "lock", multi)
	}
	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump: exit %d, want 0\n%s", code, snap.rows())
	}
	single(t, snap.find(t, "rs:one"), "redisson", "m2")
	r := snap.find(t, "rs:multi")
	held(t, r, "redisson", 3)
	if r.Scope != "redlock" || len(r.Instances) != 0 || !strings.Contains(r.Owner, multi["uuid"]+":7") {
		t.Errorf("rs:multi: scope %q instances %v owner %q, want redlock (the quorum's lock) held by %s:7", r.Scope, r.Instances, r.Owner, multi["uuid"])
	}
}

// TestRedisSemaphoreScope: redis-semaphore's real clients on five masters. Semaphore
// and Mutex on one master are single-instance; RedlockSemaphore and RedlockMutex on
// all five are judged by the quorum; both semaphores are in state semaphore with their
// permits, never split or partial, and dump exits 0.
func TestRedisSemaphoreScope(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 5)
	_, semKey, semID := otherClient(t, "semaphore", ms[4].Addr, "sc-pool", "--ttl", "30000", "--limit", "3")
	_, rsemKey, rsemID := otherClient(t, "redlock-semaphore", addrs, "sc-fleet", "--ttl", "30000", "--limit", "3")
	_, mutexKey, _ := otherClient(t, "mutex", ms[4].Addr, "sc-orders", "--ttl", "30000")
	_, rmutexKey, _ := otherClient(t, "redlock-mutex", addrs, "sc-invoices", "--ttl", "30000")

	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump: exit %d, want 0\n%s", code, snap.rows())
	}
	for _, c := range []struct {
		key, id, scope string
		holders        int
	}{{semKey, semID, "single", 1}, {rsemKey, rsemID, "redlock", 5}} {
		r := snap.find(t, c.key)
		if r.Library != "redis-semaphore" || r.State != "semaphore" || r.Scope != c.scope || r.Permits != 1 || r.Holders != c.holders || r.Value != c.id || len(r.Anomalies) != 0 {
			t.Errorf("%s: library %q state %q scope %q permits %d holders %d value %q anomalies %v, want redis-semaphore, semaphore, %s, 1 permit held by %q on %d\n%s",
				c.key, r.Library, r.State, r.Scope, r.Permits, r.Holders, r.Value, r.Anomalies, c.scope, c.id, c.holders, r.Raw)
		}
	}
	single(t, snap.find(t, mutexKey), "redis-semaphore", "m5")
	r := snap.find(t, rmutexKey)
	held(t, r, "redis-semaphore", 5)
	if r.Scope != "redlock" {
		t.Errorf("%s: scope %q, want redlock (RedlockMutex)", rmutexKey, r.Scope)
	}
}

// TestRueidislockScope: rueidis' rueidislock (the real Go client) locks a name on one
// master of three through its three keys rueidislock:<i>:<name>, one value on each:
// three single-instance rows on m2, named rueidislock and noted as one lock, exit 0.
// Deleting two of the keys (a majority) with redlockctl's force-release makes the
// holder give the lock up.
func TestRueidislockScope(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 3)
	c := startClient(t, goClient, "rueidislock", "-addrs", ms[1].Addr, "-key", "rd:report", "-ttl", "4s")
	c.next(t, "acquired", startup)
	if v, err := redis.String(ms[1].Do("GET", "rueidislock:0:rd:report")); err != nil || len(v) != 24 {
		t.Fatalf("rueidislock:0:rd:report holds %q (%v), want 24 bytes", v, err)
	}
	code, snap := dump(t, addrs)
	if code != 0 {
		t.Errorf("dump: exit %d, want 0\n%s", code, snap.rows())
	}
	value := snap.find(t, "rueidislock:0:rd:report").Value // JSON's form of the 24 bytes
	for i := range 3 {
		r := snap.find(t, fmt.Sprintf("rueidislock:%d:rd:report", i))
		single(t, r, "rueidislock", "m2")
		if r.Value != value || !strings.Contains(r.Evidence, "the same value holds 3 keys") {
			t.Errorf("%s: value %q evidence %q, want key 0's value %q, noted as one lock on 3 keys", r.Key, r.Value, r.Evidence, value)
		}
	}
	for i := range 2 {
		if _, a := forceRelease(t, addrs, fmt.Sprintf("rueidislock:%d:rd:report", i)); a.Done != 1 || a.Library != "rueidislock" {
			t.Errorf("force-release of key %d: audit %+v, want rueidislock done on 1 master", i, a)
		}
	}
	c.next(t, "lost", 10*time.Second)
}

// writeStats are the commands that change a key, as INFO commandstats names them.
var writeStats = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "del", "unlink", "set", "publish", "spublish", "zrem", "lpush", "pexpire"}

// TestForceReleaseSingleTouchesOneMaster: `release --force` of a real redis-py lock on
// m3 of five sends its compare-and-delete to m3 alone: INFO commandstats before and
// after shows no write command on any other master, the plan says each of them is
// untouched, and the redis-py holder finds its lock gone.
func TestForceReleaseSingleTouchesOneMaster(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 5)
	py := pyClient(t, "hold", ms[2].Addr, "py:force", "--timeout", "60")
	py.next(t, "acquired", startup)
	before := make([]map[string]int, len(ms))
	for i, s := range ms {
		before[i] = s.CommandCalls(t)
	}
	out, a := forceRelease(t, addrs, "py:force")
	if a.Done != 1 || !strings.Contains(out, "done on 1/1 of its own masters") || !strings.Contains(out, "4 other masters untouched") {
		t.Errorf("audit: %+v, want done on 1 master; output must say done on its own master, 4 untouched\n%s", a, out)
	}
	for i, s := range ms {
		after := s.CommandCalls(t)
		var wrote []string
		for _, c := range writeStats {
			if n := after[c] - before[i][c]; n > 0 {
				wrote = append(wrote, fmt.Sprintf("%s×%d", c, n))
			}
		}
		name := fmt.Sprintf("m%d", i+1)
		switch {
		case i == 2 && len(wrote) == 0:
			t.Errorf("m3 (the lock's master) saw no write: the force-release never reached it")
		case i != 2 && len(wrote) > 0:
			t.Errorf("%s saw %v: a single-instance force-release must touch its own master only", name, wrote)
		}
		if line := planLine(out, name); i != 2 && !strings.Contains(line, "untouched") {
			t.Errorf("the plan's line for %s does not say untouched: %q\n%s", name, line, out)
		}
	}
	if n, _ := redis.Int(ms[2].Do("EXISTS", "py:force")); n != 0 {
		t.Error("py:force still exists on m3 after force-release")
	}
	py.stdin.Close()
	py.next(t, "release-failed", 5*time.Second)
}

// planLine returns the plan's line for master name.
func planLine(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return line
		}
	}
	return ""
}

// TestRedissonSemaphores: Redisson's RPermitExpirableSemaphore, replayed by value from
// its Lua (trySetPermits of 3, tryAcquire of one permit with a lease), is named by its
// {name}:timeout set: state semaphore with one permit, single-instance on its master,
// no finding for the set's missing TTL (the permit has a lease), and its name's count
// (2, what the acquire left) on its row as available_permits, not a row of its own:
// dump exits 0. A plain RSemaphore (trySetPermits, tryAcquire, release) writes only an
// integer, which is never named: an unknown row without TTL, and dump exits 3.
func TestRedissonSemaphores(t *testing.T) {
	t.Parallel()
	ms, addrs := masters(t, 3)
	ops := loadReplay(t, "redisson-semaphore")
	now := time.Now()
	permit := string(randomBytes(16))
	replay(t, ms[0], ops, "permit-acquire", map[string]string{"name": "pool", "permits": "3", "permit": permit,
		"expiry_ms": strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10), "now_ms": strconv.FormatInt(now.UnixMilli(), 10)})

	code, snap := dump(t, addrs)
	r := snap.find(t, "{pool}:timeout")
	if r.Library != "redisson" || r.Kind != "permit-expirable-semaphore" || r.State != "semaphore" || r.Permits != 1 ||
		r.Available == nil || *r.Available != 2 || r.Scope != "single" || !slices.Equal(r.Instances, []string{"m1"}) || len(r.Anomalies) != 0 {
		t.Errorf("{pool}:timeout: library %q kind %q state %q permits %d available %v scope %q on %v anomalies %v, want a redisson permit-expirable-semaphore holding 1 permit, 2 available, single on m1, none\n%s",
			r.Library, r.Kind, r.State, r.Permits, r.Available, r.Scope, r.Instances, r.Anomalies, r.Raw)
	}
	for _, r := range snap.Resources {
		if r.Key == "pool" {
			t.Errorf("pool (the semaphore's permit count) has a row of its own: %s %s %v", r.State, r.Library, r.Anomalies)
		}
	}
	if code != 0 {
		t.Errorf("dump exit %d on a healthy Redisson permit-expirable semaphore, want 0\n%s", code, snap.rows())
	}

	plain := map[string]string{"name": "plain", "permits": "1"}
	replay(t, ms[0], ops, "set-permits", map[string]string{"name": "plain", "permits": "2"})
	replay(t, ms[0], ops, "semaphore-acquire", plain)
	code, snap = dump(t, addrs)
	if r := snap.find(t, "plain"); r.Library != "unknown" || r.State != "no-ttl" || r.Value != "1" || code != 3 {
		t.Errorf("plain (an RSemaphore's count after tryAcquire): library %q state %q value %q, dump exit %d; want unknown no-ttl 1, exit 3", r.Library, r.State, r.Value, code)
	}
	w := replay(t, ms[0], ops, "semaphore-release", plain)
	if got := w[0].receive(t, 5*time.Second); got != "2" {
		t.Errorf("release published %q on redisson_sc:{plain}, want the new count 2", got)
	}
	if _, snap = dump(t, addrs); snap.find(t, "plain").Library != "unknown" {
		t.Errorf("plain after release: library %q, want unknown", snap.find(t, "plain").Library)
	}
}

// randomBytes returns n random bytes, as Redisson's ServiceManager.generateIdArray does.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
