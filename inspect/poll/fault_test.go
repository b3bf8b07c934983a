package poll

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// pollFor polls every interval for d and returns the last snapshot.
func pollFor(p *Poller, d, interval time.Duration) *inspect.Snapshot {
	var s *inspect.Snapshot
	for end := time.Now().Add(d); ; {
		s = p.Poll(context.Background())
		if time.Now().After(end) {
			return s
		}
		time.Sleep(interval)
	}
}

// One master runs 2% fast, one is 5 s ahead, one steps forward mid-run.
func TestClockRateOffsetAndJump(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{Skew: true})
	ms[0].SetClock(0, 1.02)
	ms[1].SetClock(5*time.Second, 1)
	p := newPoller(t, testConfig(t, ms, nil))
	s := pollFor(p, 3*time.Second, 50*time.Millisecond)
	for i, m := range s.Masters {
		if m.ClockJump {
			t.Errorf("%s: jump flagged before any jump", m.Name)
		}
		if m.ClockRatePPM == nil {
			t.Fatalf("%s: no rate after 3s of polling", s.Masters[i].Name)
		}
	}
	rate := *s.Masters[0].ClockRatePPM
	t.Logf("m1 rate %+.0f ppm (want +20000), m2 offset %.1fms ±%.2f (want +5000)", rate, s.Masters[1].ClockOffsetMs, s.Masters[1].ClockUncertaintyMs)
	if math.Abs(rate-20000) > 5000 {
		t.Errorf("m1 rate %+.0f ppm, want 20000 ± 5000 (2%% ± 0.5%%)", rate)
	}
	if f := finding(s.Masters[0].Findings, "clock-rate"); f == nil || f.Severity != inspect.SeverityCrit {
		t.Errorf("m1 findings %+v lack a crit clock-rate", s.Masters[0].Findings)
	}
	// The offset is known to within its stated uncertainty (half the round trip of the
	// TIME that measured it): 50 ms on a quiet machine, more when a slow round trip
	// (the race detector on a loaded CI host) says so.
	if off, unc := s.Masters[1].ClockOffsetMs, s.Masters[1].ClockUncertaintyMs; math.Abs(off-5000) > max(50, unc) {
		t.Errorf("m2 offset %.1fms ±%.2f, want 5000 ± %.0f", off, unc, max(50, unc))
	}
	if finding(s.Masters[1].Findings, "clock-offset") == nil {
		t.Errorf("m2 findings %+v lack clock-offset", s.Masters[1].Findings)
	}
	if r := s.Masters[1].ClockRatePPM; math.Abs(*r) > 5000 {
		t.Errorf("m2 (offset only) rate %+.0f ppm", *r)
	}

	ms[2].SetClock(2*time.Second, 1) // a forward step
	s = pollFor(p, 200*time.Millisecond, 50*time.Millisecond)
	if !s.Masters[2].ClockJump || finding(s.Masters[2].Findings, "clock-jump") == nil {
		t.Errorf("m3 jump not flagged: %+v", s.Masters[2])
	}
	if s.Masters[0].ClockJump || s.Masters[1].ClockJump {
		t.Errorf("jump flagged on a master that did not jump")
	}
	if inspect.ExitCode(s) != 3 {
		t.Errorf("exit code %d, want 3", inspect.ExitCode(s))
	}
}

