// Package sim is a deterministic simulator of the world the live feed watches: Redis
// masters with event loops that deliver CLIENT TRACKING BCAST invalidations the way
// Redis does, lock clients that log what they did, and a checker that holds the feed's
// events against those logs. The feed's Tracker runs unchanged on the simulator's
// clock; only the connections around it (the subscription, its marks, the reads it
// asks for) are simulated. It is for tests: `go test ./inspect/live/sim` runs many
// seeded schedules, `make sim SEEDS=N` more, and a failing seed replays exactly.
//
// The server's semantics, as Redis 7 has them:
//   - an event-loop iteration runs every command that has arrived (a pipelined write
//     runs whole in one), then, in beforeSleep, sends one invalidation with every key
//     changed in the iteration, each once, in byte order, before the iteration's
//     replies;
//   - SET NX that fails, a compare-and-delete or PEXPIRE that finds another value
//     change nothing and send nothing; PEXPIRE that succeeds invalidates like a set;
//   - a key past its deadline is expired lazily when a command touches it, and actively
//     by the cron every 100 ms, both invalidating it;
//   - the subscription's messages (invalidations, PING replies) come in order; replies
//     on other connections come with their own latency, so a read's reply and an
//     invalidation sent in the same iteration may arrive either way round.
package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// epoch is the simulated clock's start (unix ns): any fixed instant well after 1970, so
// that no time reads as "unknown" (0).
const epoch = int64(1_800_000_000) * int64(time.Second)

// Driver constants, as the feed's node has them.
const (
	markEvery = 50 * time.Millisecond  // the subscription may be marked this often (see live.MarkDue)
	cronEvery = 100 * time.Millisecond // Redis's hz 10: the active expiry cycle
)

// World is one schedule being run.
type World struct {
	now     int64
	seq     uint64
	queue   evHeap
	rng     *rand.Rand
	masters []*Master
	q       int
	tr      *live.Tracker
	tick    int64 // when the tracker's next timer is armed (0: none)
	// Events is what the feed emitted, in order.
	Events []live.Event
	// Log is the clients' own record of what they did.
	Log Log
	// Reads counts the key reads the tracker asked for (one key on one master each):
	// what the feed costs the servers beyond tracking itself.
	Reads int
	// Trace, when not nil, gets one line per step (for a failing seed's replay).
	Trace   func(at int64, format string, args ...any)
	stopped bool  // clients start nothing new
	feedOff int64 // the feed is off its core until then (see FeedStall)
	stampAt int64 // what the feed handles now arrived then (0: now)
	feedLag int64 // see Schedule.FeedLag
	// FeedSkew (see toFeedFrom): its draws, and when each master's last delivery is
	// handled.
	feedSkew int64
	skewing  bool
	skewRng  *rand.Rand
	skewLast []int64
	// keyspace: the masters publish keyspace notifications (Eg$xe), and the feed
	// hears them beside tracking; its reads then wait for a mark (see markThen).
	keyspace bool
}

type ev struct {
	at  int64
	seq uint64
	fn  func()
}

type evHeap []ev

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(ev)) }
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// at runs fn at time t (never before now).
func (w *World) at(t int64, fn func()) {
	w.seq++
	heap.Push(&w.queue, ev{at: max(t, w.now), seq: w.seq, fn: fn})
}

// after runs fn d from now.
func (w *World) after(d time.Duration, fn func()) { w.at(w.now+int64(d), fn) }

func (w *World) trace(format string, args ...any) {
	if w.Trace != nil {
		w.Trace(w.now, format, args...)
	}
}

// run processes events until the queue is empty or the clock passes end.
func (w *World) run(end int64) {
	for len(w.queue) > 0 {
		e := heap.Pop(&w.queue).(ev)
		if e.at > end {
			return
		}
		w.now = e.at
		e.fn()
	}
}

// Latency is a link's one-way delay: base plus a uniform jitter.
type Latency struct{ Base, Jitter time.Duration }

func (l Latency) sample(r *rand.Rand) int64 {
	d := int64(l.Base)
	if l.Jitter > 0 {
		d += r.Int64N(int64(l.Jitter))
	}
	return d
}

