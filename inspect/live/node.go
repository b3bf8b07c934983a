package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/crashtest"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// invalidateChannel is where Redis sends a redirected client's invalidations (RESP2).
const invalidateChannel = "__redis__:invalidate"

// Backoff between reconnects of a feed: doubling from backoffMin to backoffMax; a
// connection that lived longer than backoffReset starts again from backoffMin.
const (
	backoffMin   = 100 * time.Millisecond
	backoffMax   = 5 * time.Second
	backoffReset = 10 * time.Second
	heartbeat    = time.Second            // a feed's connections are pinged this often
	recheckEvery = 10 * time.Second       // how often notify-keyspace-events is read again
	markEvery    = 50 * time.Millisecond  // how often the subscription marks what it delivered, where a mark is wanted
	markIdle     = 500 * time.Millisecond // and where none is (see Tracker.MarkWanted)
	markBusy     = time.Second            // marks are wanted while one was this recently
)

// sigKind is what a node tells the driver.
type sigKind uint8

const (
	sigInvalidate sigKind = iota // keys changed
	sigVerify                    // keys changed around a sync: settle them by read
	sigFlush                     // the whole database was flushed
	sigRead                      // a targeted read's answers
	sigReadFailed                // a targeted read got no answer
	sigSyncStart                 // a whole read of the node's keys begins
	sigSyncPage                  // a page of it
	sigSync                      // it ended
	sigGap                       // the feed was cut
	sigDegraded                  // the feed cannot run: polled instead
	sigMark                      // every change made before at has been delivered
	sigForce                     // an operator force-released keys[0] (a resource) through redlockctl
	sigChange                    // a keyspace notification named a change (op) of keys[0]
	sigSource                    // where the node's changes come from now (source; reason: why not keyspace)
)

// signal is one message from a node to the driver.
type signal struct {
	kind    sigKind
	n       *node
	at      time.Time
	keys    []string
	entries []Entry   // sigRead, sigSyncPage: parallel to keys
	count   int       // sigSync: keys read
	capped  bool      // sigSync: the read stopped at max_keys
	first   bool      // sigSync*: the node's first read (what was there before)
	from    time.Time // sigGap: last moment the feed was known whole; sigMark: when its answer was read
	reason  string    // sigGap, sigDegraded, sigSync, sigSource
	op      Op        // sigChange; sigVerify of a named change
	typed   bool      // sigRead: read where changes are named (see Tracker.ReadTyped)
	source  string    // sigSource
}

// node is one server the feed listens to: a plain master, a Sentinel group's current
// master, or one shard master of a cluster. It runs two goroutines: the feed (the
// SUBSCRIBE connection and the one that turned tracking on) and the reader (targeted
// reads the tracker asks for).
type node struct {
	mi      int    // the master entry it belongs to
	name    string // the entry's name, or name/addr for a cluster shard
	mc      config.MasterConfig
	addr    func(ctx context.Context) (string, error)
	owns    func(key string) bool // nil: every key of the entry
	foreign func(at time.Time)    // a cluster node's: a key owns refuses was seen at at
	dial    config.Dialer
	cfg     *config.Config
	timeout time.Duration
	poll    time.Duration // how often a degraded node is read whole
	out     chan<- signal
	pages   chan struct{} // a token per page of a whole read sent and not handled yet

	resumed bool // its first sync follows a gap (a cluster's restarted feeds)
	found   int  // the driver's: held lifecycles its whole read in progress found

	mu       sync.Mutex
	isPolled bool
	queue    []string // keys to read
	wake     chan struct{}
	current  string // the address the feed is connected to

	typed    atomic.Bool  // the feed hears keyspace notifications: reads wait for its marks
	marked   atomic.Int64 // send time of the latest PING the subscription answered (unix ns)
	markSent atomic.Int64 // when the last mark was sent (unix ns)
	want     *markWant    // its entry's: when the tracker wants the next
	subMu    sync.Mutex   // the subscription's sends: the feed's marks and the reader's
	sub      redis.Conn   // the subscription while it listens (nil otherwise)
}

