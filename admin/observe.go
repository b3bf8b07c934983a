package admin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// redact removes every configured password from s (defence in depth: no Redis or
// network error is expected to carry one).
func (a *Actions) redact(s string) string { return a.cfg.Scrub(s) }

// Observe reads resource on every master at once (TYPE, PTTL, GET; read-only, each bounded
// by ctx and the config's inspect timeout) and judges it the way the poller does, so that
// a force-release can say what it will delete where. Masters that did not answer are
// Up=false in the snapshot and their node carries the error.
func Observe(ctx context.Context, cfg *config.Config, pools []*redis.Pool, resource string) (*inspect.Snapshot, inspect.Resource) {
	return ObserveKey(ctx, cfg, pools, resource, cfg.Key(resource))
}

// ObserveKey is Observe of an exact key, shown under the name resource: the way to look
// at a lock another library wrote outside lock.key_prefix. Hash keys are read as the
// poller reads them (fields and companions, bounded) and decoded (inspect/locks).
func ObserveKey(ctx context.Context, cfg *config.Config, pools []*redis.Pool, resource, key string) (*inspect.Snapshot, inspect.Resource) {
	timeout := cfg.Inspect.Timeout
	if timeout <= 0 {
		timeout = config.DefaultTimeout
	}
	snap := &inspect.Snapshot{TakenAt: time.Now().UTC(), Quorum: cfg.Quorum(), Complete: true}
	snap.Masters = make([]inspect.Master, len(cfg.Masters))
	row := inspect.Resource{Resource: resource, Key: key, Nodes: make([]inspect.Node, len(cfg.Masters))}
	var wg sync.WaitGroup
	for i, m := range cfg.Masters {
		snap.Masters[i] = inspect.Master{Name: m.Name, Addr: m.Addr}
		row.Nodes[i] = inspect.Node{Master: m.Name, PTTLMs: -2}
		if i >= len(pools) {
			snap.Masters[i].Error = "no connection pool"
			continue
		}
		wg.Add(1)
		go func(i int, pool *redis.Pool) {
			defer wg.Done()
			defer func() {
				if rec := recover(); rec != nil { // a bug costs this master's view, named as such
					snap.Masters[i].Error = fmt.Sprintf("internal error, please report it: %v", rec)
				}
			}()
			mctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			n, rtt, addr, err := observeEntry(mctx, cfg.Masters[i], timeout, pool, key)
			n.Master = cfg.Masters[i].Name
			if addr != "" {
				snap.Masters[i].Addr = addr
			}
			if err != nil {
				n.Error, n.ErrorKind = cfg.Scrub(err.Error()), errkind.Of(err)
				snap.Masters[i].Error, snap.Masters[i].ErrorKind = n.Error, n.ErrorKind
			} else {
				snap.Masters[i].Up = true
				snap.Masters[i].RTTMs = float64(rtt.Microseconds()) / 1000
			}
			row.Nodes[i] = n
		}(i, pools[i])
	}
	wg.Wait()
	// The same verdict as a poll's (no clock rates: one look measures none).
	at := make([]time.Time, len(row.Nodes))
	for i := range at {
		at[i] = snap.TakenAt
	}
	verdict.Judge(&row, at, make([]float64, len(row.Nodes)), snap.TakenAt, cfg)
	for _, m := range snap.Masters {
		if m.Up {
			snap.Summary.MastersUp++
		} else {
			snap.Complete = false
		}
	}
	snap.Resources = []inspect.Resource{row}
	return snap, row
}

func observeNode(ctx context.Context, pool *redis.Pool, key string) (inspect.Node, time.Duration, error) {
	t0 := time.Now()
	conn, err := pool.GetContext(ctx)
	if err != nil {
		return inspect.Node{PTTLMs: -2, Type: "none"}, 0, err
	}
	defer conn.Close()
	return observeConn(ctx, conn, key, t0)
}

// observeConn reads key on conn with the key reader the poller uses (poll.ReadKeys:
// TYPE, PTTL, GET, a hash's fields or a sorted set's members and their companions,
// bounded, read-only) and decodes it (locks.See); the duration is counted from t0.
func observeConn(ctx context.Context, conn redis.Conn, key string, t0 time.Time) (inspect.Node, time.Duration, error) {
	n := inspect.Node{PTTLMs: -2, Type: locks.TypeNone}
	reads, err := poll.ReadKeys(poll.RedigoPipe(ctx, conn), []string{key})
	if err != nil {
		return n, 0, err
	}
	s := locks.See(reads[0].Entry, reads[0].Related, time.Now())
	n.Type, n.PTTLMs, n.Value, n.Lock = s.Type, s.PTTLMs, s.Value, s.Lock
	return n, time.Since(t0), nil
}
