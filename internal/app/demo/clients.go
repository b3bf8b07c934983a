package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/resp"
)

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
				w.do(m, "DEL", "legacy:migration")
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

// foreign keeps locks of other libraries on the masters, written the way each library
// writes them: a Redisson fair lock with a waiter queued behind its holder (on a quorum,
// as a RedissonRedLock over independent masters does), a redsync lock (base64 value, on
// a quorum), a redis-py lock (a uuid1 token, on one server: redis-py locks one Redis)
// and a hash that is nobody's lock.
func (w *World) foreign() {
	const fair = "orders:export"
	q := w.majority(len(w.masters)/2 + 1)
	for _, i := range q {
		m := w.masters[i]
		if !w.isUp(m) || w.exists(m, fair) {
			continue
		}
		w.do(m, "HSET", fair, "8743c9c0-0795-4907-87fd-6c719a6b4586:1", "1")
		w.do(m, "PEXPIRE", fair, (30 * time.Second).Milliseconds())
		queue, timeouts := "redisson_lock_queue:{"+fair+"}", "redisson_lock_timeout:{"+fair+"}"
		waiter := "3f0c1d2e-4b5a-4c6d-8e7f-9a0b1c2d3e4f:57"
		w.do(m, "DEL", queue, timeouts)
		w.do(m, "RPUSH", queue, waiter)
		w.do(m, "ZADD", timeouts, time.Now().Add(5*time.Minute).UnixMilli(), waiter)
	}
	w.put(q, "inventory:reserve", base64.StdEncoding.EncodeToString(randBytes(16)), 25*time.Second)
	w.put(q[:1], "reports:pdf", uuid1(time.Now()), 20*time.Second)
	for _, i := range q[:1] {
		if m := w.masters[i]; w.isUp(m) && !w.exists(m, "session:42") {
			w.do(m, "HSET", "session:42", "user", "ada", "cart", "3 items")
		}
	}
}

// uuid1 is a redis-py lock token (Python's uuid.uuid1().hex) stamped at t.
func uuid1(t time.Time) string {
	ticks := uint64(t.Unix()+12219292800)*1e7 + uint64(t.Nanosecond()/100)
	b := randBytes(16)
	b[0], b[1], b[2], b[3] = byte(ticks>>24), byte(ticks>>16), byte(ticks>>8), byte(ticks)
	b[4], b[5], b[6], b[7] = byte(ticks>>40), byte(ticks>>32), byte(ticks>>56)&0x0f|0x10, byte(ticks>>48)
	b[8] = b[8]&0x3f | 0x80
	b[10] &^= 1 // a unicast node: a MAC address
	return hex.EncodeToString(b)
}

// put writes value at key with ttl (0: none) on the given masters where the key is free.
func (w *World) put(idx []int, key, val string, ttl time.Duration) {
	for _, i := range idx {
		m := w.masters[i]
		if !w.isUp(m) {
			continue
		}
		if ttl > 0 {
			w.do(m, "SET", key, val, "NX", "PX", ttl.Milliseconds())
		} else {
			w.do(m, "SET", key, val, "NX")
		}
	}
}

// do sends one command to m (errors are the demo's to ignore: a master may be down).
func (w *World) do(m *master, cmd string, args ...any) (any, error) {
	c := m.pool.Get()
	defer c.Close()
	return c.Do(cmd, args...)
}

// exists reports whether key exists on m (an error counts as yes: nothing is written).
func (w *World) exists(m *master, key string) bool {
	n, err := redis.Int(w.do(m, "EXISTS", key))
	return err != nil || n > 0
}

// dialPool is a pool of short-deadline connections to addr.
func dialPool(addr string) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     2,
		IdleTimeout: 30 * time.Second,
		Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", addr,
				resp.Dialer{Timeout: 200 * time.Millisecond}.DialOption(),
				redis.DialReadTimeout(200*time.Millisecond),
				redis.DialWriteTimeout(200*time.Millisecond))
		},
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

func randHex(n int) string { return hex.EncodeToString(randBytes(n)) }

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// client is one simulated application instance locking through the redlock library.
type client struct {
	w        *World
	name     string
	rl       *redlock.Client
	fenced   bool
	overruns bool // now and then it stalls past its lock's TTL (the first client)
}