// mark sends a PING carrying at (unix ns) on the subscription: its answer marks that
// every change made before it has been delivered (see listen). It reports false when
// the subscription is not listening.
func (n *node) mark(at int64) (bool, error) {
	n.subMu.Lock()
	defer n.subMu.Unlock()
	if n.sub == nil {
		return false, nil
	}
	if err := n.sub.Send("PING", strconv.FormatInt(at, 10)); err != nil {
		return false, err
	}
	if at > n.markSent.Load() {
		n.markSent.Store(at)
	}
	return true, n.sub.Flush()
}

// markDue reports whether the subscription is to be marked at ns: markIdle after the
// last mark, or at every markEvery where the tracker wants one (see
// Tracker.MarkWanted).
func (n *node) markDue(ns int64) bool {
	return MarkDue(ns, n.markSent.Load(), n.want.after.Load(), n.want.often.Load())
}

// MarkDue reports whether a master's subscription, last marked at last, is to be
// marked at ns, where the tracker wants a mark sent after after, or often (see
// Tracker.MarkWanted): markIdle after its last; at once where a mark sent after
// after is wanted; at every markEvery while the marks are wanted often (one came back
// late) or a decision wanted one within markBusy (a busy key's decisions each wait on
// marks: a mark already there saves the wait).
func MarkDue(ns, last, after int64, often bool) bool {
	return ns-last >= int64(markIdle) || often || after > last && ns >= after || ns-after < int64(markBusy)
}

// markWant is the driver's copy of Tracker.MarkWanted for one master entry, which its
// nodes read.
type markWant struct {
	after atomic.Int64
	often atomic.Bool
}

// setSub makes sub the connection mark sends on (nil: none).
func (n *node) setSub(sub redis.Conn) {
	n.subMu.Lock()
	n.sub = sub
	n.subMu.Unlock()
}

// degraded reports whether the node is polled instead of fed.
func (n *node) degraded() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isPolled
}

// ask queues a read of key (called by the driver; never blocks).
func (n *node) ask(key string) {
	n.mu.Lock()
	n.queue = append(n.queue, key)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *node) send(ctx context.Context, s signal) bool {
	s.n = n
	select {
	case n.out <- s:
		return true
	case <-ctx.Done():
		return false
	}
}

// syncPages is how many pages of a whole read may wait for the driver at once. The
// reader reads ahead of the driver by that much and no more: at start-up, five readers
// of 1M keys each outran the driver by hundreds of MB of pages waiting in the signal
// channel.
const syncPages = 8

// sendPage sends a page of a whole read once fewer than syncPages of the node's wait
// for the driver.
func (n *node) sendPage(ctx context.Context, s signal) bool {
	if n.pages != nil {
		select {
		case n.pages <- struct{}{}:
		case <-ctx.Done():
			return false
		}
	}
	if !n.send(ctx, s) {
		n.pageDone()
		return false
	}
	return true
}

// pageDone frees the token of a page sent by sendPage (the driver handled it).
func (n *node) pageDone() {
	if n.pages != nil {
		<-n.pages
	}
}