// conn is one client connection to one master: requests arrive in order, and so do
// replies.
type conn struct {
	m               *Master
	lat             Latency
	lastIn, lastOut int64
	// rng draws its latencies (nil: the world's). The feed's reader has its own, so
	// that what the feed reads does not move the clients' draws: a seed is the same
	// clients' schedule whatever the feed under test reads.
	rng *rand.Rand
}

func (c *conn) sample() int64 {
	if c.rng != nil {
		return c.lat.sample(c.rng)
	}
	return c.lat.sample(c.m.w.rng)
}

// send delivers a request of ops to the master, and the replies to reply.
func (c *conn) send(ops []op, reply func([]result)) {
	w := c.m.w
	c.lastIn = max(c.lastIn, w.now+c.sample())
	b := &batch{ops: ops, reply: reply, c: c}
	w.at(c.lastIn, func() { c.m.arrive(b) })
}

// Val is one key's value on one master.
type Val struct {
	Type     string // "string" or "hash"
	Value    string // a string's value
	Field    string // a hash's (only) field
	ExpireAt int64  // unix ns; 0: no expiry
}

// Master is one simulated Redis master.
type Master struct {
	w        *World
	i        int
	data     map[string]*Val
	pending  []*batch
	iterAt   int64 // when the next iteration runs (0: none scheduled)
	busy     int64 // until when the current iteration runs
	cost     time.Duration
	changed  []string
	sub      Latency // the subscription's link
	subLast  int64
	subUp    bool
	gapFrom  int64 // when its subscription went down (0: up)
	reader   *conn // the feed's read connection
	readQ    []string
	reading  bool
	clientLt Latency  // the clients' links
	log      []change // the last second's writes (see failover)
	notes    []note   // the iteration's keyspace notifications
	marked   int64    // the send time of the last mark answered
	markSent int64    // the send time of the last mark
	offUntil int64    // off its core until then (see Stall)
	// Over its maxmemory from evictFrom to evictTo (see Fault.Evicting).
	evictFrom, evictTo int64
	evictRng           *rand.Rand
}

type batch struct {
	ops   []op
	reply func([]result)
	c     *conn
	sub   bool // on the subscription (a mark's PING): its reply comes on the subscription link
}

// op is one command, run by the master at its iteration.
type op func(m *Master) result

// result is an op's reply.
type result struct {
	ok    bool
	n     int64
	entry live.Entry
}

func (m *Master) arrive(b *batch) {
	m.pending = append(m.pending, b)
	if m.iterAt == 0 {
		m.iterAt = max(m.w.now, m.busy)
		m.w.at(m.iterAt, m.iterate)
	}
}

// iterate is one event-loop iteration: every request that has arrived, then the
// invalidation, then the replies.
func (m *Master) iterate() {
	w := m.w
	if w.now < m.offUntil {
		m.iterAt = m.offUntil // what arrives meanwhile waits for it
		w.at(m.offUntil, m.iterate)
		return
	}
	m.iterAt = 0
	batches := m.pending
	m.pending = nil
	n := 0
	results := make([][]result, len(batches))
	for i, b := range batches {
		for _, o := range b.ops {
			m.maybeEvict()
			results[i] = append(results[i], o(m))
			n++
		}
	}
	m.busy = w.now + int64(m.cost)*int64(max(n, 1))
	end := m.busy
	for _, n := range m.notes {
		// Published as the command runs: ahead of the iteration's invalidation.
		m.toSub(end, func() { w.change(m, n) })
	}
	m.notes = m.notes[:0]
	if len(m.changed) > 0 {
		keys := slices.Clone(m.changed)
		slices.Sort(keys)
		keys = slices.Compact(keys)
		m.changed = m.changed[:0]
		m.toSub(end, func() { w.invalidate(m, keys) })
	}
	for i, b := range batches {
		r, b := results[i], b
		if b.sub {
			m.toSub(end, func() { b.reply(r) })
			continue
		}
		b.c.lastOut = max(b.c.lastOut, end+b.c.sample())
		w.at(b.c.lastOut, func() { b.reply(r) })
	}
	if len(m.pending) > 0 && m.iterAt == 0 {
		m.iterAt = end
		w.at(end, m.iterate)
	}
}

