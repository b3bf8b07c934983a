package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestDoKeepsLockAlive: fn runs for several TTLs; the lock stays held (extended every
// ttl/3) and is released when fn returns.
func TestDoKeepsLockAlive(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ctx := context.Background()
	ttl := 600 * time.Millisecond
	var key, value string
	err := c.Do(ctx, "kept", ttl, func(ctx context.Context) error {
		l := LockFrom(ctx)
		if l == nil {
			return errors.New("LockFrom returned nil inside Do")
		}
		key, value = l.Key(), l.Value()
		for i := 0; i < 4; i++ {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(ttl / 2):
			}
			if n := holders(t, servers, key, value); n < 2 {
				return errors.New("lock not held on a quorum while fn runs")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	// Release returned at quorum; the last master's delete may still be in flight.
	waitFor(t, func() bool { return holders(t, servers, key, "") == 3 }, "key left behind after Do returned")
	fnErr := errors.New("fn failed")
	if err := c.Do(ctx, "kept", ttl, func(context.Context) error { return fnErr }); err != fnErr {
		t.Errorf("Do returned %v, want fn's error", err)
	}
}

// TestDoCancelsWhenMajorityKilled: fn's context is cancelled by the first extension
// after a majority of masters died, i.e. within one extension interval, and the cause
// (and Do's error) wraps ErrLockLost.
func TestDoCancelsWhenMajorityKilled(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	ttl := 900 * time.Millisecond
	interval := ttl / 3
	var killed, cancelled time.Time
	var deadline time.Time
	var cause error
	err := c.Do(context.Background(), "doomed", ttl, func(ctx context.Context) error {
		servers[0].Kill()
		servers[1].Kill()
		killed = time.Now()
		deadline = LockFrom(ctx).Until()
		<-ctx.Done()
		cancelled = time.Now()
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("Do after a majority died: err = %v, want ErrLockLost", err)
	}
	var qe *QuorumError
	if !errors.Is(cause, ErrLockLost) || !errors.As(cause, &qe) || qe.Op != "extend" {
		t.Fatalf("cancel cause = %v, want the failed extension (a QuorumError wrapping ErrLockLost)", cause)
	}
	if qe.Result.Count(OK) != 1 {
		t.Errorf("failed extension: %v, want exactly the surviving master ok", qe)
	}
	// The cancellation came from the extension, before the lock's own deadline.
	if !cancelled.Before(deadline) {
		t.Errorf("cancelled at %v, not before the local deadline %v", cancelled, deadline)
	}
	if late := cancelled.Sub(killed); late > interval+c.opts.nodeTimeout+200*time.Millisecond {
		t.Errorf("cancelled %v after the kill, more than one extension interval (%v)", late, interval)
	}
}

// TestAcquireContextErrors: a cancelled context is visible to errors.Is and is told
// apart from exhausted retries.
func TestAcquireContextErrors(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithRetries(2))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "busy", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Acquire(ctx, "busy", time.Second)
	if !errors.Is(err, ErrNotAcquired) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("retries exhausted: err = %v", err)
	}
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Result.Count(Taken) != 3 {
		t.Errorf("retries exhausted: %v, want 3 masters taken", err)
	}
	patient := newClient(t, redistest.Pools(servers), WithRetries(1000))
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = patient.Acquire(cctx, "busy", time.Second)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotAcquired) {
		t.Errorf("cancelled: err = %v, want context.Canceled and ErrNotAcquired", err)
	}
	c.Release(ctx, l)
	if l.Validity() != 0 {
		t.Errorf("Validity %v after Release, want 0", l.Validity())
	}
	c.Close()
	if _, err := c.Acquire(ctx, "busy", time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v, want ErrClosed", err)
	}
}

// TestDoExtensionLimit: with WithMaxExtensions, Do stops extending at the cap and
// cancels fn when the local deadline passes.
func TestDoExtensionLimit(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithMaxExtensions(1))
	var cause error
	var validityAtCancel time.Duration
	err := c.Do(context.Background(), "capped", 450*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		cause = context.Cause(ctx)
		validityAtCancel = LockFrom(ctx).Validity()
		return nil
	})
	if !errors.Is(err, ErrLockLost) || !errors.Is(cause, ErrLockLost) {
		t.Fatalf("Do past the extension limit: err = %v, cause = %v; want ErrLockLost", err, cause)
	}
	if validityAtCancel != 0 {
		t.Errorf("fn was cancelled with %v of validity left", validityAtCancel)
	}
}

// TestDoReleasesOnPanic: a panicking fn still stops the keep-alive and releases.
func TestDoReleasesOnPanic(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers))
	var key string
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the fn's panic", r)
			}
		}()
		c.Do(context.Background(), "panicky", 10*time.Second, func(ctx context.Context) error {
			key = LockFrom(ctx).Key()
			panic("boom")
		})
	}()
	waitFor(t, func() bool { return holders(t, servers, key, "") == 3 }, "lock not released after fn panicked")
}

// TestAcquireRetriesUntilFree: retries wait out another holder's TTL.
func TestAcquireRetriesUntilFree(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	other := newClient(t, redistest.Pools(servers), WithOwner("other:1"))
	ctx := context.Background()
	held, err := other.Acquire(ctx, "queue", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, redistest.Pools(servers), WithRetries(200), WithRetryDelay(20*time.Millisecond))
	l, err := c.Acquire(ctx, "queue", time.Second)
	if err != nil {
		t.Fatalf("Acquire with retries while another holder's TTL runs out: %v", err)
	}
	if held.Validity() != 0 {
		t.Errorf("acquired while the other holder still had %v of validity", held.Validity())
	}
	if owner, _, _ := ParseValue(l.Value()); owner != "test:1" {
		t.Errorf("value %q", l.Value())
	}
}

// TestDoCancelsAtDeadlineDuringExtend: an extension that hangs (a majority paused, node
// timeout far beyond the TTL) does not delay the cancellation of fn's context past the
// lock's deadline.
func TestDoCancelsAtDeadlineDuringExtend(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithNodeTimeout(3*time.Second))
	ttl := 450 * time.Millisecond
	var deadline, cancelled time.Time
	err := c.Do(context.Background(), "hang", ttl, func(ctx context.Context) error {
		l := LockFrom(ctx)
		waitFor(t, func() bool { return holders(t, servers, l.Key(), l.Value()) == 3 }, "value not on all masters")
		servers[1].Pause()
		servers[2].Pause()
		deadline = l.Until() // the first extension (at ttl/3) hangs until the node timeout
		<-ctx.Done()
		cancelled = time.Now()
		servers[1].Resume()
		servers[2].Resume()
		if !errors.Is(context.Cause(ctx), ErrLockLost) {
			t.Errorf("cause %v, want ErrLockLost", context.Cause(ctx))
		}
		return nil
	})
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("Do: %v, want ErrLockLost", err)
	}
	// The node timeout is 3s: a cancellation that waited for the extension comes ~2.7s late.
	if late := cancelled.Sub(deadline); late > time.Second {
		t.Errorf("fn's context cancelled %v after the lock's deadline", late)
	}
}
