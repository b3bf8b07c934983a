// Package demo runs a small world for `redlockctl demo`: Redis masters on loopback
// (real redis-server processes where one is installed, so that the live feed's CLIENT
// TRACKING works; else embedded in-process masters, miniredis, whose clocks the demo
// drives, one fast and one offset), simulated clients that take, extend, release,
// overrun, contend for and abandon locks through the redlock library, stray leftovers
// written straight into a minority of masters, and a master that goes down and comes
// back empty. It needs nothing installed but Go. It is never used to test Redis
// behaviour.
package demo

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/internal/config"
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
	// RedisServer, when set, is the redis-server binary the masters run as (each a
	// process of its own, without persistence, in a private directory removed by
	// Stop); the masters' clocks are then their own. Empty: embedded masters.
	RedisServer string
	Logf        func(format string, args ...any)
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
	dir     string        // the redis-servers' directory, removed by Stop
	mu      sync.Mutex    // guards rng
	rng     *mrand.Rand
	stopped sync.Once
}

// master is one demo Redis: embedded with a demo-driven clock (mr), or a redis-server
// process (proc).
type master struct {
	name   string
	addr   string
	mr     *miniredis.Miniredis
	proc   *serverProc
	pool   *redis.Pool   // the chaos's writes
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
	if o.RedisServer != "" {
		if err := w.startServers(); err != nil {
			w.closeMasters()
			return nil, err
		}
	} else if err := w.startEmbedded(); err != nil {
		w.closeMasters()
		return nil, err
	}
	for _, m := range w.masters {
		m.pool = dialPool(m.addr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	if o.RedisServer == "" {
		w.run(ctx, w.clocks)
	}
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
	var racers []*redlock.Client
	half := len(w.masters) / 2
	for i, far := range []func(int) bool{
		func(j int) bool { return j >= half }, // near the first half
		func(j int) bool { return j < half },  // near the second half (and the middle)
	} {
		c, err := w.newRacer(i, far)
		if err != nil {
			w.Stop()
			return nil, err
		}
		racers = append(racers, c.rl)
	}
	w.run(ctx, func(ctx context.Context) { w.contention(ctx, racers) })
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

// startEmbedded starts the embedded masters; every one listens on loopback when it
// returns nil.
func (w *World) startEmbedded() error {
	o := w.opts
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
		w.masters = append(w.masters, m)
		if err := m.mr.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("demo: start master %s: %w", m.name, err)
		}
		m.addr = m.mr.Addr()
		m.up = true
		m.mr.SetTime(now.Add(m.offset))
		m.installHook()
	}
	return nil
}

// startServers starts one redis-server process per master, each in a directory of its
// own under a private one (0700) that Stop removes.
func (w *World) startServers() error {
	dir, err := os.MkdirTemp("", "redlockctl-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	w.dir = dir
	for i := 0; i < w.opts.Masters; i++ {
		m := &master{name: fmt.Sprintf("m%d", i+1), rate: 1, flaky: i == w.opts.Masters-1 && w.opts.Masters >= 3}
		w.masters = append(w.masters, m)
		mdir := filepath.Join(dir, m.name)
		if err := os.Mkdir(mdir, 0o700); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if m.proc, err = startServer(w.opts.RedisServer, mdir, 0); err != nil {
			return fmt.Errorf("demo: start master %s: %w", m.name, err)
		}
		m.addr, m.up = m.proc.addr(), true
	}
	return nil
}

// Real reports whether the masters are redis-server processes.
func (w *World) Real() bool { return w.opts.RedisServer != "" }

func (w *World) closeMasters() {
	for _, m := range w.masters {
		m.mu.Lock()
		m.up = false
		m.mu.Unlock()
		if m.pool != nil {
			m.pool.Close()
		}
		if m.mr != nil {
			m.mr.Close()
		}
		if m.proc != nil {
			m.proc.stop()
		}
	}
	if w.dir != "" {
		os.RemoveAll(w.dir)
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
	c.AuditLog, c.AuditLogDefault = auditLog, false
	c.Lock.DefaultTTL = 30 * time.Second
	// Throw-away masters started a moment ago: without this no acquisition of the
	// console's would count them until they had been up for the lock's TTL.
	c.Lock.RestartGuard = 0
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

var clientNames = []string{"billing-worker", "indexer", "mailer", "reporter", "cache-warmer", "scheduler", "settler", "syncer"}