// A restarted master, an evicting policy and a master that replicates another.
func TestDoctorOnRealMasters(t *testing.T) {
	t.Parallel()
	m1 := redistest.Start(t, redistest.Options{Config: []string{"maxmemory 10mb", "maxmemory-policy volatile-lru"}})
	m2 := redistest.Start(t, redistest.Options{})
	m3 := redistest.Start(t, redistest.Options{})
	ms := []*redistest.Server{m1, m2, m3}
	// Every master up for max_ttl, then m2 restarted: it is "restarted recently" until
	// it has been up for max_ttl again. At 1 s, a loaded machine (the race detector,
	// parallel tests) once took longer than that from the restart to the poll.
	const maxTTL = 3 * time.Second
	time.Sleep(maxTTL + 200*time.Millisecond)
	m2.Restart(false)
	_, port, _ := strings.Cut(m2.Addr, ":")
	do(t, ms[2:], "REPLICAOF", "127.0.0.1", port)
	c := testConfig(t, ms, func(c *config.Config) { c.Inspect.MaxTTL = maxTTL })
	s := newPoller(t, c).Poll(context.Background())
	codes := func(m inspect.Master) string {
		var cs []string
		for _, f := range m.Findings {
			cs = append(cs, f.Code)
		}
		return strings.Join(cs, " ")
	}
	if got := codes(s.Masters[0]); got != "evicting-policy" {
		t.Errorf("m1 findings %q, want evicting-policy", got)
	}
	if got := codes(s.Masters[1]); got != "restarted-recently" {
		t.Errorf("m2 findings %q, want restarted-recently", got)
	}
	if got := codes(s.Masters[2]); !strings.Contains(got, "not-master") {
		t.Errorf("m3 findings %q, want not-master", got)
	}
	f := finding(s.Findings, "replicates")
	if f == nil || !strings.HasPrefix(f.Message, "m3 replicates m2") {
		t.Errorf("snapshot findings %+v, want m3 replicates m2", s.Findings)
	}
	if s.Masters[0].MaxmemoryPolicy != "volatile-lru" || s.Masters[2].Role != "slave" || s.Masters[1].UptimeS >= int64(maxTTL/time.Second) {
		t.Errorf("masters %+v", s.Masters)
	}
}

// The same server configured twice is one vote, not two.
func TestDuplicateServer(t *testing.T) {
	t.Parallel()
	m := redistest.Start(t, redistest.Options{AOF: true})
	other := redistest.Start(t, redistest.Options{AOF: true})
	c := testConfig(t, []*redistest.Server{m, other}, nil)
	c.Masters = append(c.Masters, config.MasterConfig{Name: "m3", Addr: strings.Replace(m.Addr, "127.0.0.1", "localhost", 1)})
	s := newPoller(t, c).Poll(context.Background())
	if f := finding(s.Findings, "duplicate-server"); f == nil || !strings.Contains(f.Message, "m1 and m3") {
		t.Errorf("findings %+v, want duplicate-server m1 and m3", s.Findings)
	}
}

// An ACL user with read rights only: the dump works and nothing is written.
func TestReadOnlyUser(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{Users: []string{
		"ro on >ro-pw ~* +@read -@write",
		"inspector on >in-pw ~* +@read +time +info +config|get -@write",
	}})
	do(t, ms, "SET", "job", "w:1#"+hex32, "PX", 60000)
	do(t, ms[:1], "SET", "job2", "w:2#"+hex32, "PX", 60000)
	do(t, ms, "CONFIG", "RESETSTAT")
	do(t, ms, "ACL", "LOG", "RESET")
	for _, user := range []struct{ name, pw, wantFinding string }{{"ro", "ro-pw", "no-time"}, {"inspector", "in-pw", ""}} {
		c := testConfig(t, ms, func(c *config.Config) {
			for i := range c.Masters {
				c.Masters[i].Username, c.Masters[i].Password = user.name, user.pw
			}
		})
		p := newPoller(t, c)
		s := p.Poll(context.Background())
		s = p.Poll(context.Background())
		if s.Summary.MastersUp != 3 || row(t, s, "job").State != inspect.StateHeld || row(t, s, "job2").State != inspect.StatePartial {
			t.Errorf("%s: up %d, rows %+v", user.name, s.Summary.MastersUp, s.Resources)
		}
		f := finding(s.Masters[0].Findings, "no-time")
		if (f != nil) != (user.wantFinding != "") {
			t.Errorf("%s: findings %+v", user.name, s.Masters[0].Findings)
		}
		if user.name == "inspector" && (s.Masters[0].Role != "master" || s.Masters[0].AppendOnly != "no") {
			t.Errorf("inspector: health not read: %+v", s.Masters[0])
		}
	}
	readOnly := map[string]bool{"scan": true, "mget": true, "pttl": true, "type": true, "get": true, "time": true,
		"info": true, "config|get": true, "auth": true, "ping": true, "config|resetstat": true, "acl|log": true,
		"dbsize": true}
	for _, m := range ms {
		info, err := redis.String(m.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
			if ok && strings.HasPrefix(line, "cmdstat_") && !readOnly[name] {
				t.Errorf("%s: command %q reached the server during polls", m.Addr, line)
			}
		}
		log, err := redis.Values(m.Do("ACL", "LOG"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			kv, _ := redis.Values(e, nil)
			fields := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				k, _ := redis.String(kv[i], nil)
				v, _ := redis.String(kv[i+1], nil)
				fields[k] = v
			}
			if fields["reason"] != "command" || !readOnly[fields["object"]] {
				t.Errorf("%s: a denied command that is not a read: %v", m.Addr, fields)
			}
		}
	}
}

