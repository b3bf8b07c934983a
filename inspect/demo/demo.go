// Package demo runs a small fake world for `redlockctl demo`: embedded in-process Redis
// masters (miniredis) on loopback whose clocks the demo drives (one fast, one offset),
// simulated clients that take, extend, release and abandon locks through the redlock
// library, stray leftovers written straight into a minority of masters, and a master
// that goes down and comes back empty. It needs nothing installed but Go. It is never
// used to test Redis behaviour.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// Options shape the demo world; the zero value is a sensible five-master demo.
type Options struct {
	Masters   int           // number of masters (default 5)
	Clients   int           // simulated clients (default 6)
	Seed      uint64        // random seed (0: random)
	Tick      time.Duration // how often the masters' clocks advance (default 20ms)
	FastRate  float64       // clock rate of the fast master (default 1.02: 2% fast)
	Offset    time.Duration // clock offset of the offset master (default +350ms)
	DownAfter time.Duration // first outage of the flaky master (default 30s after start)
	DownEvery time.Duration // time between outages (default 60s)
	DownFor   time.Duration // length of an outage (default 8s)
	Logf      func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Masters <= 0 {
		o.Masters = 5
	}
	if o.Clients <= 0 {
		o.Clients = 6
	}
	if o.Seed == 0 {
		o.Seed = mrand.Uint64()
	}
	if o.Tick <= 0 {
		o.Tick = 20 * time.Millisecond
	}
	if o.FastRate <= 0 {
		o.FastRate = 1.02
	}
	if o.Offset == 0 {
		o.Offset = 350 * time.Millisecond
	}
	if o.DownAfter <= 0 {
		o.DownAfter = 30 * time.Second
	}
	if o.DownEvery <= 0 {
		o.DownEvery = 60 * time.Second
	}
	if o.DownFor <= 0 {
		o.DownFor = 8 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// MaxMasters bounds Options.Masters.
const MaxMasters = 15

// Resources are the lock names the simulated clients contend for.
var Resources = []string{
	"billing:nightly", "orders:reindex", "mail:digest", "reports:weekly",
	"cache:warmup", "search:rebuild", "payments:settle", "inventory:sync",
	"exports:csv", "cron:cleanup",
}

// World is a running demo: masters, their clocks, clients and the chaos that leaves
// stray values behind. Stop ends all of it.
type World struct {
	opts    Options
	masters []*master
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	pools   []*redis.Pool // the clients' pools, closed by Stop
	mu      sync.Mutex    // guards rng
	rng     *mrand.Rand
	stopped sync.Once
}

// master is one embedded Redis with a demo-driven clock.
type master struct {
	name   string
	addr   string
	mr     *miniredis.Miniredis
	rate   float64       // clock speed relative to real time
	offset time.Duration // constant clock offset
	flaky  bool          // goes down now and then

	mu      sync.Mutex
	up      bool
	virt    time.Duration // virtual time elapsed since the world started, at rate
	base    time.Time     // real instant the world's clocks started
	tickAt  time.Time     // real instant of the last clock tick
	started time.Time     // real time of the last (re)start, for INFO uptime
	runID   string
}

// Start starts the world; it returns once every master listens on loopback.
func Start(o Options) (*World, error) {
	o.defaults()
	if o.Masters > MaxMasters {
		return nil, fmt.Errorf("demo: %d masters: at most %d", o.Masters, MaxMasters)
	}
	w := &World{opts: o, rng: mrand.New(mrand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}
	now := time.Now()
	for i := 0; i < o.Masters; i++ {
		// The masters pretend to have been up for days; only a restart resets that.
		m := &master{name: fmt.Sprintf("m%d", i+1), mr: miniredis.NewMiniRedis(), rate: 1, started: now.Add(-73 * time.Hour), runID: randHex(20)}
		switch {
		case i == 1 && o.Masters > 2:
			m.rate = o.FastRate
		case i == 2 && o.Masters > 3:
			m.offset = o.Offset
		}
		m.flaky = i == o.Masters-1 && o.Masters >= 3
		if err := m.mr.StartAddr("127.0.0.1:0"); err != nil {
			w.closeMasters()
			return nil, fmt.Errorf("demo: start master %s: %w", m.name, err)
		}
		m.addr = m.mr.Addr()
		m.up = true
		m.mr.SetTime(now.Add(m.offset))
		m.installHook()
		w.masters = append(w.masters, m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.run(ctx, w.clocks)
	w.run(ctx, w.outages)
	w.run(ctx, w.chaos)
	for i := 0; i < o.Clients; i++ {
		c, err := w.newClient(i)
		if err != nil {
			w.Stop()
			return nil, err
		}
		w.run(ctx, c.loop)
	}
	return w, nil
}

func (w *World) run(ctx context.Context, f func(context.Context)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f(ctx)
	}()
}

// Stop ends the clients, the clocks and the masters, and waits for every goroutine the
// world started. It is safe to call more than once.
func (w *World) Stop() {
	w.stopped.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
		w.wg.Wait()
		for _, p := range w.pools {
			p.Close()
		}
		w.closeMasters()
	})
}

func (w *World) closeMasters() {
	for _, m := range w.masters {
		m.mu.Lock()
		m.up = false
		m.mu.Unlock()
		m.mr.Close()
	}
}

// Addrs returns the masters' loopback addresses, in order.
func (w *World) Addrs() []string {
	a := make([]string, len(w.masters))
	for i, m := range w.masters {
		a[i] = m.addr
	}
	return a
}

// Config returns an inspect config over the demo masters: name "demo", its own label
// colour, short TTLs and a one-second poll; the audit log goes to auditLog ("" for none).
func (w *World) Config(auditLog string) *config.Config {
	c := config.Default()
	c.Name = "demo"
	c.LabelColor = "magenta"
	c.AuditLog = auditLog
	c.Lock.DefaultTTL = 30 * time.Second
	c.Lock.Retries = 3
	c.Lock.RetryDelay = 100 * time.Millisecond
	c.Inspect.Timeout = 300 * time.Millisecond
	c.Inspect.HealthEvery = 5
	c.Inspect.MaxTTL = time.Minute
	for i, m := range w.masters {
		c.Masters = append(c.Masters, config.MasterConfig{Name: w.masters[i].name, Addr: m.addr})
	}
	return c
}

// Up reports which masters are currently accepting connections.
func (w *World) Up() []bool {
	up := make([]bool, len(w.masters))
	for i, m := range w.masters {
		m.mu.Lock()
		up[i] = m.up
		m.mu.Unlock()
	}
	return up
}

func (w *World) intn(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

func (w *World) between(lo, hi time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

// sleep waits d or until ctx is done; it reports whether the world goes on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// clocks advances every master's clock each tick: TTLs shrink by the master's virtual
// elapsed time (FastForward) and TIME reads start+offset+virtual (SetTime). miniredis does
// not expire keys by itself; this is what makes them expire. The fast master's clock is
// stepped back (a visible jump) once it is two seconds ahead.
func (w *World) clocks(ctx context.Context) {
	t := time.NewTicker(w.opts.Tick)
	defer t.Stop()
	start := time.Now()
	last := start
	for _, m := range w.masters {
		m.mu.Lock()
		m.base, m.tickAt = start, start
		m.mu.Unlock()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d := now.Sub(last)
			last = now
			for _, m := range w.masters {
				m.mu.Lock()
				vd := time.Duration(float64(d) * m.rate)
				m.virt += vd
				if m.rate != 1 && m.virt-now.Sub(start) > 2*time.Second {
					m.virt = now.Sub(start) // NTP steps the clock back
					w.opts.Logf("demo: %s clock stepped back to real time", m.name)
				}
				wall := start.Add(m.offset + m.virt)
				m.tickAt = now
				m.mu.Unlock()
				m.mr.FastForward(vd)
				m.mr.SetTime(wall)
			}
		}
	}
}

// outages takes the flaky master down now and then and brings it back on the same
// port, empty, as a Redis without persistence would come back.
func (w *World) outages(ctx context.Context) {
	var fl *master
	for _, m := range w.masters {
		if m.flaky {
			fl = m
		}
	}
	if fl == nil {
		<-ctx.Done()
		return
	}
	if !sleep(ctx, w.opts.DownAfter) {
		return
	}
	for {
		w.opts.Logf("demo: %s goes down", fl.name)
		fl.mu.Lock()
		fl.up = false
		fl.mu.Unlock()
		fl.mr.Close()
		if !sleep(ctx, w.opts.DownFor) {
			return
		}
		fl.mr.FlushAll()
		for {
			err := fl.mr.StartAddr(fl.addr)
			if err == nil {
				break
			}
			w.opts.Logf("demo: %s restart on %s: %v (retrying)", fl.name, fl.addr, err)
			if !sleep(ctx, time.Second) {
				return
			}
		}
		fl.mu.Lock()
		fl.up, fl.started, fl.runID = true, time.Now(), randHex(20)
		fl.mu.Unlock()
		fl.installHook()
		w.opts.Logf("demo: %s is back, empty", fl.name)
		if !sleep(ctx, w.opts.DownEvery-w.opts.DownFor) {
			return
		}
	}
}

// installHook answers INFO (server, replication, persistence) and CONFIG GET, which
// miniredis does not implement, with what a plain Redis master without persistence says.
func (m *master) installHook() {
	srv := m.mr.Server()
	if srv == nil {
		return
	}
	srv.SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		switch cmd {
		case "TIME":
			// Between ticks miniredis would answer the last SetTime; answer the
			// master's clock to the microsecond instead, so offsets and rates
			// measured against it are smooth.
			if len(args) > 0 {
				return false
			}
			t := m.now()
			c.WriteLen(2)
			c.WriteBulk(strconv.FormatInt(t.Unix(), 10))
			c.WriteBulk(strconv.FormatInt(int64(t.Nanosecond()/1000), 10))
			return true
		case "INFO":
			secs := map[string]bool{}
			for _, a := range args {
				secs[strings.ToLower(a)] = true
			}
			if len(args) == 0 || secs["all"] || secs["everything"] || secs["default"] {
				secs = map[string]bool{"server": true, "replication": true, "persistence": true}
			}
			if !secs["server"] && !secs["replication"] && !secs["persistence"] {
				return false // clients, stats: miniredis answers
			}
			c.WriteBulk(m.info(secs))
			return true
		case "CONFIG":
			if len(args) < 2 || !strings.EqualFold(args[0], "GET") {
				c.WriteError("ERR CONFIG " + strings.Join(args, " ") + " is not supported by the demo masters")
				return true
			}
			known := map[string]string{
				"appendonly": "no", "appendfsync": "everysec", "maxmemory": "0",
				"maxmemory-policy": "noeviction", "save": "",
			}
			var out []string
			for _, p := range args[1:] {
				if v, ok := known[strings.ToLower(p)]; ok {
					out = append(out, strings.ToLower(p), v)
				}
			}
			c.WriteStrings(out)
			return true
		}
		return false
	})
}

// now is the master's wall clock: the world's start, its offset, the virtual time run
// at its rate up to the last tick, and the time since that tick at its rate.
func (m *master) now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.base.IsZero() {
		return time.Now().Add(m.offset)
	}
	since := time.Duration(float64(time.Since(m.tickAt)) * m.rate)
	return m.base.Add(m.offset + m.virt + since)
}

