package sim

import (
	"fmt"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// Log is the clients' own record: the truth the feed is checked against.
type Log struct {
	Locks   []*Lifecycle
	Failed  []Attempt
	Evicted []Eviction // the masters' own: no client knows of them
}

// Eviction is a key a master evicted (maxmemory) at At.
type Eviction struct {
	Master int
	Key    string
	At     int64
}

// Lifecycle is one lock a client held on a quorum: from the reply that made the
// quorum to the release it sent, or to its deadline where it overran.
type Lifecycle struct {
	Client   string
	Key      string
	Value    string
	Library  string // the library the feed should name ("" where not judged)
	NotLib   string // a library the feed must not name
	Acquired int64
	Ended    int64 // 0: still held when the schedule ended
	End      string
	deadline int64 // the latest deadline it was set or extended to
}

// Attempt is an attempt that reached some masters and no quorum, released at once:
// the only thing that explains a `contended` event.
type Attempt struct {
	Key, Value string
	At         int64
	Reached    int // how many masters it set
}

// client is one lock client: a connection to every master, and a way to make values.
type client struct {
	w      *World
	name   string
	conns  []*conn
	style  string // "pipelined" (this library: all masters at once) or "sequential" (redsync-style)
	values func(n int) string
	n      int
}

func (w *World) newClient(name, style string, values func(n int) string) *client {
	c := &client{w: w, name: name, style: style, values: values}
	for _, m := range w.masters {
		c.conns = append(c.conns, &conn{m: m, lat: m.clientLt})
	}
	return c
}

// redlockctlValue is this project's value shape: owner#32 hex.
func redlockctlValue(owner string) func(int) string {
	return func(n int) string { return fmt.Sprintf("%s#%032x", owner, uint64(n)*0x9e3779b97f4a7c15) }
}

// onAll sends ops(i) to every master (all at once, or one after another for a
// sequential client) and calls done with each master's first result.
func (c *client) onAll(ops func(i int) []op, done func(rs []result)) {
	rs := make([]result, len(c.conns))
	if c.style == "sequential" {
		var next func(i int)
		next = func(i int) {
			if i == len(c.conns) {
				done(rs)
				return
			}
			c.conns[i].send(ops(i), func(r []result) { rs[i] = r[len(r)-1]; next(i + 1) })
		}
		next(0)
		return
	}
	left := len(c.conns)
	for i, cn := range c.conns {
		cn.send(ops(i), func(r []result) {
			rs[i] = r[len(r)-1]
			if left--; left == 0 {
				done(rs)
			}
		})
	}
}

func oks(rs []result) int {
	n := 0
	for _, r := range rs {
		if r.ok {
			n++
		}
	}
	return n
}

// acquire tries once to take key with a new value; got is called with the value and
// whether a quorum said yes (a failed attempt is released on every master and logged
// first). A pipelined client decides at the quorum's reply, as this library does.
func (c *client) acquire(key string, ttl time.Duration, set func(value string) op, got func(value string, ok bool)) {
	w := c.w
	c.n++
	value := c.values(c.n)
	decided, yes, replies := false, 0, 0
	decide := func(ok bool) {
		decided = true
		if !ok {
			w.Log.Failed = append(w.Log.Failed, Attempt{Key: key, Value: value, At: w.now, Reached: yes})
			c.onAll(func(int) []op { return []op{delIf(key, value)} }, func([]result) { got(value, false) })
			return
		}
		got(value, true)
	}
	if c.style == "sequential" {
		c.onAll(func(int) []op { return []op{set(value)} }, func(rs []result) { yes = oks(rs); decide(yes >= w.q) })
		return
	}
	for _, cn := range c.conns {
		cn.send([]op{set(value)}, func(r []result) {
			replies++
			if r[0].ok {
				yes++
			}
			if decided {
				return
			}
			if yes >= w.q {
				decide(true)
			} else if replies == len(c.conns) {
				decide(false)
			}
		})
	}
}

// hold keeps a held lock: extending every ttl/3 when extend (the first at once when
// early, as a client proving its lease does), then releasing it after d, or letting it expire when overrun.
// next is called when the lock is gone.
func (c *client) hold(lc *Lifecycle, ttl, d time.Duration, extend, early, overrun bool, next func()) {
	w := c.w
	end := w.now + int64(d)
	var renew func()
	renew = func() {
		if w.now >= end {
			return
		}
		sent := w.now
		c.onAll(func(int) []op { return []op{pexpireIf(lc.Key, lc.Value, ttl)} }, func(rs []result) {
			if oks(rs) >= w.q {
				lc.deadline = sent + int64(ttl)
			}
		})
		w.after(ttl/3, renew)
	}
	if extend {
		if early {
			renew()
		} else {
			w.after(ttl/3, renew)
		}
	}
	w.at(end, func() {
		if overrun {
			// The holder stops: no release, no extension; it expires at its deadline.
			lc.Ended, lc.End = lc.deadline, live.Expired
			w.at(lc.deadline+int64(cronEvery)+int64(50*time.Millisecond), next)
			return
		}
		if w.now >= lc.deadline {
			lc.Ended, lc.End = lc.deadline, live.Expired
		} else {
			lc.Ended, lc.End = w.now, live.Released
		}
		c.release(lc.Key, lc.Value, next)
	})
}

// release deletes key where it holds value on every master, and calls done when a
// pipelined client may go on: at the quorum's replies, as this library's Release
// returns (the slowest masters' deletions still in flight), or after every master for
// a sequential client.
func (c *client) release(key, value string, done func()) {
	if c.style == "sequential" {
		c.onAll(func(int) []op { return []op{delIf(key, value)} }, func([]result) { done() })
		return
	}
	replies := 0
	for _, cn := range c.conns {
		cn.send([]op{delIf(key, value)}, func([]result) {
			if replies++; replies == c.w.q {
				done()
			}
		})
	}
}

// worker is a loop of one client taking one key: acquire (retrying), hold, release.
type worker struct {
	key               string
	ttl               time.Duration
	hold              func() time.Duration // how long each lock is held
	pause             func() time.Duration // between a release and the next attempt
	extend, early     bool
	overrun           float64 // the share of locks whose holder stops without releasing
	fenced            bool
	library, notLib   string
	set               func(key, value string, ttl time.Duration) op
	release, acquired func() // unused hooks (nil)
}

func (w *World) runWorker(c *client, wk worker) {
	var loop func()
	token := int64(0)
	loop = func() {
		if w.stopped {
			return
		}
		set := func(value string) op {
			if wk.fenced {
				return fencedSet(wk.key, value, token, wk.ttl)
			}
			if wk.set != nil {
				return wk.set(wk.key, value, wk.ttl)
			}
			return setNX(wk.key, value, wk.ttl)
		}
		attempt := func() {
			sent := w.now
			c.acquire(wk.key, wk.ttl, set, func(value string, ok bool) {
				if !ok {
					w.after(time.Duration(w.rng.Int64N(int64(20*time.Millisecond))), loop)
					return
				}
				lc := &Lifecycle{Client: c.name, Key: wk.key, Value: value, Library: wk.library, NotLib: wk.notLib,
					Acquired: w.now, deadline: sent + int64(wk.ttl)}
				w.Log.Locks = append(w.Log.Locks, lc)
				over := w.rng.Float64() < wk.overrun
				c.hold(lc, wk.ttl, wk.hold(), wk.extend, wk.early, over, func() { w.after(wk.pause(), loop) })
			})
		}
		if !wk.fenced {
			attempt()
			return
		}
		// Fenced: read the counters, then set with the next token.
		c.onAll(func(int) []op { return []op{getInt(wk.key + ":fence")} }, func(rs []result) {
			for _, r := range rs {
				token = max(token, r.n)
			}
			token++
			attempt()
		})
	}
	loop()
}

// runHandoff is a holder whose release and the next holder's acquisition go out in one
// write to each master (a compare-and-delete and a SET NX pipelined together): Redis
// runs both in one iteration and sends one invalidation for the two changes.
func (w *World) runHandoff(c *client, key string, ttl time.Duration, hold func() time.Duration) {
	var held *Lifecycle
	var step func()
	step = func() {
		if w.stopped {
			if held != nil {
				held.Ended, held.End = w.now, live.Released
				c.onAll(func(int) []op { return []op{delIf(key, held.Value)} }, func([]result) {})
				held = nil
			}
			return
		}
		c.n++
		value := c.values(c.n)
		prev := held
		if prev != nil {
			prev.Ended, prev.End = w.now, live.Released
		}
		sent := w.now
		c.onAll(func(int) []op {
			if prev == nil {
				return []op{setNX(key, value, ttl)}
			}
			return []op{delIf(key, prev.Value), setNX(key, value, ttl)}
		}, func(rs []result) {
			if oks(rs) < w.q {
				w.Log.Failed = append(w.Log.Failed, Attempt{Key: key, Value: value, At: sent, Reached: oks(rs)})
				c.onAll(func(int) []op { return []op{delIf(key, value)} }, func([]result) {})
				held = nil
				w.after(hold(), step)
				return
			}
			held = &Lifecycle{Client: c.name, Key: key, Value: value, Library: "redlockctl", Acquired: w.now, deadline: sent + int64(ttl)}
			w.Log.Locks = append(w.Log.Locks, held)
			w.after(hold(), step)
		})
	}
	step()
}