// A key seen by SCAN that expires before its values are read leaves no phantom row.
func TestKeyExpiresBetweenScanAndGet(t *testing.T) {
	t.Parallel()
	m := redistest.Start(t, redistest.Options{})
	// Every reply arrives this late: once SCAN has run, the key is made to expire, and
	// MGET and PTTL, sent when SCAN's reply is in, find it gone. (Timing the expiry
	// from the start instead failed on a loaded machine, at 150 and at 300 ms of slack:
	// the dials and the race detector took longer.)
	const delay = 600 * time.Millisecond
	proxy := m.SlowProxy(delay)
	c := config.Default()
	c.Masters = []config.MasterConfig{{Name: "m1", Addr: proxy.Addr}}
	c.Inspect.Timeout = 5 * time.Second
	pools, _ := c.Pools()
	defer pools[0].Close()
	do(t, []*redistest.Server{m}, "SET", "stays", "w#"+hex32, "PX", 60000)
	do(t, []*redistest.Server{m}, "SET", "fleeting", "w#"+hex32, "PX", 60000)
	do(t, []*redistest.Server{m}, "CONFIG", "RESETSTAT")
	expired := make(chan error, 1)
	go func() { // on a direct connection, not through the proxy
		conn := m.Pool.Get()
		defer conn.Close()
		for end := time.Now().Add(c.Inspect.Timeout); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			info, err := redis.String(conn.Do("INFO", "commandstats"))
			if err != nil {
				expired <- err
				return
			}
			if strings.Contains(info, "cmdstat_scan:") {
				_, err := conn.Do("PEXPIRE", "fleeting", 1)
				expired <- err
				return
			}
		}
		expired <- errors.New("SCAN never ran")
	}()
	col := newCollector(c)
	var raw *wire.Conn
	r := readMaster(target{pool: pools[0], mc: c.Masters[0]}, c, time.Now().Add(c.Inspect.Timeout), false, &raw, 0, col, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := <-expired; err != nil {
		t.Fatalf("expiring the key after SCAN: %v", err)
	}
	if r.scanned != 2 || r.gone != 1 {
		t.Fatalf("scanned %d keys, %d gone; want 2 and 1", r.scanned, r.gone)
	}
	col.close()
	s := NewPoller(c, pools).build(time.Now(), []*masterRead{r}, col)
	if len(s.Resources) != 1 || s.Resources[0].Resource != "stays" {
		t.Errorf("rows %+v, want only stays", s.Resources)
	}
}

// SCAN stops at max_keys and the snapshot says so.
func TestScanCapped(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	for _, m := range ms {
		c := m.Pool.Get()
		for i := range 300 {
			c.Send("SET", "k"+strconv.Itoa(i), "w#"+hex32, "PX", 60000)
		}
		c.Do("")
		c.Close()
	}
	cfg := testConfig(t, ms, func(c *config.Config) { c.Inspect.MaxKeys, c.Inspect.ScanCount = 100, 30 })
	s := newPoller(t, cfg).Poll(context.Background())
	if s.Complete || !s.Masters[0].Capped || finding(s.Masters[0].Findings, "scan-capped") == nil {
		t.Errorf("complete %v, m1 %+v", s.Complete, s.Masters[0])
	}
	if len(s.Resources) < 100 || len(s.Resources) > 300 {
		t.Errorf("%d rows from 3 masters capped at 100 keys each", len(s.Resources))
	}
}

