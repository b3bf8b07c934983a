package demo

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
)

// demoGoroutines counts goroutines running demo or miniredis code.
func demoGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var hits []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "inspect/demo.(*") || strings.Contains(g, "alicebob/miniredis") {
			n++
			hits = append(hits, g)
		}
	}
	return n, strings.Join(hits, "\n\n")
}

// eventually polls cond for up to a second.
func eventually(cond func() bool) bool {
	for i := 0; i < 200; i++ {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

func pools(t *testing.T, w *World) []*redis.Pool {
	t.Helper()
	cfg := w.Config("")
	ps, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range ps {
			p.Close()
		}
	})
	return ps
}

// The redlock library's commands and scripts (SET NX PX, EVALSHA/EVAL with GET, DEL,
// PEXPIRE, EXISTS, the fenced script) work on the embedded masters.
func TestRedlockWorksOnDemoMasters(t *testing.T) {
	w, err := Start(Options{Masters: 3, Clients: 1, Seed: 1, DownAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ps := pools(t, w)
	ctx := context.Background()
	for _, fenced := range []bool{false, true} {
		opts := []redlock.Option{redlock.WithRetries(0), redlock.WithOwner("demo-test"), redlock.WithNodeTimeout(200 * time.Millisecond)}
		if fenced {
			opts = append(opts, redlock.WithFencing())
		}
		c, err := redlock.New(ps, opts...)
		if err != nil {
			t.Fatal(err)
		}
		res := "demo-test:" + map[bool]string{false: "plain", true: "fenced"}[fenced]
		l, err := c.Acquire(ctx, res, 2*time.Second)
		if err != nil {
			t.Fatalf("fenced=%v acquire: %v", fenced, err)
		}
		if fenced && l.Token() < 1 {
			t.Fatalf("fenced acquire gave token %d", l.Token())
		}
		if _, err := c.Acquire(ctx, res, 2*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("fenced=%v second acquire: %v, want ErrNotAcquired", fenced, err)
		}
		if err := c.Extend(ctx, l, 5*time.Second); err != nil {
			t.Fatalf("fenced=%v extend: %v", fenced, err)
		}
		// Extend returns once a quorum extended; a straggler's PEXPIRE lands just after.
		if !eventually(func() bool { return w.masters[0].mr.TTL(l.Key()) > 3*time.Second }) {
			t.Fatalf("fenced=%v PTTL after extend: %v", fenced, w.masters[0].mr.TTL(l.Key()))
		}
		r, err := c.ExtendValue(ctx, res, l.Value(), 5*time.Second)
		if err != nil || r.Count(redlock.OK) != 3 {
			t.Fatalf("fenced=%v extend-value: %v %+v", fenced, err, r)
		}
		if err := c.Release(ctx, l); err != nil {
			t.Fatalf("fenced=%v release: %v", fenced, err)
		}
		// Release returns once a quorum confirmed; a straggler's delete lands just after.
		if !eventually(func() bool { return !w.masters[0].mr.Exists(l.Key()) }) {
			t.Fatalf("fenced=%v: key still there after release", fenced)
		}
		w.masters[0].mr.Set(l.Key(), "x#1")
		if r, err := c.ReleaseValue(ctx, res, "x#1"); err != nil || r.Count(redlock.OK) != 1 || r.Count(redlock.Absent) != 2 {
			t.Fatalf("fenced=%v release-value: %v %+v", fenced, err, r)
		}
		w.masters[1].mr.Set(l.Key(), "y#1")
		if r, err := c.Delete(ctx, res); err != nil || r.Count(redlock.OK) != 1 {
			t.Fatalf("fenced=%v delete: %v %+v", fenced, err, r)
		}
		c.Close()
	}
}

func TestWorldClocksExpiryAndCleanStop(t *testing.T) {
	before, _ := demoGoroutines()
	w, err := Start(Options{Masters: 5, Clients: 4, Seed: 7, FastRate: 1.5, Offset: 2 * time.Second, DownAfter: 600 * time.Millisecond, DownFor: 500 * time.Millisecond, DownEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	m0, fast, off := w.masters[0], w.masters[1], w.masters[2]
	m0.mr.Set("expiring", "v")
	m0.mr.SetTTL("expiring", 200*time.Millisecond)
	fast.mr.Set("expiring", "v")
	fast.mr.SetTTL("expiring", 900*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	if m0.mr.Exists("expiring") {
		t.Error("a key with a 200ms TTL is still there after 400ms: the clock does not drive expiry")
	}
	ps := pools(t, w)
	tm := func(i int) time.Time {
		c := ps[i].Get()
		defer c.Close()
		v, err := redis.Int64s(c.Do("TIME"))
		if err != nil {
			t.Fatalf("TIME on master %d: %v", i, err)
		}
		return time.Unix(v[0], v[1]*1000)
	}
	if d := tm(2).Sub(tm(0)); d < 1500*time.Millisecond {
		t.Errorf("offset master is %v ahead, want about %v", d, off.offset)
	}
	time.Sleep(400 * time.Millisecond)
	if d := tm(1).Sub(tm(0)); d < 200*time.Millisecond {
		t.Errorf("fast master (1.5x) is only %v ahead after 800ms", d)
	}
	if fast.mr.Exists("expiring") {
		t.Error("on the 1.5x master a 900ms key outlived 800ms of real time")
	}
	// The flaky master goes down at 600ms and comes back empty at 1.1s.
	if up := w.Up(); up[4] {
		t.Errorf("flaky master up at 800ms: %v", up)
	}
	c := ps[4].Get()
	_, err = c.Do("PING")
	c.Close()
	if err == nil {
		t.Error("the down master answered PING")
	}
	time.Sleep(800 * time.Millisecond)
	if up := w.Up(); !up[4] {
		t.Errorf("flaky master still down after its outage: %v", up)
	}
	c = ps[4].Get()
	uptime, err := redis.String(c.Do("INFO", "server"))
	c.Close()
	if err != nil || !strings.Contains(uptime, "uptime_in_seconds:0") {
		t.Errorf("restarted master INFO server: %v %q", err, uptime)
	}
	// The simulated clients hold locks on the masters.
	held := 0
	for _, r := range Resources {
		if len(w.masters[0].mr.Keys()) > 0 && w.masters[0].mr.Exists(r) {
			held++
		}
	}
	if held == 0 {
		t.Errorf("no resource held on m1 after 2s; keys: %v", w.masters[0].mr.Keys())
	}
	w.Stop()
	w.Stop() // idempotent
	var after int
	var stacks string
	for i := 0; i < 50; i++ { // closed connections wind down asynchronously
		if after, stacks = demoGoroutines(); after <= before {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after > before {
		t.Fatalf("%d demo goroutines left after Stop (before: %d):\n%s", after, before, stacks)
	}
}

func TestWorldRejectsTooManyMasters(t *testing.T) {
	if _, err := Start(Options{Masters: MaxMasters + 1}); err == nil {
		t.Fatal("Start accepted more than MaxMasters masters")
	}
}

// Where redis-server is installed the masters are real servers (so that CLIENT
// TRACKING works for the live feed): locks taken through the library land there, the
// flaky master comes back empty on its port, and Stop kills every server and removes
// their private directory.
func TestWorldOnRedisServers(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is needed (make deps installs it)")
	}
	w, err := Start(Options{Masters: 3, Clients: 2, Seed: 1, RedisServer: bin, DownAfter: 1500 * time.Millisecond, DownFor: 500 * time.Millisecond, DownEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	dir := w.dir
	if !w.Real() || dir == "" {
		t.Fatalf("not on redis-server: %+v", w.opts)
	}
	ps := pools(t, w)
	c, err := redlock.New(ps, redlock.WithRestartGuard(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Acquire(context.Background(), "real:one", 10*time.Second); err != nil {
		t.Fatalf("acquire on the demo's redis-servers: %v", err)
	}
	for i, p := range ps {
		conn := p.Get()
		info, err := redis.String(conn.Do("INFO", "server"))
		tracking, terr := conn.Do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "real:")
		conn.Close()
		if err != nil || !strings.Contains(info, "redis_version:") || strings.Contains(info, "miniredis") || terr != nil || tracking != "OK" {
			t.Errorf("master %d is not a redis-server with CLIENT TRACKING: %v %v %v", i, err, terr, tracking)
		}
	}
	// The flaky master (the last) goes down and comes back empty on its port.
	if !waitFor(3*time.Second, func() bool { return !w.Up()[2] }) {
		t.Fatal("the flaky master never went down")
	}
	if !waitFor(5*time.Second, func() bool { return w.Up()[2] }) {
		t.Fatal("the flaky master never came back")
	}
	conn, err := redis.Dial("tcp", w.Addrs()[2])
	if err != nil {
		t.Fatal(err)
	}
	n, err := redis.Int(conn.Do("EXISTS", "real:one"))
	conn.Close()
	if err != nil || n != 0 {
		t.Errorf("the flaky master came back with the lock: %d %v", n, err)
	}
	addrs := w.Addrs()
	w.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the servers' directory is left behind: %v", err)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("%s still answers after Stop", a)
		}
	}
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