func (w *World) newClient(i int) (*client, error) {
	name := fmt.Sprintf("%s-%d@app-%d", clientNames[i%len(clientNames)], i/len(clientNames)+1, 1+i%3)
	pools := make([]*redis.Pool, len(w.masters))
	for j, m := range w.masters {
		pools[j] = dialPool(m.addr)
	}
	w.pools = append(w.pools, pools...)
	fenced := i%3 == 2
	opts := []redlock.Option{
		redlock.WithOwner(name),
		redlock.WithRetries(2),
		redlock.WithRetryDelay(150 * time.Millisecond),
		redlock.WithNodeTimeout(100 * time.Millisecond),
		redlock.WithRestartGuard(0), // throw-away masters, started a moment ago
	}
	if fenced {
		opts = append(opts, redlock.WithFencing())
	}
	rl, err := redlock.New(pools, opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: client %s: %w", name, err)
	}
	return &client{w: w, name: name, rl: rl, fenced: fenced, overruns: i == 0}, nil
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
	for cycle := 0; ctx.Err() == nil; cycle++ {
		if c.overruns && cycle%3 == 0 {
			// A holder that stalls past its TTL: the lock expires while "held", and the
			// live feed reports it expired (within the demo's first 30 s).
			if !c.overrun(ctx) {
				return
			}
			continue
		}
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

// overrun takes a lock with a 2 s TTL and works 4 s without extending it, then tries
// to release it (too late). It reports whether ctx is still running.
func (c *client) overrun(ctx context.Context) bool {
	actx, cancel := context.WithTimeout(ctx, time.Second)
	lock, err := c.rl.Acquire(actx, "jobs:report", 2*time.Second)
	cancel()
	if err != nil {
		return sleep(ctx, time.Second)
	}
	if !sleep(ctx, 4*time.Second) {
		return false
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_ = c.rl.Release(rctx, lock)
	rcancel()
	return sleep(ctx, c.w.between(time.Second, 3*time.Second))
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

// contention makes two clients race for the same lock at the same instant now and
// then (the first time within seconds of the start). Each is a little slower to reach
// one half of the masters than the other half (the other racer's way round), as
// clients in two zones are: each takes the lock first on its near masters, one of them
// wins the middle one and the quorum, and the loser takes back what it set, as the
// live feed's contended events show.
func (w *World) contention(ctx context.Context, racers []*redlock.Client) {
	for _, rl := range racers {
		defer rl.Close()
	}
	for sleep(ctx, w.between(3*time.Second, 8*time.Second)) {
		var wg sync.WaitGroup
		for _, rl := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				actx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				l, err := rl.Acquire(actx, "jobs:race", 3*time.Second)
				if err == nil {
					sleep(ctx, time.Second)
					rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
					rl.Release(rctx, l)
					rcancel()
				}
			}()
		}
		wg.Wait()
	}
}

// newRacer is a client of the contention whose commands to the masters far lists
// are sent a few milliseconds late.
func (w *World) newRacer(i int, far func(j int) bool) (*client, error) {
	name := fmt.Sprintf("racer-%d@app-%d", i+1, 4+i)
	pools := make([]*redis.Pool, len(w.masters))
	for j, m := range w.masters {
		addr, delay := m.addr, time.Duration(0)
		if far(j) {
			delay = 15 * time.Millisecond
		}
		pools[j] = &redis.Pool{
			MaxIdle:     2,
			IdleTimeout: 30 * time.Second,
			Dial: func() (redis.Conn, error) {
				dial := resp.Dialer{Timeout: 200 * time.Millisecond}
				return redis.Dial("tcp", addr,
					redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
						c, err := dial.DialContext(ctx, network, addr)
						if err != nil || delay == 0 {
							return c, err
						}
						return &lateConn{Conn: c, delay: delay}, nil
					}),
					redis.DialReadTimeout(200*time.Millisecond),
					redis.DialWriteTimeout(200*time.Millisecond))
			},
		}
	}
	w.pools = append(w.pools, pools...)
	rl, err := redlock.New(pools, redlock.WithOwner(name), redlock.WithRetries(0), redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithRestartGuard(0))
	if err != nil {
		return nil, fmt.Errorf("demo: client %s: %w", name, err)
	}
	return &client{w: w, name: name, rl: rl}, nil
}

// lateConn sends each write delay late: a master further away.
type lateConn struct {
	net.Conn
	delay time.Duration
}

func (c *lateConn) Write(b []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(b)
}
