package redlock

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Client acquires, extends and releases locks on a fixed set of independent masters.
// It is safe for concurrent use; every call is bounded by the node timeout per round
// trip and by the caller's context.
type Client struct {
	masters   []instance
	sentinels []*sentinelSource // per instance: its Sentinel resolution, or nil
	clusters  int               // how many instances are clusters
	opts      options
	quorum    int
	quit      chan struct{}
	wg        sync.WaitGroup
	closed    atomic.Bool
	once      sync.Once

	afterRead func(token int64) // tests: runs between the two rounds of a fenced attempt

	// The restart guard's wake-up of held locks (restart.go).
	restartMu sync.Mutex
	restartCh chan struct{}
	holding   atomic.Int32
	probeOnce sync.Once
}

// New returns a Client over the given masters (N independent Redis masters, quorum
// N/2+1). It fails when masters is empty, a pool is nil or given twice, or an option
// value cannot work. It does not dial: connections are taken from the pools on first use
// (one per master by default) and kept until Close; they must support read timeouts, as
// those of redis.Dial do, and should be dialled with resp.Dialer{}.DialOption(), so that
// a broken or hostile master cannot crash the process with a reply.
func New(masters []*redis.Pool, opts ...Option) (*Client, error) {
	if len(masters) == 0 {
		return nil, errors.New("redlock: no masters given")
	}
	seen := make(map[*redis.Pool]int, len(masters))
	for i, p := range masters {
		if p == nil {
			return nil, fmt.Errorf("redlock: master %d: nil pool", i)
		}
		if j, dup := seen[p]; dup {
			return nil, fmt.Errorf("redlock: masters %d and %d are the same pool: each master must be counted once", j, i)
		}
		seen[p] = i
	}
	c, err := newClientN(len(masters), opts)
	if err != nil {
		return nil, err
	}
	for i, p := range masters {
		c.masters[i] = newMaster(i, poolSource{p}, nil, &c.opts, c.quit, &c.wg)
	}
	return c, nil
}

// newClientN applies the options and sizes a Client for n instances (not yet created).
func newClientN(n int, opts []Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		opts:      o,
		quorum:    n/2 + 1,
		quit:      make(chan struct{}),
		masters:   make([]instance, n),
		sentinels: make([]*sentinelSource, n),
	}
	c.opts.onRestart = c.wakeHeld
	return c, nil
}

// Quorum returns N/2+1, the number of masters that must agree.
func (c *Client) Quorum() int { return c.quorum }

// Masters returns N, the number of masters.
func (c *Client) Masters() int { return len(c.masters) }

// Owner returns the owner part written into every lock value.
func (c *Client) Owner() string { return c.opts.owner }

// Close stops the pipelines and gives their connections back to the pools; it waits
// for replies still in flight (at most the stall timeout on a stalled master). Every
// later call fails with ErrClosed. Locks still held are not released: they expire.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		close(c.quit)
	})
	c.wg.Wait()
	return nil
}

// drift is the clock drift allowance for ttl: ttl*driftFactor + 2ms.
func (c *Client) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.opts.driftFactor) + 2*time.Millisecond
}

// sentTTL returns the TTL actually sent (PX and PEXPIRE carry whole milliseconds, so
// ttl truncated to the millisecond), on which every deadline is computed. It rejects
// TTLs below 1ms and those that can never give a positive validity.
func (c *Client) sentTTL(ttl time.Duration) (time.Duration, error) {
	sent := ttl.Truncate(time.Millisecond)
	if sent < time.Millisecond {
		return 0, fmt.Errorf("redlock: ttl %v: must be at least 1ms", ttl)
	}
	if d := c.drift(sent); sent <= d {
		return 0, fmt.Errorf("redlock: ttl %v (%v sent): must exceed the drift allowance %v", ttl, sent, d)
	}
	return sent, nil
}

// Lock is one successful acquisition. Its methods are safe for concurrent use.
type Lock struct {
	resource string
	key      string
	value    string
	token    int64

	mu         sync.Mutex
	deadline   time.Time // local monotonic deadline; zero once lost or released
	extensions int
}

// Resource returns the resource name the lock was acquired for.
func (l *Lock) Resource() string { return l.resource }

// Key returns the Redis key holding the lock (prefix + resource).
func (l *Lock) Key() string { return l.key }

// Value returns the value unique to this acquisition: owner#<32 hex>[#token].
func (l *Lock) Value() string { return l.value }

// Token returns the fence token, strictly greater than that of every earlier
// acquisition of the resource (0 unless the client uses WithFencing).
func (l *Lock) Token() int64 { return l.token }

// Until returns the local deadline after which the lock must be presumed lost (zero
// once it was released or an extension failed).
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Validity returns the time left before the local deadline, measured on the monotonic
// clock; 0 once the deadline passed, the lock was released, or an extension failed.
func (l *Lock) Validity() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deadline.IsZero() {
		return 0
	}
	if d := time.Until(l.deadline); d > 0 {
		return d
	}
	return 0
}

// setDeadline records a new deadline (zero: lost).
func (l *Lock) setDeadline(t time.Time) {
	l.mu.Lock()
	l.deadline = t
	l.mu.Unlock()
}