// maybeEvict evicts one of m's keys now and then while it is over its maxmemory (see
// Fault.Evicting): Redis runs its evictions before a command, and each evicted key is
// invalidated with the iteration's changes.
func (m *Master) maybeEvict() {
	now := m.w.now
	if m.evictRng == nil || now < m.evictFrom || now >= m.evictTo || len(m.data) == 0 || m.evictRng.Float64() >= evictShare {
		return
	}
	keys := slices.Sorted(maps.Keys(m.data))
	k := keys[m.evictRng.IntN(len(keys))]
	m.w.trace("m%d evicts %s", m.i, k)
	m.put(k, nil, live.OpEvicted)
	m.w.Log.Evicted = append(m.w.Log.Evicted, Eviction{Master: m.i, Key: k, At: now})
}

// toSub sends fn's message on the subscription at t: delivered in order, or lost while
// the subscription is down.
func (m *Master) toSub(t int64, fn func()) {
	if !m.subUp {
		return
	}
	m.subLast = max(m.subLast, t+m.sub.sample(m.w.rng))
	m.w.at(m.subLast, func() {
		if m.subUp {
			fn()
		}
	})
}

// touch expires key lazily if it is past its deadline, and returns what is there.
func (m *Master) touch(key string) *Val {
	v := m.data[key]
	if v != nil && v.ExpireAt != 0 && m.w.now > v.ExpireAt {
		m.put(key, nil, live.OpExpired)
		return nil
	}
	return v
}

// put changes key to v (nil: deletes it), for the iteration's invalidation and for a
// replica's view (see failover).
func (m *Master) put(key string, v *Val, ops ...live.Op) {
	m.log = append(m.log, change{at: m.w.now, key: key, prev: m.data[key]})
	if m.w.Trace != nil {
		if v == nil {
			m.w.trace("m%d   = del %s", m.i, key)
		} else {
			m.w.trace("m%d   = %s %s=%q exp %.1fms", m.i, ops, key, v.Value, float64(v.ExpireAt-epoch)/1e6)
		}
	}
	if m.w.keyspace {
		for _, op := range ops {
			m.notes = append(m.notes, note{key, op})
		}
	}
	if v == nil {
		delete(m.data, key)
	} else {
		m.data[key] = v
	}
	m.changed = append(m.changed, key)
}

// note is a keyspace notification: a change named.
type note struct {
	key string
	op  live.Op
}

// change is one write, with what it replaced.
type change struct {
	at   int64
	key  string
	prev *Val
}

func (m *Master) cron() {
	m.arrive(&batch{ops: []op{func(m *Master) result {
		var due []string
		for k, v := range m.data {
			if v.ExpireAt != 0 && m.w.now > v.ExpireAt {
				due = append(due, k)
			}
		}
		slices.Sort(due) // in one order, for a seed to replay exactly
		for _, k := range due {
			m.put(k, nil, live.OpExpired)
		}
		// The replica's view needs the last second of writes at most.
		i := 0
		for i < len(m.log) && m.log[i].at < m.w.now-int64(time.Second) {
			i++
		}
		m.log = m.log[i:]
		return result{}
	}}, reply: func([]result) {}, c: &conn{m: m}})
	m.w.after(cronEvery, m.cron)
}

// Commands.

func setNX(key, value string, ttl time.Duration) op {
	return func(m *Master) result {
		if m.touch(key) != nil {
			return result{}
		}
		m.put(key, &Val{Type: "string", Value: value, ExpireAt: m.w.now + int64(ttl)}, live.OpSet, live.OpExpire)
		return result{ok: true}
	}
}

// hsetNX is a hash lock's acquisition (Redisson's script: the holder field and a TTL).
func hsetNX(key, field string, ttl time.Duration) op {
	return func(m *Master) result {
		if m.touch(key) != nil {
			return result{}
		}
		m.put(key, &Val{Type: "hash", Field: field, ExpireAt: m.w.now + int64(ttl)}, live.OpExpire) // HSET is not named (no h)
		return result{ok: true}
	}
}

func holds(v *Val, value string) bool {
	return v != nil && (v.Type == "string" && v.Value == value || v.Type == "hash" && v.Field == value)
}

// delIf is an owner-checked release (GET == value, then DEL, in one script).
func delIf(key, value string) op {
	return func(m *Master) result {
		if !holds(m.touch(key), value) {
			return result{}
		}
		m.put(key, nil, live.OpDel)
		return result{ok: true}
	}
}

