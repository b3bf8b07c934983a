// Package redlock implements the Redlock distributed lock over N independent Redis
// masters, with optional fencing tokens. See DESIGN.md for the algorithm.
package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"
)

var errTODO = errors.New("redlock: not implemented yet")

// Client acquires, extends and releases locks on a fixed set of masters.
type Client struct {
	pools []*redis.Pool
	opts  options
}

// Lock is one successful acquisition.
type Lock struct {
	resource string
	key      string
	value    string
	token    int64
	deadline time.Time
}

// New returns a Client over the given masters.
func New(masters []*redis.Pool, opts ...Option) (*Client, error) { return nil, errTODO }

// Quorum returns N/2+1.
func (c *Client) Quorum() int { return len(c.pools)/2 + 1 }

// Acquire takes the lock on resource for ttl.
func (c *Client) Acquire(ctx context.Context, resource string, ttl time.Duration) (*Lock, error) {
	return nil, errTODO
}

// Extend extends l to ttl from now.
func (c *Client) Extend(ctx context.Context, l *Lock, ttl time.Duration) error { return errTODO }

// Release releases l on every master.
func (c *Client) Release(ctx context.Context, l *Lock) error { return errTODO }

// Do runs fn while holding the lock.
func (c *Client) Do(ctx context.Context, resource string, ttl time.Duration, fn func(context.Context) error) error {
	return errTODO
}

// ExtendValue extends whatever lock holds value on resource.
func (c *Client) ExtendValue(ctx context.Context, resource, value string, ttl time.Duration) (Result, error) {
	return Result{}, errTODO
}

// ReleaseValue deletes resource where it still holds value.
func (c *Client) ReleaseValue(ctx context.Context, resource, value string) (Result, error) {
	return Result{}, errTODO
}

// Delete deletes resource on every master whatever it holds.
func (c *Client) Delete(ctx context.Context, resource string) (Result, error) {
	return Result{}, errTODO
}

// Close stops the client's background work.
func (c *Client) Close() error { return nil }

// Resource returns the resource name.
func (l *Lock) Resource() string { return l.resource }

// Value returns the unique value stored in the lock key.
func (l *Lock) Value() string { return l.value }

// Token returns the fence token (0 unless fenced).
func (l *Lock) Token() int64 { return l.token }

// Until returns the local deadline.
func (l *Lock) Until() time.Time { return l.deadline }

// Validity returns the time left before the local deadline, 0 once passed.
func (l *Lock) Validity() time.Duration {
	if d := time.Until(l.deadline); d > 0 {
		return d
	}
	return 0
}
