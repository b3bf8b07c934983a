package redlock

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The test servers have all just started: clients of this package's tests run without
// the restart guard unless a test asks for it (guardClient).
func init() { defaultRestartGuard = 0 }

// guardClient is newClient with the restart guard at its default (each lock's TTL).
func guardClient(t *testing.T, ms []*redistest.Server, opts ...Option) *Client {
	t.Helper()
	guardDefault := func(o *options) { o.restartGuard = -1 }
	return newClient(t, redistest.Pools(ms), append([]Option{guardDefault}, opts...)...)
}

// The restart hazard: three of five masters restart empty under a held lock. The
// holder learns of it within a probe and a round trip (not at its next ttl/3
// extension) and stops; a second client 0.5 s later cannot take the lock, because the
// restarted masters are not counted, and its error says so. With the guard off, the
// old behaviour: the second client takes it (documented trade-off).
func TestRestartedMajorityLetsNoSecondHolderIn(t *testing.T) {
	for _, guard := range []bool{true, false} {
		ms := redistest.StartN(t, 5, redistest.Options{})
		opts := []Option{}
		if !guard {
			opts = append(opts, WithRestartGuard(0))
		}
		// The servers have just started: wait out a short guard for the holder.
		holder := newClient(t, redistest.Pools(ms))
		const ttl = 9 * time.Second // extensions every 3 s
		held := make(chan struct{})
		lost := make(chan time.Time, 1)
		go holder.Do(context.Background(), "job", ttl, func(ctx context.Context) error {
			close(held)
			<-ctx.Done()
			lost <- time.Now()
			return nil
		})
		<-held
		time.Sleep(300 * time.Millisecond) // past the first probe
		restart := time.Now()
		for _, m := range ms[:3] {
			m.Restart(false)
		}
		time.Sleep(500 * time.Millisecond)
		second := guardClient(t, ms, opts...)
		_, err := second.Acquire(context.Background(), "job", ttl)
		switch {
		case guard && err == nil:
			t.Fatal("guard on: a second client took the lock on three just-restarted masters")
		case guard && !strings.Contains(err.Error(), "not counted"):
			t.Errorf("guard on: the error does not say the restarted masters were not counted: %v", err)
		case !guard && err != nil:
			t.Errorf("guard off: the second client could not take the lock (the old behaviour): %v", err)
		}
		if guard {
			var qe *QuorumError
			if !errors.As(err, &qe) || !strings.Contains(qe.Error(), "restarted") {
				t.Errorf("guard on: per-master reasons missing: %v", err)
			}
			select {
			case at := <-lost:
				if d := at.Sub(restart); d > 2500*time.Millisecond {
					t.Errorf("the holder learned of the restart %v after it (its next extension was due 3 s after the last)", d)
				}
			case <-time.After(5 * time.Second):
				t.Error("the holder's context was not cancelled within 5 s of the restart")
			}
		}
	}
}

// A master that persists every write (appendonly yes, appendfsync always) counts
// even just after a restart; a master up longer than the guard counts.
func TestDurableOrOldMastersCount(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true})
	c := guardClient(t, ms)
	if _, err := c.Acquire(context.Background(), "durable", 5*time.Second); err != nil {
		t.Fatalf("fresh durable masters: %v", err)
	}
	plain := redistest.StartN(t, 3, redistest.Options{})
	time.Sleep(1100 * time.Millisecond) // uptime_in_seconds counts whole seconds
	c = guardClient(t, plain)
	if _, err := c.Acquire(context.Background(), "old", time.Second); err != nil {
		t.Errorf("masters up longer than the guard: %v", err)
	}
	if _, err := c.Acquire(context.Background(), "young", 30*time.Second); err == nil {
		t.Error("masters up 1 s counted for a lock of 30 s")
	}
	h := c.Health()
	if len(h) != 3 || h[0].RunID == "" || h[0].Uptime < time.Second || h[0].Durable {
		t.Errorf("health %+v", h)
	}
}

// On masters started a moment ago, a failed acquisition says of each what happened:
// every master took it and was not counted, for how much longer; none is reported as
// timed out (the wait for replies goes on until a quorum that counts, or every master,
// answered), and the error names no option of this package.
func TestFreshMastersExplained(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	c := guardClient(t, ms)
	_, err := c.Acquire(context.Background(), "fresh", 30*time.Second)
	var qe *QuorumError
	if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("fresh masters: %v", err)
	}
	for _, n := range qe.Result.Nodes {
		var re *RestartedError
		if n.Outcome != OK || !errors.As(n.Err, &re) || re.Uptime <= 0 || re.Remaining <= 25*time.Second || re.Uptime+re.Remaining != 30*time.Second {
			t.Errorf("master %d: %v %v, want OK and not counted for the rest of 30s", n.Master, n.Outcome, n.Err)
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "With") || strings.Contains(msg, "timeout") || !strings.Contains(msg, "3 of the 3 masters that said OK restarted") ||
		!regexp.MustCompile(`restarted (under 1s|\d+s) ago or less .* not counted toward a quorum for up to another (29|30)s$`).MatchString(msg) {
		t.Errorf("the error: %s", msg)
	}
}
