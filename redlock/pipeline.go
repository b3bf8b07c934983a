package redlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Auto-pipelining. Each master gets a fixed number of connections (pipes) taken from its
// pool when first needed. Callers never touch a connection: they queue a call on the pipe
// chosen by the key's hash and wait on their own channel with their own timer. Per pipe,
// one writer goroutine sends queued calls and flushes once per batch, and one reader
// goroutine receives replies in FIFO order (redigo allows one concurrent sender and one
// concurrent receiver per connection). Commands on one key always use the same pipe, so
// a release queued after a SET executes after it on that master.
//
// A stalled master cannot pile up goroutines or memory: the queues are bounded (a full
// queue fails the call at once), the reader waits at most the stall timeout for the
// oldest reply, after which the connection is closed, its pending calls fail, and the
// pipe redials lazily (on the next call) with exponential backoff.

// call is one command for one master. done is buffered by the caller; exactly one reply
// is delivered per call (nil done: the reply is discarded).
type call struct {
	cmd    string
	args   []any
	script *script // non-nil: cmd is EVALSHA, args[0] the sha; EVAL on NOSCRIPT
	master int
	sent   time.Time // set by the writer (per batch)
	done   chan<- reply
	gate   *retryGate // the operation it belongs to (nil: always retried after NOSCRIPT)

	hook func(v any, err error) // run by the reader before delivery (health replies)

	key    string // the key it acts on (cluster routing and redirection)
	asking bool   // send ASKING first (a cluster ASK redirection)
	hops   int    // cluster redirections followed so far
}

// reply is what one master did with one call.
type reply struct {
	master  int
	v       any
	err     error
	outcome Outcome // OK for a Redis reply (v), else Refused, Timeout or Failed with err
}

func (c *call) deliver(r reply) {
	if c.done == nil {
		return
	}
	r.master = c.master
	select {
	case c.done <- r:
	default: // cannot happen: one reply per call into a buffer sized for all of them
	}
}

func (c *call) fail(o Outcome, err error) { c.deliver(reply{outcome: o, err: err}) }

const (
	maxBatch       = 256 // calls per flush; below the pending bound so a full pipe always has flushed calls
	minBackoff     = 25 * time.Millisecond
	maxBackoff     = time.Second
	idleCheck      = time.Second // a connection idle this long is checked with PING before use
	pipeDialFactor = 4           // dial bounded by this many node timeouts
)

// master is one Redis master (a plain one, the resolved master of a Sentinel group, or
// one shard master of a cluster): where its connections come from, and its pipes.
type master struct {
	index int
	pipes []*pipe
	rs    *restartState // what its connections learned of its restarts
}

// newMaster starts the pipes of one master. redirect, when not nil, takes the calls
// answered with a cluster redirection (MOVED, ASK).
func newMaster(index int, src source, redirect func(*call, redis.Error) bool, o *options, quit <-chan struct{}, wg *sync.WaitGroup) *master {
	m := &master{index: index, pipes: make([]*pipe, o.conns), rs: &restartState{onChange: o.onRestart}}
	for i := range m.pipes {
		p := &pipe{
			rs:          m.rs,
			master:      index,
			src:         src,
			redirect:    redirect,
			reqs:        make(chan *call, o.queueLen),
			queueLen:    o.queueLen,
			stall:       o.stall,
			dialTimeout: pipeDialFactor * o.nodeTimeout,
			nodeTimeout: o.nodeTimeout,
			quit:        quit,
		}
		m.pipes[i] = p
		wg.Add(1)
		go func() { defer wg.Done(); p.writeLoop() }()
	}
	return m
}

// submit queues c on the pipe for key.
func (m *master) submit(key string, c *call) { m.pipeFor(key).submit(c) }

// ping sends a PING on every pipe (reply discarded): a broken connection is noticed
// and replaced (restart.go's probe).
func (m *master) ping(int) { m.warm() }

// warm makes every pipe connect now rather than on the first caller's command: a PING
// whose reply is discarded.
func (m *master) warm() {
	for _, p := range m.pipes {
		p.submit(&call{cmd: "PING", master: m.index})
	}
}

