package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

type lockCtxKey struct{}

// LockFrom returns the lock Do holds for the context it passed to fn (nil for any other
// context); use it to read the fence token.
func LockFrom(ctx context.Context) *Lock {
	l, _ := ctx.Value(lockCtxKey{}).(*Lock)
	return l
}

// Do acquires the lock on resource, runs fn while holding it and releases it when fn
// returns. The lock is extended to ttl every ttl/3, each extension bounded by the lock's
// current deadline. fn's context is cancelled the moment
// the lock can no longer be proven held (an extension failed, or the local deadline passed
// before one succeeded); context.Cause(ctx) then wraps ErrLockLost. Do returns the Acquire
// error, or fn's error, or (when the lock was lost while fn ran) an error wrapping
// ErrLockLost joined with fn's error. fn must not release the lock itself.
func (c *Client) Do(ctx context.Context, resource string, ttl time.Duration, fn func(context.Context) error) error {
	if err := c.checkResource("do", resource); err != nil {
		return err
	}
	if fn == nil {
		return errors.New("redlock: do: nil function")
	}
	l, err := c.Acquire(ctx, resource, ttl)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, lockCtxKey{}, l))
	defer cancel(nil)
	fnDone := make(chan struct{})
	lostc := make(chan error, 1)
	go func() { lostc <- c.keepAlive(l, ttl, fnDone, cancel) }()
	var lost error
	finish := func() {
		close(fnDone)
		lost = <-lostc
		c.Release(context.WithoutCancel(ctx), l) // bounded by the node timeout; failures expire
	}
	finished := false
	defer func() { // fn panicked: stop extending and release before the panic goes on
		if !finished {
			finish()
		}
	}()
	ferr := fn(fctx)
	finished = true
	finish()
	if lost != nil {
		if ferr != nil {
			return errors.Join(lost, ferr)
		}
		return lost
	}
	return ferr
}

// keepAlive extends l every ttl/3 until fnDone; it cancels fn's context with the reason
// and returns it when the lock is lost.
func (c *Client) keepAlive(l *Lock, ttl time.Duration, fnDone <-chan struct{}, cancel context.CancelCauseFunc) error {
	interval := ttl / 3
	ext := time.NewTimer(interval)
	defer ext.Stop()
	dl := time.NewTimer(time.Until(l.Until()))
	defer dl.Stop()
	limited := false
	c.holdStarted()
	defer c.holdEnded()
	for {
		select {
		case <-fnDone:
			return nil
		case <-c.restarted():
			// A master restarted (or its connection broke): prove the lock now, not at
			// the next tick.
			if !ext.Stop() {
				select {
				case <-ext.C:
				default:
				}
			}
			ext.Reset(0)
			continue
		case <-dl.C:
			why := "local deadline passed before an extension succeeded"
			if limited {
				why = "local deadline passed after the extension limit was reached"
			}
			lost := fmt.Errorf("redlock: %q: %w: %s", l.resource, ErrLockLost, why)
			l.setDeadline(time.Time{})
			cancel(lost)
			return lost
		case <-ext.C:
			// The extension cannot outlast the deadline: when it is still waiting for
			// replies then, fn's context is cancelled at the deadline, not a node
			// timeout later.
			ectx, ecancel := context.WithDeadline(context.Background(), l.Until())
			err := c.Extend(ectx, l, ttl)
			ecancel()
			switch {
			case err == nil:
				dl.Reset(time.Until(l.Until()))
				ext.Reset(interval)
			case errors.Is(err, ErrExtensionLimit):
				limited = true // hold on until the deadline, then report the loss
			default:
				if !errors.Is(err, ErrLockLost) {
					err = fmt.Errorf("%w: %w", ErrLockLost, err)
				}
				l.setDeadline(time.Time{})
				cancel(err)
				return err
			}
		}
	}
}
