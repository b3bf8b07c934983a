package redlock

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// The restart guard. Every time a pipe connects to a master it asks, before anything
// else it sends, for INFO server (run_id, uptime_in_seconds) and CONFIG GET appendonly
// and appendfsync; the replies are read in order, before the reply of any command sent
// after them on that connection, so an acquisition's SET is always judged with them.
// Nothing is read on the hot path. A master restarted less than the guard ago that does
// not fsync every write is not counted toward an acquisition's quorum (decide). A
// reconnect after a broken connection, or a run_id other than the one seen before,
// wakes every lock held through the client (keepAlive extends it at once); while locks
// are held, a probe PINGs every master every probeInterval, so that a restart is seen
// even between extensions.

// probeInterval is how often masters are pinged while the client holds a lock.
const probeInterval = 200 * time.Millisecond

// restartState is what one master's connections learned about its restarts.
type restartState struct {
	mu         sync.Mutex
	runID      string
	uptime     time.Duration // as read at readAt
	readAt     time.Time
	appendOnly string
	fsync      string
	onChange   func()
}

// changed wakes the held locks: the master restarted, or may have.
func (rs *restartState) changed() {
	if rs.onChange != nil {
		rs.onChange()
	}
}

// healthCalls are the calls a new connection sends first; their hooks record the
// replies.
func (rs *restartState) healthCalls(master int) []*call {
	info := &call{cmd: "INFO", args: []any{"server"}, master: master, hook: func(v any, err error) {
		b, ok := v.([]byte)
		if err != nil || !ok {
			return
		}
		runID, up := infoField(b, "run_id"), infoField(b, "uptime_in_seconds")
		secs, perr := strconv.ParseInt(up, 10, 64)
		rs.mu.Lock()
		restarted := rs.runID != "" && runID != "" && runID != rs.runID
		if runID != "" {
			rs.runID = runID
		}
		if perr == nil {
			rs.uptime, rs.readAt = time.Duration(secs)*time.Second, time.Now()
		}
		rs.mu.Unlock()
		if restarted {
			rs.changed()
		}
	}}
	config := func(name string, dst *string) *call {
		return &call{cmd: "CONFIG", args: []any{"GET", name}, master: master, hook: func(v any, err error) {
			a, ok := v.([]any)
			if err != nil || !ok || len(a) != 2 {
				return // refused (ACL, renamed): not known to persist every write
			}
			val, _ := a[1].([]byte)
			rs.mu.Lock()
			*dst = string(val)
			rs.mu.Unlock()
		}}
	}
	return []*call{info, config("appendonly", &rs.appendOnly), config("appendfsync", &rs.fsync)}
}

// infoField returns the value of field in an INFO reply ("" when absent).
func infoField(info []byte, field string) string {
	for line := range bytes.SplitSeq(info, []byte("\n")) {
		if k, v, ok := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":")); ok && string(k) == field {
			return string(v)
		}
	}
	return ""
}

// notCounted says why the master must not count toward a quorum for an acquisition
// under guard; nil when it counts (or its uptime is not known).
func (rs *restartState) notCounted(guard time.Duration) *RestartedError {
	if guard <= 0 {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.readAt.IsZero() || rs.appendOnly == "yes" && rs.fsync == "always" {
		return nil
	}
	up := rs.uptime + time.Since(rs.readAt)
	if up >= guard {
		return nil
	}
	return &RestartedError{Uptime: up, Remaining: guard - up}
}

// RestartedError is the error of a master that took an acquisition but was not counted
// toward its quorum: it restarted Uptime ago and does not persist every write
// (appendonly yes with appendfsync always), so it may have forgotten locks it granted
// before; it counts again after Remaining.
type RestartedError struct {
	Uptime, Remaining time.Duration
}

// Error says how long ago the master restarted and for how much longer it is not
// counted.
func (e *RestartedError) Error() string {
	return fmt.Sprintf("restarted %s ago without appendfsync always: not counted for another %s", roughly(e.Uptime), roughly(e.Remaining))
}

// roughly writes d in whole seconds (a master's uptime is known to the second), or
// "under 1s".
func roughly(d time.Duration) string {
	if d < time.Second {
		return "under 1s"
	}
	return d.Round(time.Second).String()
}

// MasterHealth is what the client knows of one master's restarts.
type MasterHealth struct {
	RunID string
	// Uptime is the master's uptime now, projected from the last INFO (0: not known).
	Uptime time.Duration
	// Durable says the master persists every write (appendonly yes, appendfsync always):
	// a restart does not make it forget locks.
	Durable bool
}

// Health returns, per master, what the client knows of its restarts (a cluster
// instance's entry is empty: its shards are judged by the inspector).
func (c *Client) Health() []MasterHealth {
	out := make([]MasterHealth, len(c.masters))
	for i, in := range c.masters {
		m, ok := in.(*master)
		if !ok {
			continue
		}
		rs := m.rs
		rs.mu.Lock()
		out[i] = MasterHealth{RunID: rs.runID, Durable: rs.appendOnly == "yes" && rs.fsync == "always"}
		if !rs.readAt.IsZero() {
			out[i].Uptime = rs.uptime + time.Since(rs.readAt)
		}
		rs.mu.Unlock()
	}
	return out
}

// guardFor is the restart guard of an acquisition with ttl.
func (c *Client) guardFor(ttl time.Duration) time.Duration {
	if c.opts.restartGuard < 0 {
		return ttl
	}
	return c.opts.restartGuard
}

// notCounted says, per master that said OK, why it does not count under guard.
func (c *Client) notCounted(o *op, guard time.Duration) map[int]*RestartedError {
	var why map[int]*RestartedError
	for i, nr := range o.res.Nodes {
		m, ok := c.masters[i].(*master)
		if nr.Outcome != OK || !ok {
			continue
		}
		if w := m.rs.notCounted(guard); w != nil {
			if why == nil {
				why = map[int]*RestartedError{}
			}
			why[i] = w
		}
	}
	return why
}

// quorumCounted stops gathering an acquisition's replies once a quorum of masters that
// count under guard said yes: a master that restarted recently does not end the wait
// for the others (which would be left unanswered, and reported as timed out).
func (c *Client) quorumCounted(guard time.Duration) func(*op) bool {
	if guard <= 0 {
		return c.quorumOK
	}
	return func(o *op) bool {
		ok := o.count(OK)
		return ok >= c.quorum && ok-len(c.notCounted(o, guard)) >= c.quorum
	}
}

// restarted returns a channel closed at the next restart seen on any master.
func (c *Client) restarted() <-chan struct{} {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	if c.restartCh == nil {
		c.restartCh = make(chan struct{})
	}
	return c.restartCh
}

// wakeHeld closes the restarted channel: every held lock extends at once.
func (c *Client) wakeHeld() {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	if c.restartCh != nil {
		close(c.restartCh)
		c.restartCh = nil
	}
}

// holdStarted counts a held lock and starts the probe with the first one.
func (c *Client) holdStarted() {
	c.holding.Add(1)
	c.probeOnce.Do(func() {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.probe() }()
	})
}

func (c *Client) holdEnded() { c.holding.Add(-1) }

// probe pings every plain master every probeInterval while a lock is held, so that a
// broken connection (a restart) is noticed between extensions.
func (c *Client) probe() {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
		}
		if c.holding.Load() <= 0 {
			continue
		}
		for i, in := range c.masters {
			if m, ok := in.(*master); ok {
				m.ping(i)
			}
		}
	}
}
