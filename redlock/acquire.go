package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Acquire takes the lock on resource for ttl (truncated to whole milliseconds, as sent to
// the masters; it must be at least 1ms and exceed the drift allowance). On success the lock is held on a quorum of
// masters until l.Until() on the local monotonic clock (t0 + ttl - drift, where t0 was
// taken before the first command). Each attempt sends to all masters at once and returns
// as soon as a quorum agreed; a failed attempt is released on every master and retried
// after a random delay in [0, retryDelay), up to WithRetries times. An empty resource,
// or one whose key would end in FenceSuffix, fails with ErrInvalidResource.
//
// Failure is a *QuorumError describing the last attempt. It wraps ErrNotAcquired, and
// also ctx.Err() when the context ended first: errors.Is(err, context.Canceled) or
// context.DeadlineExceeded tells "gave up because of ctx" from "retries exhausted".
func (c *Client) Acquire(ctx context.Context, resource string, ttl time.Duration) (*Lock, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := c.checkResource("acquire", resource); err != nil {
		return nil, err
	}
	ttl, err := c.sentTTL(ttl)
	if err != nil {
		return nil, err
	}
	key := c.Key(resource)
	var maxSeen int64 // fenced: largest counter any master reported so far
	var last *QuorumError
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, c.gaveUp(resource, last, err)
		}
		var l *Lock
		var qe *QuorumError
		if c.opts.fencing {
			l, qe = c.attemptFenced(ctx, resource, key, ttl, &maxSeen)
		} else {
			l, qe = c.attempt(ctx, resource, key, ttl)
		}
		if l != nil {
			return l, nil
		}
		last = qe
		if err := ctx.Err(); err != nil {
			return nil, c.gaveUp(resource, last, err)
		}
		if attempt >= c.opts.retries {
			return nil, last
		}
		if d := c.opts.retryDelay; d > 0 {
			t := time.NewTimer(rand.N(d))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, c.gaveUp(resource, last, ctx.Err())
			}
		}
	}
}

// gaveUp is the error for an Acquire ended by its context.
func (c *Client) gaveUp(resource string, last *QuorumError, ctxErr error) error {
	qe := &QuorumError{Op: "acquire", Resource: resource, Quorum: c.quorum}
	if last != nil {
		qe.Result = last.Result
	}
	qe.Err = fmt.Errorf("%w: %w", ErrNotAcquired, ctxErr)
	return qe
}

// attempt is one unfenced try: SET key value NX PX ttl on every master.
func (c *Client) attempt(ctx context.Context, resource, key string, ttl time.Duration) (*Lock, *QuorumError) {
	t0 := time.Now()
	value := newValue(c.opts.owner)
	o := c.broadcast(key, nil, "SET", []any{key, value, "NX", "PX", ttl.Milliseconds()})
	err := o.gather(ctx, classifySet, c.quorumCounted(c.guardFor(ttl)))
	return c.decide(o, err, t0, resource, key, value, 0, ttl)
}

// decide turns one attempt's replies into a lock, or releases the value everywhere
// (including masters that did not answer: their SET may land later, and the release
// queued behind it on the same connection runs after it) and reports why.
func (c *Client) decide(o *op, err error, t0 time.Time, resource, key, value string, token int64, ttl time.Duration) (*Lock, *QuorumError) {
	drift := c.drift(ttl)
	validity := ttl - time.Since(t0) - drift
	guarded := c.notCounted(o, c.guardFor(ttl)) // restarted masters do not count
	ok := o.count(OK) - len(guarded)
	if err == nil && ok >= c.quorum && validity > 0 {
		return &Lock{resource: resource, key: key, value: value, token: token, deadline: t0.Add(ttl - drift)}, nil
	}
	c.cleanup(o, key, value)
	qe := &QuorumError{Op: "acquire", Resource: resource, Quorum: c.quorum, Result: o.res, Err: ErrNotAcquired}
	var up, left time.Duration // the longest uptime and time left among them
	for i, why := range guarded {
		qe.Result.Nodes[i].Err = why
		up, left = max(up, why.Uptime), max(left, why.Remaining)
	}
	switch {
	case err != nil:
		qe.Err = fmt.Errorf("%w: %w", ErrNotAcquired, err)
	case len(guarded) > 0 && o.count(OK) >= c.quorum:
		qe.Err = fmt.Errorf("%w: %d of the %d masters that said OK restarted %s ago or less without appendfsync always, and may have forgotten locks they granted: they are not counted toward a quorum for up to another %s",
			ErrNotAcquired, len(guarded), o.count(OK), roughly(up), roughly(left))
	case ok >= c.quorum:
		qe.Err = fmt.Errorf("%w: quorum reached after the validity was used up (%v elapsed)", ErrNotAcquired, time.Since(t0).Round(time.Microsecond))
	}
	return nil, qe
}