func (m *master) info(secs map[string]bool) string {
	m.mu.Lock()
	up := time.Since(m.started)
	runID := m.runID
	m.mu.Unlock()
	_, port, _ := net.SplitHostPort(m.addr)
	var b strings.Builder
	if secs["server"] {
		fmt.Fprintf(&b, "# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\nos:demo (miniredis)\r\nrun_id:%s\r\ntcp_port:%s\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\n\r\n",
			runID, port, int64(up.Seconds()), int64(up.Hours()/24))
	}
	if secs["replication"] {
		fmt.Fprintf(&b, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:%s\r\n\r\n", runID)
	}
	if secs["persistence"] {
		b.WriteString("# Persistence\r\nloading:0\r\naof_enabled:0\r\nrdb_changes_since_last_save:0\r\n\r\n")
	}
	return b.String()
}

// chaos writes what misbehaving clients leave behind, straight into the fake masters:
// partial acquisitions on a minority, a split between two minorities, a no-TTL leftover
// and a lock from another library (a hash). It never overwrites an existing key.
func (w *World) chaos(ctx context.Context) {
	q := len(w.masters)/2 + 1
	w.partial(q)
	w.foreign()
	noTTLAt := time.Now().Add(w.between(10*time.Second, 20*time.Second))
	var noTTLSet time.Time
	for sleep(ctx, w.between(4*time.Second, 9*time.Second)) {
		switch w.intn(3) {
		case 0, 1:
			w.partial(q)
		case 2:
			w.split(q)
		}
		w.foreign()
		now := time.Now()
		if noTTLSet.IsZero() && now.After(noTTLAt) {
			w.put(w.majority(q), "legacy:migration", value("migrate-script@ops-box:7781"), 0)
			noTTLSet = now
		} else if !noTTLSet.IsZero() && now.Sub(noTTLSet) > 45*time.Second {
			for _, m := range w.masters {
				m.mr.Del("legacy:migration")
			}
			noTTLSet, noTTLAt = time.Time{}, now.Add(w.between(30*time.Second, 60*time.Second))
		}
	}
}

// partial leaves a crashed acquisition: one value on fewer than q masters.
func (w *World) partial(q int) {
	res := Resources[w.intn(len(Resources))]
	n := 1 + w.intn(max(1, q-1))
	w.put(w.pick(n), res, value(fmt.Sprintf("worker-%d@10.0.3.%d:41%02d", 7+w.intn(3), 10+w.intn(40), w.intn(100))), w.between(6*time.Second, 20*time.Second))
}

// split leaves two contenders that each reached a minority.
func (w *World) split(q int) {
	if len(w.masters) < 4 {
		w.partial(q)
		return
	}
	res := Resources[w.intn(len(Resources))]
	idx := w.pick(len(w.masters))
	half := (q - 1)
	ttl := w.between(5*time.Second, 12*time.Second)
	w.put(idx[:half], res, value("contender-a@10.0.4.2:5120"), ttl)
	w.put(idx[half:2*half], res, value("contender-b@10.0.4.3:5121"), ttl)
}

// foreign keeps a Redisson-style hash lock on a quorum of masters.
func (w *World) foreign() {
	const key = "redisson_lock:orders-export"
	for _, i := range w.majority(len(w.masters)/2 + 1) {
		m := w.masters[i]
		if !w.isUp(m) || m.mr.Exists(key) {
			continue
		}
		m.mr.HSet(key, "8743c9c0-0795-4907-87fd-6c719a6b4586:1", "1")
		m.mr.SetTTL(key, 30*time.Second)
	}
}

// put writes value at key with ttl (0: none) on the given masters where the key is free.
func (w *World) put(idx []int, key, val string, ttl time.Duration) {
	for _, i := range idx {
		m := w.masters[i]
		if !w.isUp(m) || m.mr.Exists(key) {
			continue
		}
		if err := m.mr.Set(key, val); err != nil {
			continue
		}
		if ttl > 0 {
			m.mr.SetTTL(key, ttl)
		}
	}
}

func (w *World) isUp(m *master) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up
}

