package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/topology"
)

// maxRedirects bounds the MOVED/ASK redirections one call follows.
const maxRedirects = 5

// cluster is a Redis Cluster used as one Redlock instance. Each call goes to the pipes
// of the shard master owning its key's slot (per shard, the same pipelining as a plain
// master). The slot map is read in the background at once and again after a MOVED or a
// broken shard connection; calls for slots with no known owner wait (in a bounded
// queue) for the next refresh.
type cluster struct {
	index int
	cfg   Cluster
	o     *options
	quit  <-chan struct{}
	dial  topology.Dialer

	mu      sync.RWMutex
	owners  []string           // slot -> shard master address; nil before the first discovery
	shards  map[string]*master // pipes per shard master address
	closed  bool               // no new shard pipes (Close has begun)
	lastErr error              // why the last refresh failed
	pipes   sync.WaitGroup     // the shard pipes' goroutines

	parked chan *call    // calls waiting for a slot owner
	kick   chan struct{} // refresh request
}

func newCluster(index int, cfg Cluster, o *options, quit <-chan struct{}, wg *sync.WaitGroup) *cluster {
	opts := dialOptions(o, cfg.DialOptions)
	cl := &cluster{
		index: index,
		cfg:   cfg,
		o:     o,
		quit:  quit,
		dial: func(ctx context.Context, addr string) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, opts...)
		},
		shards: map[string]*master{},
		parked: make(chan *call, o.queueLen),
		kick:   make(chan struct{}, 1),
	}
	cl.refreshSoon()
	wg.Add(1)
	go func() { defer wg.Done(); cl.run() }()
	return cl
}

// submit routes c to the shard owning key's slot, or parks it until the slot map is known.
func (cl *cluster) submit(key string, c *call) {
	c.key = key
	cl.mu.RLock()
	addr := ""
	if cl.owners != nil {
		addr = cl.owners[topology.Slot(key)]
	}
	cl.mu.RUnlock()
	if addr == "" {
		select {
		case cl.parked <- c:
			cl.refreshSoon()
		default:
			c.fail(Failed, errQueueFull)
		}
		return
	}
	cl.send(addr, c)
}

// send queues c on the pipes of the shard master at addr.
func (cl *cluster) send(addr string, c *call) {
	m := cl.shard(addr)
	if m == nil {
		c.fail(Failed, ErrClosed)
		return
	}
	m.submit(c.key, c)
}