// prefixes are the BCAST prefixes for the configured patterns: each pattern's literal
// part before its first glob character, leaving out any that another one covers
// (Redis refuses overlapping prefixes). An empty result is every key.
func prefixes(patterns []string) []string {
	var ps []string
	for _, p := range patterns {
		if i := strings.IndexAny(p, `*?[\`); i >= 0 {
			p = p[:i]
		}
		if p == "" {
			return nil
		}
		ps = append(ps, p)
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var out []string
	for _, p := range ps {
		if len(out) == 0 || !strings.HasPrefix(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// matches reports whether key, which changed at at, is one of the configured
// patterns' (BCAST sends keys outside a user's ACL key patterns too: what is shown
// is filtered here) and of the node's slots. A key of the patterns in a slot the
// node's slot map gives another node is reported to n.foreign.
func (n *node) matches(key string, at time.Time) bool {
	if !n.ofPatterns(key) {
		return false
	}
	return n.ownsKey(key, at)
}

// ofPatterns reports whether key is one of the configured patterns'.
func (n *node) ofPatterns(key string) bool {
	for _, p := range n.cfg.Inspect.Patterns {
		if config.MatchGlob(p, key) {
			return true
		}
	}
	return false
}

// ownsKey reports whether key is in the node's slots (every key is, outside a
// cluster); one that is not, seen at at, is reported to n.foreign.
func (n *node) ownsKey(key string, at time.Time) bool {
	if n.owns == nil || n.owns(key) {
		return true
	}
	if n.foreign != nil {
		n.foreign(at)
	}
	return false
}

// runFeed keeps the node's feed up until ctx ends: connect, turn tracking on, read
// every key once (a sync), then pass invalidations on. A cut connection is a gap,
// then a reconnect after a backoff, and a new sync.
func (n *node) runFeed(ctx context.Context) {
	backoff := backoffMin
	first := true
	var lastWhole time.Time // the feed was whole up to here
	reported := false       // the gap since lastWhole was reported
	begun := time.Now()
	for ctx.Err() == nil {
		started := time.Now()
		before := lastWhole
		err := n.feed(ctx, first, &lastWhole)
		if lastWhole != before {
			reported = false // it synced again: a new outage is news
		}
		if ctx.Err() != nil {
			return
		}
		var denied *deniedError
		if errors.As(err, &denied) {
			n.mu.Lock()
			n.isPolled = true
			n.mu.Unlock()
			n.send(ctx, signal{kind: sigDegraded, at: time.Now(), reason: denied.Error()})
			n.runPolled(ctx)
			return
		}
		if !reported {
			// One gap per outage: the reconnects that fail after it are not news. A
			// master never reached is unseen from the feed's start.
			from := lastWhole
			if from.IsZero() {
				from = begun
			}
			n.send(ctx, signal{kind: sigGap, at: time.Now(), from: from, reason: describe(err)})
			reported = true
		}
		if !lastWhole.IsZero() {
			first = false
		}
		if time.Since(started) > backoffReset {
			backoff = backoffMin
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// deniedError is a command the server refuses (its ACL) or does not have: the feed
// cannot run there.
type deniedError struct {
	cmd string
	err error
}

func (e *deniedError) Error() string {
	if strings.Contains(e.err.Error(), "NOPERM") {
		return fmt.Sprintf("%s refused (%v): the user needs +%s", e.cmd, e.err, strings.ToLower(strings.ReplaceAll(e.cmd, " ", "|")))
	}
	return fmt.Sprintf("%s is not supported by this server (%v)", e.cmd, e.err)
}

func denied(cmd string, err error) error {
	var re redis.Error
	if errors.As(err, &re) && (strings.HasPrefix(string(re), "NOPERM") || strings.HasPrefix(string(re), "ERR unknown command") ||
		strings.HasPrefix(string(re), "ERR unknown subcommand")) {
		return &deniedError{cmd: cmd, err: err}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// feed runs one connection of the feed until it fails. lastWhole is advanced while
// every invalidation is known to arrive.
func (n *node) feed(ctx context.Context, first bool, lastWhole *time.Time) error {
	dctx, cancel := context.WithTimeout(ctx, 2*n.timeout+time.Second)
	addr, err := n.addr(dctx)
	if err != nil {
		cancel()
		return err
	}
	sub, err := n.dial(dctx, addr)
	if err != nil {
		cancel()
		return err
	}
	defer sub.Close()
	trk, err := n.dial(dctx, addr)
	cancel()
	if err != nil {
		return err
	}
	// trk must stay referenced while the feed runs: a dropped connection is closed by
	// its finalizer at the next GC, and tracking silently stops with it.
	defer trk.Close()
	n.typed.Store(false)
	n.marked.Store(0)
	id, err := redis.Int64(redis.DoWithTimeout(sub, n.timeout, "CLIENT", "ID"))
	if err != nil {
		return denied("CLIENT ID", err)
	}
	flags, plan, why, err := n.keyspace(sub)
	if err != nil {
		return err
	}
	if _, err := redis.DoWithTimeout(sub, n.timeout, "SUBSCRIBE", invalidateChannel); err != nil {
		return denied("SUBSCRIBE", err)
	}
	if plan != nil {
		if plan, why, err = n.subscribeKeyspace(sub, plan); err != nil {
			return err
		}
	}
	args := []any{"TRACKING", "on", "REDIRECT", id, "BCAST"}
	for _, p := range prefixes(n.cfg.Inspect.Patterns) {
		args = append(args, "PREFIX", p)
	}
	if _, err := redis.DoWithTimeout(trk, n.timeout, "CLIENT", args...); err != nil {
		err = denied("CLIENT TRACKING", err)
		var d *deniedError
		if plan == nil || !errors.As(err, &d) {
			return err
		}
		// The notifications alone: what they do not name is unseen.
		why = strings.TrimPrefix(why+"; ", "; ") + d.Error() + ": fed by keyspace notifications alone (changes they do not name are unseen)"
	}
	n.mu.Lock()
	n.current = addr
	n.mu.Unlock()
	source := SourceTracking
	if plan != nil {
		source = SourceKeyspace
	}
	if !n.send(ctx, signal{kind: sigSource, source: source, reason: why}) {
		return ctx.Err()
	}
	// Tracking is on: every change from here arrives. Read the keys whole, then mark
	// where the read ended in the stream (a PING on the subscription): changes before
	// the mark may or may not be in the read, and are settled by reading them again.
	count, capped, err := n.readAll(ctx, addr, first)
	if err != nil {
		return err
	}
	synced := time.Now()
	reason := "reconnected"
	if first {
		reason = "start"
	}
	if !n.send(ctx, signal{kind: sigSync, at: synced, count: count, capped: capped, first: first, reason: reason}) {
		return ctx.Err()
	}
	*lastWhole = synced
	if err := sub.Send("PING", "redlockctl-sync"); err != nil {
		return err
	}
	if err := sub.Flush(); err != nil {
		return err
	}
	return n.listen(ctx, addr, sub, trk, lastWhole, flags, plan)
}

// keyspace asks the master whether an operator has enabled keyspace notifications
// (CONFIG GET, on conn before it subscribes) and returns its setting (nil when it
// could not be read), how to hear them (nil when they cannot be used) and why not. An
// error is a failed connection; a refusal is only a reason.
func (n *node) keyspace(conn redis.Conn) (*string, *keyspacePlan, string, error) {
	v, err := redis.Strings(redis.DoWithTimeout(conn, n.timeout, "CONFIG", "GET", "notify-keyspace-events"))
	if err != nil {
		var d *deniedError
		if errors.As(denied("CONFIG GET", err), &d) {
			return nil, nil, d.Error(), nil
		}
		return nil, nil, "", fmt.Errorf("CONFIG GET notify-keyspace-events: %w", err)
	}
	if len(v) != 2 {
		return nil, nil, "", fmt.Errorf("CONFIG GET notify-keyspace-events: a reply of %d parts", len(v))
	}
	db := n.mc.DB
	if n.mc.Kind() == config.KindCluster {
		db = 0
	}
	plan, why := planKeyspace(v[1], db, n.cfg.Inspect.Patterns)
	if plan != nil {
		why = plan.note
	}
	return &v[1], plan, why, nil
}

// subscribeKeyspace subscribes sub to plan's channels. A refusal (the user's ACL
// channels) leaves the feed on tracking alone, and says why.
func (n *node) subscribeKeyspace(sub redis.Conn, plan *keyspacePlan) (*keyspacePlan, string, error) {
	args := make([]any, len(plan.args))
	for i, a := range plan.args {
		args[i] = a
	}
	if _, err := redis.DoWithTimeout(sub, n.timeout, plan.cmd, args...); err != nil {
		var d *deniedError
		if errors.As(denied(plan.cmd, err), &d) {
			return nil, fmt.Sprintf("%s %s refused (%v): the user needs the channels &%s* (or allchannels)", plan.cmd, plan.args[0], err, plan.prefix), nil
		}
		return nil, "", fmt.Errorf("%s %s: %w", plan.cmd, plan.args[0], err)
	}
	return plan, plan.note, nil
}

// listen passes invalidations on until a connection fails or ctx ends. One goroutine
// receives (without a deadline: a redigo connection whose read times out is closed);
// this one sends a PING on the subscription every markIdle, or every markEvery while
// the tracker wants marks (markDue), carrying its send time: its reply comes after
// every invalidation sent before it, and so marks how far the feed has delivered (a
// sigMark). A PING unanswered for heartbeat cuts the
// subscription; the tracking connection is pinged every heartbeat. flags is the
// master's notify-keyspace-events as read at connect (nil: it could not be read) and
// plan how its notifications are heard (nil: they are not): a change of the setting,
// read again every recheckEvery, ends the connection, and the next one follows it.
func (n *node) listen(ctx context.Context, addr string, sub, trk redis.Conn, lastWhole *time.Time, flags *string, plan *keyspacePlan) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	moved := make(chan error, 1)
	if n.mc.Kind() == config.KindSentinel {
		go n.watchMaster(ctx, addr, moved)
	}
	var answered atomic.Int64 // send time of the last PING answered (unix ns)
	answered.Store(time.Now().UnixNano())
	recvErr := make(chan error, 1)
	go func() {
		defer func() {
			if rec := recover(); rec != nil {
				recvErr <- fmt.Errorf("internal error, please report it: %v", rec)
			}
		}()
		beforeMark := true
		for {
			v, err := redis.ReceiveWithTimeout(sub, 0)
			if err == nil {
				err = n.onMessage(ctx, v, time.Now(), plan, &beforeMark, &answered)
			}
			if err != nil {
				recvErr <- err
				return
			}
		}
	}()
	defer func() {
		n.setSub(nil)
		sub.Close()
		<-recvErr
	}()
	n.setSub(sub)
	n.typed.Store(plan != nil)
	marks := time.NewTicker(markEvery)
	defer marks.Stop()
	var out []int64 // send times of the marks not answered yet, oldest first
	nextBeat := time.Now().Add(heartbeat)
	nextCheck := time.Now().Add(recheckEvery)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-recvErr:
			recvErr <- err // for the deferred wait
			return err
		case err := <-moved:
			return err
		case now := <-marks.C:
			for ans := answered.Load(); len(out) > 0 && out[0] <= ans; {
				out = out[1:] // answered in order
			}
			if len(out) > 0 && now.UnixNano()-out[0] > int64(heartbeat) {
				return fmt.Errorf("the subscription did not answer PING within %v", heartbeat)
			}
			if ns := time.Now().UnixNano(); n.markDue(ns) {
				if _, err := n.mark(ns); err != nil {
					return err
				}
				out = append(out, ns)
			}
			if now.Before(nextBeat) {
				continue
			}
			nextBeat = now.Add(heartbeat)
			// The tracking connection: if it is gone, so is tracking.
			if _, err := redis.DoWithTimeout(trk, n.timeout, "PING"); err != nil {
				return fmt.Errorf("tracking connection: %w", err)
			}
			if n.mc.Kind() == config.KindSentinel {
				rctx, cancel := context.WithTimeout(ctx, n.timeout)
				role, err := topology.Role(rctx, trk)
				cancel()
				if err == nil && role != "master" {
					err = fmt.Errorf("ROLE says %s: the group failed over", role)
				}
				if err != nil {
					return err
				}
			}
			if flags != nil && now.After(nextCheck) {
				nextCheck = now.Add(recheckEvery)
				v, err := redis.Strings(redis.DoWithTimeout(trk, n.timeout, "CONFIG", "GET", "notify-keyspace-events"))
				if err == nil && len(v) == 2 && v[1] != *flags {
					return fmt.Errorf("notify-keyspace-events changed from %q to %q: following it", *flags, v[1])
				}
			}
			*lastWhole = now
		}
	}
}

// watchMaster asks a Sentinel group's sentinels every heartbeat which node is the
// master, and reports on moved when they name another than addr. After a failover the
// old master says ROLE master until Sentinel demotes it (on its next INFO, up to 10 s
// later), while the clients already write to the new one: the feed must not stay there.
// A question the sentinels cannot answer leaves the feed where it is.
func (n *node) watchMaster(ctx context.Context, addr string, moved chan<- error) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 2*n.timeout+time.Second)
		now, err := n.addr(rctx)
		cancel()
		if err == nil && now != addr {
			moved <- fmt.Errorf("the sentinels name %s as the master now: the group failed over", now)
			return
		}
	}
}

// onMessage handles one message of the subscription.
func (n *node) onMessage(ctx context.Context, v any, now time.Time, plan *keyspacePlan, beforeMark *bool, answered *atomic.Int64) error {
	msg, ok := v.([]any)
	if !ok || len(msg) < 2 {
		return fmt.Errorf("unexpected reply on the subscription: %T", v)
	}
	kind, _ := msg[0].([]byte)
	switch string(kind) {
	case "pong":
		b, _ := msg[1].([]byte)
		if string(b) == "redlockctl-sync" {
			*beforeMark = false
			return nil
		}
		if sentAt, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			answered.Store(sentAt)
			for old := n.marked.Load(); sentAt > old && !n.marked.CompareAndSwap(old, sentAt); old = n.marked.Load() {
			}
			n.send(ctx, signal{kind: sigMark, at: time.Unix(0, sentAt), from: now})
		}
		return nil
	case "message", "pmessage":
	default:
		return nil // subscribe confirmations
	}
	if len(msg) < 3 || string(kind) == "pmessage" && len(msg) < 4 {
		return fmt.Errorf("a %s of %d parts on the subscription", kind, len(msg))
	}
	channel, _ := msg[1].([]byte)
	if string(kind) == "pmessage" || string(channel) != invalidateChannel {
		return n.onNotification(ctx, msg, now, plan, *beforeMark)
	}
	if msg[2] == nil {
		n.send(ctx, signal{kind: sigFlush, at: now})
		return nil
	}
	list, ok := msg[2].([]any)
	if !ok {
		return fmt.Errorf("an invalidation that is not a list of keys: %T", msg[2])
	}
	keys := make([]string, 0, len(list))
	for _, k := range list {
		if b, ok := k.([]byte); ok && n.matches(string(b), now) {
			keys = append(keys, string(b))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	kindOut := sigInvalidate
	if *beforeMark {
		kindOut = sigVerify
	}
	n.send(ctx, signal{kind: kindOut, at: now, keys: keys})
	return nil
}

// onNotification handles a keyspace notification (a message or pmessage msg of the
// subscription): a change of a matching key, named. Before the sync's mark it is
// settled by a read, like an invalidation.
func (n *node) onNotification(ctx context.Context, msg []any, now time.Time, plan *keyspacePlan, beforeMark bool) error {
	if plan == nil {
		return fmt.Errorf("a message on a channel the feed did not subscribe to: %q", msg[1])
	}
	channel, payload := msg[1], msg[2]
	if len(msg) == 4 {
		channel, payload = msg[2], msg[3]
	}
	c, _ := channel.([]byte)
	p, _ := payload.([]byte)
	key, op, ok := plan.parse(string(c), string(p))
	if !ok || !n.matches(key, now) {
		return nil
	}
	kind := sigChange
	if beforeMark {
		kind = sigVerify
	}
	n.send(ctx, signal{kind: kind, at: now, keys: []string{key}, op: op})
	return nil
}

// runPolled reads a node whose feed cannot run every poll interval, until ctx ends:
// each read is a sync, and the tracker infers the changes between two of them.
func (n *node) runPolled(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, 2*n.timeout+time.Second)
		addr, err := n.addr(dctx)
		cancel()
		if err == nil {
			if count, capped, err := n.readAll(ctx, addr, first); err == nil {
				n.send(ctx, signal{kind: sigSync, at: time.Now(), count: count, capped: capped, first: first, reason: "degraded: polled"})
				first = false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.poll):
		}
	}
}

// runReader answers the tracker's reads until ctx ends, over a connection of its own
// to where the feed is connected.
func (n *node) runReader(ctx context.Context) {
	var conn redis.Conn
	var connAddr string
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		for {
			n.mu.Lock()
			keys := n.queue
			n.queue = nil
			addr := n.current
			n.mu.Unlock()
			if len(keys) == 0 {
				break
			}
			crashtest.Point("feed")
			if conn != nil && connAddr != addr {
				conn.Close()
				conn = nil
			}
			if conn == nil && addr != "" {
				dctx, cancel := context.WithTimeout(ctx, n.timeout)
				c, err := n.dial(dctx, addr)
				cancel()
				if err == nil {
					conn, connAddr = c, addr
				}
			}
			var entries []Entry
			err := errors.New("no connection")
			typed := n.typed.Load()
			if conn != nil {
				entries, err = readKeys(conn, keys, n.timeout)
			}
			if err == nil && typed && !n.waitMark(ctx) {
				err = errors.New("the subscription did not mark the read")
			}
			if err != nil {
				if conn != nil {
					conn.Close()
					conn = nil
				}
				n.send(ctx, signal{kind: sigReadFailed, at: time.Now(), keys: keys, reason: describe(err)})
				continue
			}
			n.send(ctx, signal{kind: sigRead, at: time.Now(), keys: keys, entries: entries, typed: typed})
		}
	}
}

// waitMark marks the subscription (after a read's answer came) and waits for the
// answer: every notification made before the server served the read is then in the
// driver's channel, ahead of the read (see Tracker.ReadTyped). It gives up after a
// heartbeat: the subscription is then being cut.
func (n *node) waitMark(ctx context.Context) bool {
	since := time.Now().UnixNano()
	if ok, err := n.mark(since); !ok || err != nil {
		return false
	}
	end := time.Now().Add(heartbeat + markEvery)
	for n.marked.Load() < since {
		if ctx.Err() != nil || time.Now().After(end) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// readKeys reads keys with the key reader the poller and admin use (poll.ReadKeys:
// TYPE, PTTL and GET, a hash's or sorted set's fields, a Redisson lock's companions),
// within timeout. Each entry's ReadAt is when the reads were sent: a deadline from it
// is never later than the server's, however long the reply took, so that an expiry is
// never taken for a release. A hash or sorted set's Value is its holder where a
// decoder recognises it (locks.See), and its fields go with it.
func readKeys(conn redis.Conn, keys []string, timeout time.Duration) ([]Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent := time.Now()
	reads, err := poll.ReadKeys(poll.RedigoPipe(ctx, conn), keys)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, len(keys))
	for i, r := range reads {
		e := r.Entry
		entries[i] = Entry{Present: e.Present(), Type: e.Type, PTTLMs: e.PTTLMs, Fields: e.Fields, ReadAt: sent.UnixNano(),
			Value: locks.See(e, r.Related, sent).Value}
		if !entries[i].Present {
			entries[i].PTTLMs = -2
		}
	}
	return entries, nil
}

// readAll reads every key of the configured patterns on addr (SCAN, then GET and
// PTTL a page at a time), at most max_keys, and passes each page on to the tracker as
// it is read (sigSyncStart, then sigSyncPage): a million keys are never all in
// memory at once. It returns how many keys it read and whether it stopped at
// max_keys; the caller ends the read (sigSync). first is the node's first read.
func (n *node) readAll(ctx context.Context, addr string, first bool) (int, bool, error) {
	dctx, cancel := context.WithTimeout(ctx, n.timeout)
	conn, err := n.dial(dctx, addr)
	cancel()
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	if !n.send(ctx, signal{kind: sigSyncStart, first: first}) {
		return 0, false, ctx.Err()
	}
	read := 0
	limit := n.cfg.Inspect.MaxKeys
	count := strconv.Itoa(max(n.cfg.Inspect.ScanCount, 100))
	for _, pat := range n.cfg.Inspect.Patterns {
		cursor := "0"
		for {
			if ctx.Err() != nil {
				return 0, false, ctx.Err()
			}
			v, err := redis.Values(redis.DoWithTimeout(conn, n.timeout, "SCAN", cursor, "MATCH", pat, "COUNT", count))
			if err != nil {
				return 0, false, denied("SCAN", err)
			}
			if len(v) != 2 {
				return 0, false, fmt.Errorf("SCAN: a reply of %d parts", len(v))
			}
			cursor, _ = redis.String(v[0], nil)
			page, _ := redis.Strings(v[1], nil)
			keys := page[:0]
			at := time.Now()
			for _, k := range page {
				if n.ownsKey(k, at) {
					keys = append(keys, k)
				}
			}
			if len(keys) > 0 {
				entries, err := readKeys(conn, keys, n.timeout)
				if err != nil {
					return 0, false, err
				}
				if !n.sendPage(ctx, signal{kind: sigSyncPage, at: time.Now(), keys: keys, entries: entries, first: first}) {
					return 0, false, ctx.Err()
				}
				read += len(keys)
			}
			if limit > 0 && read >= limit {
				return read, true, nil
			}
			if cursor == "0" {
				break
			}
		}
	}
	return read, false, nil
}

// clusterOwns returns whether a key's slot is in ranges.
func clusterOwns(ranges [][2]int) func(string) bool {
	return func(key string) bool {
		s := topology.Slot(key)
		for _, r := range ranges {
			if s >= r[0] && s <= r[1] {
				return true
			}
		}
		return false
	}
}

// describe says what an error was, in the words of errkind.
func describe(err error) string {
	return errkind.Describe(errkind.Of(err), err.Error())
}