// cleanup releases a failed attempt's value on every master and waits, at most the node
// timeout, until each master that answered the SET has answered the release, so that
// nothing of the attempt is left where it was seen once Acquire returns. The wait
// ignores the caller's context: it is the attempt's own cleanup, and it is short. A
// master that did not answer the SET still gets the release, queued behind the SET on
// the same connection, so it runs after a SET that lands late; its reply is drained by
// the reader.
func (c *Client) cleanup(set *op, key, value string) {
	waitFor := make([]bool, len(set.res.Nodes))
	pending := 0
	for i, nr := range set.res.Nodes {
		switch nr.Outcome {
		case OK, Taken, Refused, Absent: // a Redis reply: the master is there to answer
			waitFor[i] = true
			pending++
		}
	}
	rel := c.broadcastScript(key, releaseScript, []string{key}, value)
	if pending == 0 {
		return
	}
	rel.gather(context.Background(), func(r reply) NodeResult {
		if waitFor[r.master] {
			waitFor[r.master] = false
			pending--
		}
		return ownerChecked(r)
	}, func(*op) bool { return pending == 0 })
}

// quorumOK stops gathering once a quorum said yes. A failing attempt waits for every
// master (bounded by the node timeout), so that its error says what each one did.
func (c *Client) quorumOK(o *op) bool { return o.count(OK) >= c.quorum }

// classifySet: OK means the key was set, nil means it exists (taken).
func classifySet(r reply) NodeResult {
	if nr, done := transport(r); done {
		return nr
	}
	switch v := r.v.(type) {
	case string:
		if v == "OK" {
			return NodeResult{Master: r.master, Outcome: OK}
		}
	case nil:
		return NodeResult{Master: r.master, Outcome: Taken}
	}
	return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}
}

// attemptFenced is one fenced try: read the counters on a quorum, then write with
// token = max(counters, maxSeen) + 1.
func (c *Client) attemptFenced(ctx context.Context, resource, key string, ttl time.Duration, maxSeen *int64) (*Lock, *QuorumError) {
	t0 := time.Now()
	o := c.broadcast(key, nil, "GET", []any{FenceKey(key)})
	counters := make([]int64, len(c.masters))
	err := o.gather(ctx, func(r reply) NodeResult {
		nr, n := classifyCounter(r)
		counters[r.master] = n
		return nr
	}, c.quorumOK)
	if err != nil || o.count(OK) < c.quorum {
		qe := &QuorumError{Op: "acquire", Resource: resource, Quorum: c.quorum, Result: o.res,
			Err: fmt.Errorf("%w: fence counters readable on fewer than a quorum", ErrNotAcquired)}
		if err != nil {
			qe.Err = fmt.Errorf("%w: %w", ErrNotAcquired, err)
		}
		return nil, qe
	}
	token := *maxSeen
	for i, n := range counters {
		if o.res.Nodes[i].Outcome == OK {
			token = max(token, n)
		}
	}
	token++
	if c.afterRead != nil {
		c.afterRead(token)
	}
	return c.writeFenced(ctx, t0, resource, key, ttl, token, maxSeen)
}

// writeFenced is round two: on every master, take the key and store token only if the
// key is free and the stored counter is below token. Refusals report the counter, which
// raises maxSeen for the next attempt.
func (c *Client) writeFenced(ctx context.Context, t0 time.Time, resource, key string, ttl time.Duration, token int64, maxSeen *int64) (*Lock, *QuorumError) {
	value := fencedValue(newValue(c.opts.owner), token)
	o := c.broadcastScript(key, fencedAcquireScript, []string{key, FenceKey(key)}, value, ttl.Milliseconds(), token)
	err := o.gather(ctx, func(r reply) NodeResult {
		if nr, done := transport(r); done {
			return nr
		}
		a, ok := r.v.([]any)
		if !ok || len(a) != 2 {
			return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}
		}
		status, _ := a[0].(int64)
		counter, _ := a[1].(int64)
		*maxSeen = max(*maxSeen, counter)
		switch status {
		case 1:
			return NodeResult{Master: r.master, Outcome: OK}
		case 0:
			return NodeResult{Master: r.master, Outcome: Taken}
		default:
			return NodeResult{Master: r.master, Outcome: Taken, Err: fmt.Errorf("fence counter %d >= token %d", counter, token)}
		}
	}, c.quorumCounted(c.guardFor(ttl)))
	return c.decide(o, err, t0, resource, key, value, token, ttl)
}

// classifyCounter reads a fence counter reply: nil is 0.
func classifyCounter(r reply) (NodeResult, int64) {
	if nr, done := transport(r); done {
		return nr, 0
	}
	switch v := r.v.(type) {
	case nil:
		return NodeResult{Master: r.master, Outcome: OK}, 0
	case []byte:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return NodeResult{Master: r.master, Outcome: Refused, Err: fmt.Errorf("fence counter %q is not an integer", v)}, 0
		}
		return NodeResult{Master: r.master, Outcome: OK}, n
	}
	return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}, 0
}
