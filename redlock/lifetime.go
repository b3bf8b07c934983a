package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Extend sets the lock's TTL to ttl (truncated to whole milliseconds) from now on every master that still holds its value
// (owner-checked PEXPIRE: a master that lost the key is never given it back). It
// succeeds iff a quorum extended within the new validity; l.Until() then moves to
// t0 + ttl - drift. Failure wraps ErrLockLost (a *QuorumError with per-master outcomes
// when masters were asked) and l.Validity() becomes 0: the lock can no longer be proven
// held. Extend on a lock whose local deadline passed sends nothing and fails with
// ErrLockLost. If ctx ends first, the error wraps ctx.Err() and the deadline becomes the
// earlier of the previous one and t0 + ttl - drift (the new TTL may have landed on some
// masters, so a shorter ttl shortens it).
func (c *Client) Extend(ctx context.Context, l *Lock, ttl time.Duration) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if l == nil {
		return errors.New("redlock: extend: nil lock")
	}
	ttl, err := c.sentTTL(ttl)
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.deadline.IsZero() || !time.Now().Before(l.deadline) {
		l.deadline = time.Time{}
		l.mu.Unlock()
		return fmt.Errorf("redlock: extend %q: %w: local deadline passed", l.resource, ErrLockLost)
	}
	if c.opts.maxExtensions > 0 && l.extensions >= c.opts.maxExtensions {
		l.mu.Unlock()
		return fmt.Errorf("redlock: extend %q: %w (%d)", l.resource, ErrExtensionLimit, c.opts.maxExtensions)
	}
	l.extensions++
	l.mu.Unlock()

	t0 := time.Now()
	o := c.broadcastScript(l.key, extendScript, []string{l.key}, l.value, ttl.Milliseconds())
	err = o.gather(ctx, ownerChecked, c.quorumOK)
	drift := c.drift(ttl)
	validity := ttl - time.Since(t0) - drift
	ok := o.count(OK)
	qe := &QuorumError{Op: "extend", Resource: l.resource, Quorum: c.quorum, Result: o.res, Err: ErrLockLost}
	switch {
	case err != nil:
		// The new TTL may be in force on some masters already: never keep a deadline
		// later than what it allows.
		l.mu.Lock()
		if d := t0.Add(ttl - drift); !l.deadline.IsZero() && d.Before(l.deadline) {
			l.deadline = d
		}
		l.mu.Unlock()
		qe.Err = err
		return qe
	case ok >= c.quorum && validity > 0:
		l.setDeadline(t0.Add(ttl - drift))
		return nil
	case ok >= c.quorum:
		qe.Err = fmt.Errorf("%w: quorum reached after the validity was used up", ErrLockLost)
	}
	l.setDeadline(time.Time{})
	return qe
}

// Release deletes the lock's value on every master (compare-and-delete in one script:
// another holder's value is never touched) and marks l lost locally first. It returns
// nil once a quorum confirmed the value is gone (deleted, absent, or replaced); otherwise
// a *QuorumError wrapping ErrNotReleased (and ctx.Err() if ctx ended): the keys left
// behind expire with their TTL. Masters not yet heard from still run the release.
func (c *Client) Release(ctx context.Context, l *Lock) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if l == nil {
		return errors.New("redlock: release: nil lock")
	}
	l.setDeadline(time.Time{})
	o := c.broadcastScript(l.key, releaseScript, []string{l.key}, l.value)
	err := o.gather(ctx, ownerChecked, c.quorumGone)
	if err == nil && gone(o) >= c.quorum {
		return nil
	}
	qe := &QuorumError{Op: "release", Resource: l.resource, Quorum: c.quorum, Result: o.res, Err: ErrNotReleased}
	if err != nil {
		qe.Err = fmt.Errorf("%w: %w", ErrNotReleased, err)
	}
	return qe
}

// gone counts masters known not to hold the value any more.
func gone(o *op) int { return o.count(OK) + o.count(Absent) + o.count(Taken) }

func (c *Client) quorumGone(o *op) bool { return gone(o) >= c.quorum }