// Events between polls: acquired, extended, owner-changed, released, expired.
func TestPollEvents(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	p := newPoller(t, testConfig(t, ms, nil))
	kinds := func() string {
		var ks []string
		for _, e := range p.Poll(context.Background()).Events {
			ks = append(ks, e.Resource+":"+e.Kind)
		}
		return strings.Join(ks, " ")
	}
	p.Poll(context.Background())
	a, b := "w:1#"+hex32, "w:2#"+hex32
	steps := []struct {
		act  func()
		want string
	}{
		{func() { do(t, ms, "SET", "job", a, "PX", 10000); do(t, ms, "SET", "tmp", a, "PX", 300) }, "job:acquired tmp:acquired"},
		{func() { do(t, ms, "PEXPIRE", "job", 60000); time.Sleep(400 * time.Millisecond) }, "job:extended tmp:expired"},
		{func() { do(t, ms, "SET", "job", b, "PX", 60000) }, "job:owner-changed"},
		{func() { do(t, ms, "DEL", "job") }, "job:released"},
		{func() {}, ""},
	}
	for i, st := range steps {
		st.act()
		if got := kinds(); got != st.want {
			t.Errorf("step %d: events %q, want %q", i, got, st.want)
		}
	}
}

// SampleClocks measures a fast clock without reading a key: once the samples pin
// the rate, the next poll reports it, and the masters saw TIME (and INFO/CONFIG once) but
// no SCAN, MGET or PTTL while sampling.
func TestSampleClocksReadsNoKeys(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{Skew: true})
	ms[0].SetClock(0, 1.02)
	for _, m := range ms {
		for i := range 50 {
			if _, err := m.Do("SET", "lock:k"+strconv.Itoa(i), "v", "PX", 60000); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	p := newPoller(t, testConfig(t, ms, nil))
	// Until the fit pins the rate (a loaded machine needs more samples), at most 20 s.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		p.SampleClocks(context.Background())
		if _, ok := p.ms[0].clock.Rate(); ok && len(p.ms[0].clock.Samples) >= 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range ms {
		info, err := redis.String(m.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"cmdstat_scan:", "cmdstat_mget:", "cmdstat_pttl:", "cmdstat_dbsize:"} {
			if strings.Contains(info, cmd) {
				t.Fatalf("%s: sampling clocks sent %s", m.Addr, strings.TrimSuffix(strings.TrimPrefix(cmd, "cmdstat_"), ":"))
			}
		}
		if !strings.Contains(info, "cmdstat_time:") {
			t.Fatalf("%s: no TIME while sampling clocks", m.Addr)
		}
	}
	s := p.Poll(context.Background())
	if len(s.Resources) != 50 {
		t.Fatalf("poll after sampling: %d rows, want 50", len(s.Resources))
	}
	r := s.Masters[0].ClockRatePPM
	if r == nil || math.Abs(*r-20000) > 5000 {
		t.Fatalf("m1 rate after sampling %v, want 20000 ± 5000 ppm", r)
	}
	if finding(s.Masters[0].Findings, "clock-rate") == nil {
		t.Fatalf("m1 findings %+v lack clock-rate", s.Masters[0].Findings)
	}
}

// A poller WithoutEvents reports no events and keeps no previous rows, while the
// same change gives an event on a poller with them.
func TestPollWithoutEvents(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	with, without := newPoller(t, testConfig(t, ms, nil)), newPoller(t, testConfig(t, ms, nil)).WithoutEvents()
	for _, p := range []*Poller{with, without} {
		p.Poll(context.Background())
	}
	do(t, ms, "SET", "job", "w:1#"+hex32, "PX", 10000)
	if evs := with.Poll(context.Background()).Events; len(evs) != 1 {
		t.Fatalf("with events: %+v, want one acquired", evs)
	}
	s := without.Poll(context.Background())
	if len(s.Events) != 0 || len(without.prev) != 0 || len(s.Resources) != 1 {
		t.Fatalf("without events: %d events, %d previous rows kept, %d rows", len(s.Events), len(without.prev), len(s.Resources))
	}
}

// The cap is crossed on the first, a middle and the last page, on one page that holds
// every key (the default COUNT), and not at all: the snapshot says capped exactly when
// keys were left unread, in the snapshot, the master, the findings and the exit code,
// through both the whole and the streamed poll.
func TestScanCapCrossedOnAnyPage(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 1, redistest.Options{})
	const n = 60
	c := ms[0].Pool.Get()
	for i := range n {
		// Two keys per resource (the lock and its fence counter), so a cap can fall
		// between the keys of one resource.
		c.Send("SET", fmt.Sprintf("job:%02d", i), "w#"+hex32, "PX", 60000)
		if i%2 == 0 {
			c.Send("SET", fmt.Sprintf("job:%02d:fence", i), "7")
		}
	}
	if _, err := c.Do(""); err != nil {
		t.Fatal(err)
	}
	c.Close()
	keys := n + n/2
	for _, tc := range []struct{ maxKeys, count int }{
		{1, 10}, {3, 10}, {25, 10}, {keys - 3, 10}, {keys - 1, 10}, {2, 1000}, {keys - 1, 1000},
		{keys, 10}, {keys + 1, 10}, {keys, 1000}, {1000, 10},
	} {
		cfg := testConfig(t, ms, func(c *config.Config) { c.Inspect.MaxKeys, c.Inspect.ScanCount = tc.maxKeys, tc.count })
		wantCapped := tc.maxKeys < keys
		s := newPoller(t, cfg).Poll(context.Background())
		st := newPoller(t, cfg).PollStream(context.Background())
		if err := st.Each(func(_ []inspect.Resource, out []byte) ([]byte, error) { return out, nil }, func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		for what, snap := range map[string]*inspect.Snapshot{"poll": s, "stream": st.Snapshot} {
			m := snap.Masters[0]
			if m.Capped != wantCapped || snap.Complete == wantCapped || (finding(m.Findings, inspect.FindingScanCapped) != nil) != wantCapped {
				t.Errorf("max_keys %d, COUNT %d (%d keys), %s: capped %v complete %v findings %v; want capped %v",
					tc.maxKeys, tc.count, keys, what, m.Capped, snap.Complete, m.Findings, wantCapped)
			}
		}
		if wantCapped && inspect.ExitCode(s) != 3 {
			t.Errorf("max_keys %d: exit code %d for a capped snapshot, want 3", tc.maxKeys, inspect.ExitCode(s))
		}
		if wantCapped && len(s.Resources) > tc.maxKeys {
			t.Errorf("max_keys %d: %d rows", tc.maxKeys, len(s.Resources))
		}
		if !wantCapped && len(s.Resources) != n {
			t.Errorf("max_keys %d, COUNT %d: %d rows, want all %d", tc.maxKeys, tc.count, len(s.Resources), n)
		}
	}
}

// Liveness is per round trip, not per poll: a master behind a link that delays every
// reply by 80 ms, with a read of 40 pages (over 3 s in all, three times
// inspect.timeout), is up and read whole, and the poll is reported slow rather than the
// master down. A master that stops answering is still down within inspect.timeout.
func TestLongPollOfALiveMasterIsSlowNotDown(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 2, redistest.Options{})
	for _, m := range ms {
		c := m.Pool.Get()
		for i := range 400 {
			c.Send("SET", fmt.Sprintf("job:%03d", i), "w#"+hex32, "PX", 60000)
		}
		if _, err := c.Do(""); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	slow := ms[0].SlowProxy(80 * time.Millisecond)
	cfg := testConfig(t, ms, func(c *config.Config) {
		c.Masters[0].Addr = slow.Addr
		c.Inspect.Timeout, c.Inspect.ScanCount, c.Inspect.PollInterval = time.Second, 10, time.Second
	})
	p := newPoller(t, cfg)
	start := time.Now()
	s := p.Poll(context.Background())
	took := time.Since(start)
	if took < 2*cfg.Inspect.Timeout {
		t.Fatalf("the poll took %v: the test needs one longer than inspect.timeout", took)
	}
	if !s.Masters[0].Up || !s.Complete || len(s.Resources) != 400 || !s.Slow || s.PollMs < float64(cfg.Inspect.Timeout.Milliseconds()) {
		t.Errorf("after %v: m1 up %v (%s), complete %v, %d rows, slow %v, poll %vms; want up, complete, 400 rows, slow",
			took, s.Masters[0].Up, s.Masters[0].Error, s.Complete, len(s.Resources), s.Slow, s.PollMs)
	}
	slow.SetDelay(3 * time.Second) // now it stops answering in time
	start = time.Now()
	s = p.Poll(context.Background())
	if s.Masters[0].Up || time.Since(start) > 2*cfg.Inspect.Timeout || !strings.Contains(s.Masters[0].Error, fmt.Sprintf("no answer within %v", cfg.Inspect.Timeout)) {
		t.Errorf("a master that stopped answering: up %v, error %q, after %v", s.Masters[0].Up, s.Masters[0].Error, time.Since(start))
	}
}

// CLIENT KILL of every connection between two polls: the kept connections are stale,
// the master answers a new one, so the next poll finds it up with its keys.
func TestClientKillBetweenPollsIsNotDown(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	for _, m := range ms {
		if _, err := m.Do("SET", "job", "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	p := newPoller(t, testConfig(t, ms, func(c *config.Config) { c.Inspect.Patterns = []string{"*"} }))
	for round := 0; round < 3; round++ {
		if s := p.Poll(context.Background()); !s.Masters[0].Up {
			t.Fatalf("round %d, before the kill: m1 down: %s", round, s.Masters[0].Error)
		}
		for _, typ := range []string{"normal", "pubsub"} {
			if _, err := ms[0].Do("CLIENT", "KILL", "TYPE", typ); err != nil {
				t.Fatal(err)
			}
		}
		s := p.Poll(context.Background())
		if !s.Masters[0].Up {
			t.Fatalf("round %d: m1 shown down after CLIENT KILL, though it answers: %s", round, s.Masters[0].Error)
		}
		if len(s.Resources) != 1 || s.Resources[0].Holders < 3 {
			t.Fatalf("round %d: after CLIENT KILL the poll lost the lock: %+v", round, s.Resources)
		}
	}
}

// The kept key-reading connection alone closed by the server between two polls (the
// pool's connection still open): the next poll reads the keys on a new one.
func TestKeyConnectionKilledBetweenPollsIsNotDown(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	for _, m := range ms {
		if _, err := m.Do("SET", "job", "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	p := newPoller(t, testConfig(t, ms, func(c *config.Config) { c.Inspect.Patterns = []string{"*"} }))
	for round := 0; round < 3; round++ {
		if s := p.Poll(context.Background()); !s.Masters[0].Up {
			t.Fatalf("round %d, before the kill: m1 down: %s", round, s.Masters[0].Error)
		}
		list, err := redis.String(ms[0].Do("CLIENT", "LIST"))
		if err != nil {
			t.Fatal(err)
		}
		killed := 0
		for _, line := range strings.Split(list, "\n") {
			id, cmd := "", ""
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "id="); ok {
					id = v
				}
				if v, ok := strings.CutPrefix(f, "cmd="); ok {
					cmd = v
				}
			}
			if cmd == "scan" || cmd == "mget" || cmd == "pttl" {
				if _, err := ms[0].Do("CLIENT", "KILL", "ID", id); err != nil {
					t.Fatal(err)
				}
				killed++
			}
		}
		if killed == 0 {
			t.Fatalf("round %d: no key-reading connection found in CLIENT LIST:\n%s", round, list)
		}
		s := p.Poll(context.Background())
		if !s.Masters[0].Up || len(s.Resources) != 1 || s.Resources[0].Holders < 3 {
			t.Fatalf("round %d: after the key connection was killed: up %v (%s), rows %+v", round, s.Masters[0].Up, s.Masters[0].Error, s.Resources)
		}
	}
}
