package redlock

import (
	"context"
	"fmt"
	"time"
)

// The admin calls act on a value observed on the masters (an operator's view), not on a
// Lock held by this process. They wait for every master (each bounded by the node
// timeout) and report what each did in a Result:
//   OK      the command ran (extended, deleted);
//   Absent  the key is missing;
//   Taken   the key holds another value (nothing was changed there);
//   Timeout, Failed: no answer; Refused: the Redis error (NOPERM, WRONGTYPE, ...).
// The error rule is the same for all three: err is nil whenever at least a quorum of
// masters answered (whatever they answered: read the Result), and a *QuorumError wrapping
// ErrNoQuorum (and ctx.Err() if the context ended first) when fewer did, because the
// state of the resource is then unknown. Argument errors are plain errors (a resource
// name that is empty or would address a fence counter wraps ErrInvalidResource).

// ExtendValue sets the TTL of resource's key to ttl on every master where it still holds
// value (owner-checked; a missing key is never re-created). Per master: OK extended,
// Absent no key, Taken another value (left alone). err is nil when a quorum answered.
func (c *Client) ExtendValue(ctx context.Context, resource, value string, ttl time.Duration) (Result, error) {
	if err := c.checkAdmin("extend-value", resource, value); err != nil {
		return Result{}, err
	}
	if ttl.Truncate(time.Millisecond) < time.Millisecond {
		return Result{}, fmt.Errorf("redlock: extend-value %q: ttl %v must be at least 1ms", resource, ttl)
	}
	key := c.Key(resource)
	o := c.broadcastScript(key, extendScript, []string{key}, value, ttl.Milliseconds())
	err := o.gather(ctx, ownerChecked, nil)
	return o.res, c.adminErr("extend-value", resource, o, err)
}

// ReleaseValue deletes resource's key on every master where it still holds value
// (compare-and-delete in one script); masters where it holds another value keep it
// (Taken). err is nil when a quorum answered.
func (c *Client) ReleaseValue(ctx context.Context, resource, value string) (Result, error) {
	if err := c.checkAdmin("release-value", resource, value); err != nil {
		return Result{}, err
	}
	key := c.Key(resource)
	o := c.broadcastScript(key, releaseScript, []string{key}, value)
	err := o.gather(ctx, ownerChecked, nil)
	return o.res, c.adminErr("release-value", resource, o, err)
}

// Delete deletes resource's key on every master whatever it holds (DEL: OK where a key
// was deleted, Absent where there was none). It is the explicit "any value" escape
// hatch; fence counters are never deleted.
func (c *Client) Delete(ctx context.Context, resource string) (Result, error) {
	if err := c.checkAdmin("delete", resource, "-"); err != nil {
		return Result{}, err
	}
	key := c.Key(resource)
	o := c.broadcast(key, nil, "DEL", []any{key})
	err := o.gather(ctx, func(r reply) NodeResult {
		if nr, done := transport(r); done {
			return nr
		}
		switch n, _ := r.v.(int64); n {
		case 1:
			return NodeResult{Master: r.master, Outcome: OK}
		case 0:
			return NodeResult{Master: r.master, Outcome: Absent}
		}
		return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}
	}, nil)
	return o.res, c.adminErr("delete", resource, o, err)
}

func (c *Client) checkAdmin(op, resource, value string) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := c.checkResource(op, resource); err != nil {
		return err
	}
	if value == "" {
		return fmt.Errorf("redlock: %s %q: empty value", op, resource)
	}
	return nil
}

// adminErr applies the admin error rule: a *QuorumError only when fewer than a quorum
// of masters answered.
func (c *Client) adminErr(op, resource string, o *op, err error) error {
	if o.res.Reachable() >= c.quorum {
		return nil
	}
	qe := &QuorumError{Op: op, Resource: resource, Quorum: c.quorum, Result: o.res, Err: ErrNoQuorum}
	if err != nil {
		qe.Err = fmt.Errorf("%w: %w", ErrNoQuorum, err)
	}
	return qe
}

// Values reads key (a raw Redis key: the key prefix is not applied) on every master at
// once with GET, routed as the lock commands are: to the shard of a Redis Cluster that
// owns the key's slot (following MOVED and ASK), to a Sentinel group's current master.
// It is read-only. values[i] is master i's value ("" where the key is absent); in res,
// a master that answered is OK (a value) or Absent, one that did not is Timeout, Failed
// or Refused (a Redis error: WRONGTYPE for a key that is not a string, NOPERM). It
// waits for every master, each bounded by the node timeout, or until ctx ends. After
// Close, every master is Failed with ErrClosed.
func (c *Client) Values(ctx context.Context, key string) (values []string, res Result) {
	values = make([]string, len(c.masters))
	o := c.broadcast(key, nil, "GET", []any{key})
	o.gather(ctx, func(r reply) NodeResult {
		if nr, done := transport(r); done {
			return nr
		}
		switch v := r.v.(type) {
		case nil:
			return NodeResult{Master: r.master, Outcome: Absent}
		case []byte:
			values[r.master] = string(v)
			return NodeResult{Master: r.master, Outcome: OK}
		}
		return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}
	}, nil)
	return values, o.res
}