// shard returns the pipes of the shard master at addr, starting them if needed (nil
// once Close has begun).
func (cl *cluster) shard(addr string) *master {
	cl.mu.RLock()
	m := cl.shards[addr]
	cl.mu.RUnlock()
	if m != nil {
		return m
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if m = cl.shards[addr]; m == nil && !cl.closed {
		m = newMaster(cl.index, shardSource{addr: addr, cl: cl}, cl.redirect, cl.o, cl.quit, &cl.pipes)
		cl.shards[addr] = m
	}
	return m
}

// redirect follows a MOVED (the slot has a new owner: remember it, refresh the map) or
// an ASK (the slot is being migrated and the key is on the target: send ASKING and the
// command there, once). Like a NOSCRIPT retry (see resubmitAsEval), a redirected call
// is queued only while its operation still waits for it, so it never runs after the
// caller's next command on the key; the release script is always followed.
func (cl *cluster) redirect(c *call, e redis.Error) bool {
	kind, slot, addr, ok := parseRedirect(string(e))
	if !ok {
		return false
	}
	if c.hops >= maxRedirects {
		c.deliver(reply{outcome: Refused, err: fmt.Errorf("%w (after %d redirections)", e, c.hops)})
		return true
	}
	if kind == "MOVED" {
		cl.mu.Lock()
		if cl.owners != nil {
			cl.owners[slot] = addr
		}
		cl.mu.Unlock()
		cl.refreshSoon()
	}
	if c.gate != nil {
		c.gate.mu.Lock()
		defer c.gate.mu.Unlock()
		if c.gate.closed {
			c.deliver(reply{outcome: Refused, err: fmt.Errorf("%w: redirected after the operation ended, not followed", e)})
			return true
		}
	}
	c.hops++
	c.asking = kind == "ASK"
	cl.send(addr, c)
	return true
}

// parseRedirect reads "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381".
func parseRedirect(s string) (kind string, slot int, addr string, ok bool) {
	f := strings.Fields(s)
	if len(f) != 3 || f[0] != "MOVED" && f[0] != "ASK" {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || n >= topology.Slots {
		return "", 0, "", false
	}
	return f[0], n, f[2], true
}

func (cl *cluster) refreshSoon() {
	select {
	case cl.kick <- struct{}{}:
	default:
	}
}

// run refreshes the slot map on request and routes parked calls; on Close it waits for
// the shard pipes.
func (cl *cluster) run() {
	for {
		select {
		case <-cl.quit:
			cl.mu.Lock()
			cl.closed = true
			cl.mu.Unlock()
			for {
				select {
				case c := <-cl.parked:
					c.fail(Failed, ErrClosed)
					continue
				default:
				}
				break
			}
			cl.pipes.Wait()
			return
		case <-cl.kick:
			cl.refresh()
			cl.unpark()
		}
	}
}

// unpark routes the parked calls; those whose slot still has no owner fail with the
// reason the last refresh gave.
func (cl *cluster) unpark() {
	for {
		select {
		case c := <-cl.parked:
			cl.mu.RLock()
			addr, why := "", cl.lastErr
			if cl.owners != nil {
				addr = cl.owners[topology.Slot(c.key)]
			}
			cl.mu.RUnlock()
			if addr != "" {
				cl.send(addr, c)
				continue
			}
			if why == nil {
				why = fmt.Errorf("slot %d is served by no shard", topology.Slot(c.key))
			}
			c.fail(Failed, why)
		default:
			return
		}
	}
}

// refresh reads the slot map from the first node that answers. The known shard masters
// and the seeds are asked at once, each bounded by its own timeout, so a paused node
// delays nothing: the first complete answer wins and the other requests are cancelled.
func (cl *cluster) refresh() {
	cl.mu.RLock()
	var addrs []string
	seen := map[string]bool{}
	for a := range cl.shards {
		addrs = append(addrs, a)
		seen[a] = true
	}
	cl.mu.RUnlock()
	for _, a := range cl.cfg.Seeds {
		if !seen[a] {
			addrs = append(addrs, a)
		}
	}
	limit := max(200*time.Millisecond, pipeDialFactor*cl.o.nodeTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	type answer struct {
		shards []topology.Shard
		err    error
	}
	answers := make(chan answer, len(addrs)) // buffered: late answers never block
	for _, a := range addrs {
		go func() {
			shards, err := topology.Discover(ctx, cl.dial, []string{a})
			answers <- answer{shards, err}
		}()
	}
	var errs []error
	for range addrs {
		r := <-answers
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		cancel()
		owners := topology.Owners(r.shards)
		cl.mu.Lock()
		cl.owners, cl.lastErr = owners, nil
		cl.mu.Unlock()
		for _, sh := range r.shards {
			if m := cl.shard(sh.Master); m != nil {
				m.warm() // connect to new shards before their first command
			}
		}
		return
	}
	cl.mu.Lock()
	cl.lastErr = fmt.Errorf("cluster slot map: %w", errors.Join(errs...))
	cl.mu.Unlock()
}

// shardSource dials one shard master; a broken connection asks for a slot map refresh
// (the shard may have failed over).
type shardSource struct {
	addr string
	cl   *cluster
}

func (s shardSource) get(ctx context.Context) (redis.Conn, uint64, error) {
	conn, err := s.cl.dial(ctx, s.addr)
	return conn, 0, err
}

func (shardSource) current(uint64) bool { return true }
func (s shardSource) failed()           { s.cl.refreshSoon() }