// pipeFor picks the pipe for a key (FNV-1a), so one key always uses one connection.
func (m *master) pipeFor(key string) *pipe {
	if len(m.pipes) == 1 {
		return m.pipes[0]
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return m.pipes[h%uint32(len(m.pipes))]
}

// pipe is one connection to a master with its writer and reader.
type pipe struct {
	master      int
	src         source
	redirect    func(*call, redis.Error) bool // cluster: follows MOVED and ASK (nil otherwise)
	reqs        chan *call
	queueLen    int
	stall       time.Duration
	dialTimeout time.Duration
	nodeTimeout time.Duration
	quit        <-chan struct{}
	rs          *restartState

	// Owned by the writer goroutine.
	hadConn   bool // a connection was made before: the next one follows a break
	conn      redis.Conn
	epoch     uint64 // the source's epoch the connection belongs to
	gen       *generation
	downUntil time.Time
	downErr   error
	backoff   time.Duration
	lastSend  time.Time
}

// generation is the state shared by the writer and the reader of one connection.
type generation struct {
	pending    chan *call    // sent (or about to be), in order; closed by the writer
	broken     chan struct{} // closed by the reader when the connection failed
	err        error         // why it broke; written before broken is closed
	readerDone chan struct{}
	gotReply   atomic.Bool // at least one reply arrived: the connection worked
}

// submit queues c without blocking; a full queue fails it at once.
func (p *pipe) submit(c *call) {
	select {
	case p.reqs <- c:
	default:
		c.fail(Failed, errQueueFull)
	}
}

func (p *pipe) writeLoop() {
	for {
		select {
		case c := <-p.reqs:
			p.batch(c)
		case <-p.quit:
			// Send what was queued before Close on the open connection (the release
			// of a failed acquisition, the stragglers of a Release that returned at
			// quorum), then wait for their replies. No new connection is dialled:
			// without one, queued calls fail with ErrClosed.
			for {
				select {
				case c := <-p.reqs:
					p.batch(c)
					continue
				default:
				}
				break
			}
			p.teardown(ErrClosed)
			return
		}
	}
}

// batch sends first and whatever else is queued (up to maxBatch), then flushes once.
func (p *pipe) batch(first *call) {
	if p.conn != nil {
		select {
		case <-p.gen.broken:
			p.teardown(p.gen.err)
		default:
			if !p.src.current(p.epoch) {
				p.teardown(errRetired) // the master moved (failover): reconnect at once
			}
		}
	}
	if p.conn != nil && len(p.gen.pending) == 0 && time.Since(p.lastSend) > idleCheck && !p.alive() {
		p.downUntil = time.Time{} // the connection died while idle (restart): redial at once
	}
	if p.conn == nil && !p.connect() {
		err := p.downErr
		if err == nil {
			err = ErrClosed
		}
		first.fail(Failed, err)
		return
	}
	now := time.Now()
	unflushed, yielded := false, false
	c := first
	for n := 0; ; n++ {
		c.sent = now
		if c.asking {
			a := &call{cmd: "ASKING", master: p.master, sent: now} // reply discarded
			if !p.enqueue(a, &unflushed) {
				c.fail(Failed, ErrClosed)
				return
			}
			if err := p.conn.Send(a.cmd); err != nil {
				c.fail(Failed, err)
				p.teardown(err)
				return
			}
		}
		if !p.enqueue(c, &unflushed) {
			return
		}
		if err := p.conn.Send(c.cmd, c.args...); err != nil {
			p.teardown(err)
			return
		}
		unflushed = true
		if n+1 >= maxBatch {
			break
		}
		select {
		case c = <-p.reqs:
			continue
		default:
		}
		if !yielded {
			// Let callers that are about to queue do so, so one flush carries them too.
			yielded = true
			runtime.Gosched()
			select {
			case c = <-p.reqs:
				continue
			default:
			}
		}
		break
	}
	p.lastSend = now
	if err := p.conn.Flush(); err != nil {
		p.teardown(err)
	}
}

// alive checks an idle connection with a PING before it carries callers' commands: a
// master that restarted closed it, and redigo only finds out on the next read, which
// would fail the first command sent after the restart. A dead connection is torn down.
// The check runs only after idleCheck without traffic, so it costs busy clients nothing.
func (p *pipe) alive() bool {
	done := make(chan reply, 1)
	c := &call{cmd: "PING", master: p.master, sent: time.Now(), done: done}
	unflushed := false
	if !p.enqueue(c, &unflushed) {
		return false
	}
	err := p.conn.Send(c.cmd)
	if err == nil {
		err = p.conn.Flush()
	}
	if err != nil {
		p.teardown(err)
		return false
	}
	p.lastSend = c.sent
	t := time.NewTimer(p.nodeTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		if r.outcome == OK || r.outcome == Refused { // an answer, even NOPERM, proves the link
			return true
		}
		p.teardown(r.err)
	case <-t.C:
		// Slow or stalled: keep the connection; the stall timeout decides its fate.
		return true
	}
	return false
}

// enqueue hands c to the reader before it is sent. When the reader is behind (pending
// full), it flushes what was sent so far and waits for room, or for the connection to
// break (then c fails and the connection is torn down).
func (p *pipe) enqueue(c *call, unflushed *bool) bool {
	g := p.gen
	select {
	case g.pending <- c:
		return true
	default:
	}
	if *unflushed {
		if err := p.conn.Flush(); err != nil {
			c.fail(Failed, err)
			p.teardown(err)
			return false
		}
		*unflushed = false
	}
	select {
	case g.pending <- c:
		return true
	case <-g.broken:
		c.fail(Failed, g.err)
		p.teardown(g.err)
	case <-p.quit:
		c.fail(Failed, ErrClosed)
		p.teardown(ErrClosed)
	}
	return false
}

// connect takes a connection from the pool unless the pipe is backing off after a failure.
func (p *pipe) connect() bool {
	select {
	case <-p.quit:
		p.downErr = ErrClosed
		return false
	default:
	}
	if time.Now().Before(p.downUntil) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout)
	conn, epoch, err := p.src.get(ctx)
	cancel()
	if err == nil {
		err = conn.Err()
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		p.down(fmt.Errorf("connect: %w", err))
		return false
	}
	p.conn, p.epoch = conn, epoch
	p.lastSend = time.Now()
	p.gen = &generation{
		pending:    make(chan *call, p.queueLen),
		broken:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	go p.readLoop(conn, p.gen)
	// Load the scripts first, so that EVALSHA works even for commands that execute
	// after this connection is gone (a stalled master reading its socket on resume).
	// Replies are discarded; a refusal (ACL) shows on the EVALSHA itself.
	unflushed := false
	for _, s := range scripts {
		c := &call{cmd: "SCRIPT", args: []any{"LOAD", s.src}, master: p.master, sent: time.Now()}
		if !p.enqueue(c, &unflushed) {
			return false
		}
		if err := conn.Send(c.cmd, c.args...); err != nil {
			p.teardown(err)
			return false
		}
		unflushed = true // so that a full pending list flushes these before waiting
	}
	// Then what the restart guard needs, read before any later command's reply.
	if p.rs != nil {
		for _, c := range p.rs.healthCalls(p.master) {
			c.sent = time.Now()
			if !p.enqueue(c, &unflushed) {
				return false
			}
			if err := conn.Send(c.cmd, c.args...); err != nil {
				p.teardown(err)
				return false
			}
			unflushed = true
		}
		if p.hadConn {
			p.rs.changed() // a new connection after a broken one: the master may have restarted
		}
		p.hadConn = true
	}
	return true
}

// down records a failure and schedules the next connection attempt.
func (p *pipe) down(err error) {
	switch {
	case p.backoff == 0:
		p.backoff = minBackoff
	case p.backoff < maxBackoff:
		p.backoff = min(2*p.backoff, maxBackoff)
	}
	p.downErr = err
	p.downUntil = time.Now().Add(p.backoff)
}

// teardown ends the current connection: the reader fails what is still pending, the
// connection goes back to the pool (closed when broken), and the pipe backs off.
func (p *pipe) teardown(cause error) {
	if p.conn == nil {
		return
	}
	g := p.gen
	close(g.pending)
	<-g.readerDone
	worked := g.gotReply.Load()
	p.conn.Close()
	p.conn, p.gen = nil, nil
	if worked {
		p.backoff = 0
	}
	if cause != ErrClosed && cause != errRetired {
		p.src.failed()
		p.down(cause)
	}
}

// readLoop matches replies to pending calls in order. A reply overdue by the stall
// timeout breaks the connection: the reader closes broken, fails every pending call
// and returns once the writer has closed pending.
func (p *pipe) readLoop(conn redis.Conn, g *generation) {
	defer close(g.readerDone)
	var brokenErr error
	for c := range g.pending {
		if brokenErr != nil {
			c.fail(Failed, brokenErr)
			continue
		}
		wait := p.stall - time.Since(c.sent)
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		v, err := redis.ReceiveWithTimeout(conn, wait)
		if err == nil {
			g.gotReply.Store(true)
			if c.hook != nil {
				c.hook(v, nil)
			}
			c.deliver(reply{v: v})
			continue
		}
		var rerr redis.Error
		if errors.As(err, &rerr) {
			g.gotReply.Store(true)
			if c.hook != nil {
				c.hook(nil, rerr)
			}
			if c.script != nil && c.cmd == "EVALSHA" && strings.HasPrefix(string(rerr), "NOSCRIPT") {
				p.resubmitAsEval(c)
				continue
			}
			if p.redirect != nil && p.redirect(c, rerr) {
				continue
			}
			if strings.HasPrefix(string(rerr), "READONLY") {
				p.src.failed() // a replica now: resolve the master again
			}
			c.deliver(reply{outcome: Refused, err: rerr})
			continue
		}
		var nerr interface{ Timeout() bool }
		if errors.As(err, &nerr) && nerr.Timeout() {
			brokenErr = fmt.Errorf("no reply for %v, connection closed", p.stall)
			c.fail(Timeout, brokenErr)
		} else {
			brokenErr = err
			c.fail(Failed, err)
		}
		g.err = brokenErr
		close(g.broken)
	}
}