// del is an operator's DEL.
func del(key string) op {
	return func(m *Master) result {
		if m.touch(key) == nil {
			return result{}
		}
		m.put(key, nil, live.OpDel)
		return result{ok: true}
	}
}

// pexpireIf is an owner-checked extension.
func pexpireIf(key, value string, ttl time.Duration) op {
	return func(m *Master) result {
		v := m.touch(key)
		if !holds(v, value) {
			return result{}
		}
		nv := *v
		nv.ExpireAt = m.w.now + int64(ttl)
		m.put(key, &nv, live.OpExpire)
		return result{ok: true}
	}
}

// getInt reads a counter (a fence).
func getInt(key string) op {
	return func(m *Master) result {
		var n int64
		if v := m.touch(key); v != nil {
			for _, c := range v.Value {
				n = n*10 + int64(c-'0')
			}
		}
		return result{n: n}
	}
}

// fencedSet is the fenced acquisition's script: the lock and its counter, where the
// lock is free and the counter below the token.
func fencedSet(key, value string, token int64, ttl time.Duration) op {
	return func(m *Master) result {
		fence := key + ":fence"
		cur := getInt(fence)(m).n
		if m.touch(key) != nil || cur >= token {
			return result{n: cur}
		}
		m.put(key, &Val{Type: "string", Value: value, ExpireAt: m.w.now + int64(ttl)}, live.OpSet, live.OpExpire)
		m.put(fence, &Val{Type: "string", Value: itoa(token)}, live.OpSet)
		return result{ok: true}
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// read is the feed's read of a key: GET and PTTL (a hash's holder field for a hash).
func read(key string, sentAt int64) op {
	return func(m *Master) result {
		v := m.touch(key)
		e := live.Entry{PTTLMs: -2, ReadAt: sentAt}
		if v != nil {
			e = live.Entry{Present: true, Type: v.Type, Value: v.Value, PTTLMs: -1, ReadAt: sentAt}
			if v.Type == "hash" {
				e.Value, e.Fields = v.Field, map[string]string{v.Field: "1"}
			}
			if v.ExpireAt != 0 {
				e.PTTLMs = (v.ExpireAt - m.w.now) / int64(time.Millisecond)
			}
		}
		return result{entry: e}
	}
}

// The feed's side.

// invalidate is an invalidation's arrival at the feed.
func (w *World) invalidate(m *Master, keys []string) {
	w.toFeedFrom(m.i, func() {
		w.trace("m%d inv %v", m.i, keys)
		t := time.Unix(0, w.stamp())
		for _, k := range keys {
			w.tr.Invalidate(m.i, k, t)
		}
		w.tr.Tick(t)
		w.armTick()
	})
}

// toFeed runs fn, the feed's handling of something that has just reached it, now, or
// once the feed is back on its core (see FeedStall): what waits is handled in the order
// it came, at that time.
func (w *World) toFeed(fn func()) {
	if w.feedLag > 0 && w.stampAt == 0 {
		arrival := w.now
		w.at(w.now+w.feedLag, func() {
			w.stampAt = arrival
			w.toFeed(fn)
			w.stampAt = 0
		})
		return
	}
	if w.now < w.feedOff {
		st := w.stampAt
		w.at(w.feedOff, func() {
			w.stampAt = st
			w.toFeed(fn)
			w.stampAt = 0
		})
		return
	}
	fn()
}

// toFeedFrom is toFeed for what master mi sent. With FeedSkew, the feed's reading of
// each master runs late by its own random amount (up to FeedSkew, in the order that
// master sent it), and is stamped when it is read: one master's changes reach the
// tracker after another's that came later.
func (w *World) toFeedFrom(mi int, fn func()) {
	if w.feedSkew == 0 || w.skewing {
		w.toFeed(fn)
		return
	}
	at := max(w.skewLast[mi], w.now+w.skewRng.Int64N(w.feedSkew+1))
	w.skewLast[mi] = at
	w.at(at, func() {
		w.skewing = true
		w.toFeed(fn)
		w.skewing = false
	})
}

// stamp is the time the feed dates what it handles now: when it arrived.
func (w *World) stamp() int64 {
	if w.stampAt != 0 {
		return w.stampAt
	}
	return w.now
}

// feedStalls takes the feed off its core as st says, until the world stops.
func (w *World) feedStalls(st FeedStall, r *rand.Rand) {
	w.offCore(st.Every, st.Max, r, func(off time.Duration) {
		w.feedOff = max(w.feedOff, w.now+int64(off))
		w.trace("feed off its core for %v", off)
	})
}

// offCore calls take with how long to go off its core, every every on average
// (uniformly up to twice that), for up to most each time, until the world stops.
func (w *World) offCore(every, most time.Duration, r *rand.Rand, take func(off time.Duration)) {
	var next func()
	next = func() {
		if w.stopped {
			return
		}
		take(time.Duration(r.Int64N(int64(most) + 1)))
		w.after(time.Duration(r.Int64N(2*int64(every)+1)), next)
	}
	w.after(time.Duration(r.Int64N(2*int64(every)+1)), next)
}

// mark sends a PING on master m's subscription, where one is due as the feed's node
// sends them (live.MarkDue); its reply marks the changes before it. The link's
// latency is drawn whether it is sent or not, so that a seed's later draws stay the
// same.
func (w *World) mark(m *Master) {
	sent := w.now
	if m.subUp {
		lat := m.sub.sample(w.rng)
		if after, often := w.tr.MarkWanted(m.i); !live.MarkDue(sent, m.markSent, after, often) {
			w.after(markEvery, func() { w.mark(m) })
			return
		}
		m.markSent = sent
		w.at(w.now+lat, func() {
			m.arrive(&batch{sub: true, ops: []op{func(*Master) result { return result{} }}, reply: func([]result) {
				w.toFeedFrom(m.i, func() {
					m.marked = sent
					w.trace("m%d mark %d", m.i, (sent-epoch)/1000)
					w.tr.Late(m.i, time.Unix(0, sent), time.Unix(0, w.stamp()))
					w.tr.Mark(m.i, time.Unix(0, sent))
					w.armTick()
				})
			}})
		})
	}
	w.after(markEvery, func() { w.mark(m) })
}

// ask is the tracker's request for a read of key on master mi.
func (w *World) ask(mi int, key string) {
	w.Reads++
	w.trace("m%d ask %s", mi, key)
	m := w.masters[mi]
	m.readQ = append(m.readQ, key)
	w.at(w.now, func() { w.readNext(m) })
}

// readNext sends the master's queued reads in one round trip, one at a time, like the
// feed's reader.
func (w *World) readNext(m *Master) {
	if m.reading || len(m.readQ) == 0 {
		return
	}
	keys := m.readQ
	m.readQ = nil
	m.reading = true
	sent := w.now
	ops := make([]op, len(keys))
	for i, k := range keys {
		ops[i] = read(k, sent)
	}
	m.reader.send(ops, func(rs []result) {
		if w.keyspace {
			// The feed marks the subscription once the answer came and hands it on
			// with the mark's reply: every notification made before the read was
			// served is delivered by then.
			w.markThen(m, func() { w.readDone(m, keys, rs) })
			return
		}
		w.readDone(m, keys, rs)
	})
}

// readDone hands a read's answers to the tracker.
func (w *World) readDone(m *Master, keys []string, rs []result) {
	if w.feedSkew > 0 && !w.skewing {
		w.toFeedFrom(m.i, func() { w.readDone(m, keys, rs) })
		return
	}
	if w.now < w.feedOff || w.feedLag > 0 && w.stampAt == 0 {
		w.toFeed(func() { w.readDone(m, keys, rs) })
		return
	}
	m.reading = false
	t := time.Unix(0, w.stamp())
	for i, k := range keys {
		w.trace("m%d read %s -> %+v", m.i, k, rs[i].entry)
		if w.keyspace {
			w.tr.ReadTyped(m.i, k, t, rs[i].entry)
		} else {
			w.tr.ReadDone(m.i, k, t, rs[i].entry)
		}
	}
	w.tr.Tick(t)
	w.armTick()
	w.readNext(m)
}

// markThen sends a PING on m's subscription and runs fn at its reply (at once while
// the subscription is down: the feed's read then fails over to the gap's resync).
func (w *World) markThen(m *Master, fn func()) {
	if !m.subUp {
		fn()
		return
	}
	m.markSent = max(m.markSent, w.now)
	w.at(w.now+m.sub.sample(w.rng), func() {
		m.arrive(&batch{sub: true, ops: []op{func(*Master) result { return result{} }}, reply: func([]result) { fn() }})
	})
}

// change is a keyspace notification's arrival at the feed.
func (w *World) change(m *Master, n note) {
	if w.now < w.feedOff || w.feedLag > 0 && w.stampAt == 0 {
		w.toFeed(func() { w.change(m, n) })
		return
	}
	w.trace("m%d note %s %d", m.i, n.key, n.op)
	t := time.Unix(0, w.stamp())
	w.tr.Change(m.i, n.key, n.op, t)
	w.tr.Tick(t)
	w.armTick()
}

// armTick runs the tracker's timers when they are due.
func (w *World) armTick() {
	next := w.tr.Next()
	if next.IsZero() {
		return
	}
	ns := next.UnixNano()
	if w.tick != 0 && w.tick <= ns {
		return
	}
	w.tick = ns
	w.at(ns, func() {
		w.toFeed(func() {
			if w.tick == ns {
				w.tick = 0
			}
			w.tr.Tick(time.Unix(0, w.stamp()))
			w.armTick()
		})
	})
}

// cut cuts master m's subscription now, for down: what changes there meanwhile is
// unseen. The feed notices at once (a gap from the last mark answered), reconnects
// after down and reads the master's keys whole (a resync). With lag > 0 the master
// comes back as a promoted replica that lagged by lag: its writes of the last lag are
// lost, as in a failover.
func (w *World) cut(m *Master, down, lag time.Duration) {
	from := cmp.Or(m.marked, w.now)
	m.subUp = false
	name := fmt.Sprintf("m%d", m.i+1)
	w.trace("m%d CUT for %v, failover lag %v", m.i, down, lag)
	w.after(time.Millisecond, func() {
		w.tr.Gap(m.i, nil)
		now := time.Unix(0, w.now)
		w.Events = append(w.Events, live.Event{At: now, Event: live.Gap, Master: name, From: time.Unix(0, from), To: now})
		w.armTick()
	})
	w.after(down, func() {
		if lag > 0 {
			for i := len(m.log) - 1; i >= 0 && m.log[i].at > w.now-int64(down)-int64(lag); i-- {
				c := m.log[i]
				if c.prev == nil {
					delete(m.data, c.key)
				} else {
					m.data[c.key] = c.prev
				}
			}
			m.log = m.log[:0]
		}
		m.subUp, m.subLast = true, w.now
		keys := make([]string, 0, len(m.data))
		for k := range m.data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		sent := w.now
		ops := make([]op, len(keys))
		for i, k := range keys {
			ops[i] = read(k, sent)
		}
		m.reader.send(ops, func(rs []result) {
			at := time.Unix(0, w.now)
			entries := make([]live.Entry, len(rs))
			for i, r := range rs {
				entries[i] = r.entry
			}
			w.trace("m%d RESYNC %d keys", m.i, len(keys))
			w.tr.SyncStart(m.i, nil)
			w.tr.SyncPage(m.i, keys, entries, at, live.SourcePoll, false)
			w.tr.SyncEnd(m.i, nil, at, live.SourcePoll)
			w.Events = append(w.Events, live.Event{At: at, Event: live.Resync, Master: name})
			w.tr.Tick(at)
			w.armTick()
		})
	})
}

// stalls takes m off its core as st says, until the world stops.
func (w *World) stalls(m *Master, st Stall, r *rand.Rand) {
	w.offCore(st.Every, st.Max, r, func(off time.Duration) {
		m.offUntil = max(m.offUntil, w.now+int64(off))
		w.trace("m%d off its core for %v", m.i, off)
	})
}

// evict removes every key master m holds, as maxmemory eviction does before a command
// runs: each change is invalidated (and named `evicted` where notifications are on).
func (w *World) evict(m *Master) {
	w.trace("m%d EVICT", m.i)
	m.arrive(&batch{ops: []op{func(m *Master) result {
		keys := make([]string, 0, len(m.data))
		for k := range m.data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			m.put(k, nil, live.OpEvicted)
			w.Log.Evicted = append(w.Log.Evicted, Eviction{Master: m.i, Key: k, At: w.now})
		}
		return result{}
	}}, reply: func([]result) {}, c: &conn{m: m}})
}