// pick returns n distinct master indexes in random order.
func (w *World) pick(n int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.rng.Perm(len(w.masters))
	return p[:min(n, len(p))]
}

// majority returns the first q masters' indexes.
func (w *World) majority(q int) []int {
	idx := make([]int, min(q, len(w.masters)))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// value returns a lock value in the redlock format: owner#<32 hex>.
func value(owner string) string { return owner + "#" + randHex(16) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// client is one simulated application instance locking through the redlock library.
type client struct {
	w      *World
	name   string
	rl     *redlock.Client
	fenced bool
}

var clientNames = []string{"billing-worker", "indexer", "mailer", "reporter", "cache-warmer", "scheduler", "settler", "syncer"}

func (w *World) newClient(i int) (*client, error) {
	name := fmt.Sprintf("%s-%d@app-%d", clientNames[i%len(clientNames)], i/len(clientNames)+1, 1+i%3)
	pools := make([]*redis.Pool, len(w.masters))
	for j, m := range w.masters {
		addr := m.addr
		pools[j] = &redis.Pool{
			MaxIdle:     2,
			IdleTimeout: 30 * time.Second,
			Dial: func() (redis.Conn, error) {
				return redis.Dial("tcp", addr,
					redis.DialConnectTimeout(200*time.Millisecond),
					redis.DialReadTimeout(200*time.Millisecond),
					redis.DialWriteTimeout(200*time.Millisecond))
			},
		}
	}
	w.pools = append(w.pools, pools...)
	fenced := i%3 == 2
	opts := []redlock.Option{
		redlock.WithOwner(name),
		redlock.WithRetries(2),
		redlock.WithRetryDelay(150 * time.Millisecond),
		redlock.WithNodeTimeout(100 * time.Millisecond),
	}
	if fenced {
		opts = append(opts, redlock.WithFencing())
	}
	rl, err := redlock.New(pools, opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: client %s: %w", name, err)
	}
	return &client{w: w, name: name, rl: rl, fenced: fenced}, nil
}

// loop is one client's life: take a lock, work while extending it, then release it,
// or walk away from it (it expires), again and again.
func (c *client) loop(ctx context.Context) {
	defer c.rl.Close()
	w := c.w
	// Stagger the first attempts a little so the first poll already sees locks.
	if !sleep(ctx, w.between(0, 300*time.Millisecond)) {
		return
	}
	for ctx.Err() == nil {
		res := Resources[w.intn(len(Resources))]
		ttl := []time.Duration{8 * time.Second, 15 * time.Second, 30 * time.Second}[w.intn(3)]
		actx, cancel := context.WithTimeout(ctx, time.Second)
		lock, err := c.rl.Acquire(actx, res, ttl)
		cancel()
		if err != nil {
			if !sleep(ctx, w.between(500*time.Millisecond, 3*time.Second)) {
				return
			}
			continue
		}
		work := w.between(2*time.Second, 25*time.Second)
		abandon := w.intn(8) == 0
		if abandon {
			// A crash: no extension, no release; the lock expires on its own.
			if !sleep(ctx, w.between(time.Second, 4*time.Second)) {
				return
			}
			continue
		}
		c.hold(ctx, lock, ttl, work)
		rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_ = c.rl.Release(rctx, lock)
		rcancel()
		if !sleep(ctx, w.between(300*time.Millisecond, 4*time.Second)) {
			return
		}
	}
}

// hold keeps lock alive for work, extending at ttl/3, until the work is done, ctx ends
// or an extension fails.
func (c *client) hold(ctx context.Context, lock *redlock.Lock, ttl, work time.Duration) {
	done := time.NewTimer(work)
	defer done.Stop()
	ext := time.NewTicker(ttl / 3)
	defer ext.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done.C:
			return
		case <-ext.C:
			ectx, cancel := context.WithTimeout(ctx, time.Second)
			err := c.rl.Extend(ectx, lock, ttl)
			cancel()
			if err != nil {
				if errors.Is(err, redlock.ErrLockLost) {
					c.w.opts.Logf("demo: %s lost %s", c.name, lock.Resource())
				}
				return
			}
		}
	}
}
