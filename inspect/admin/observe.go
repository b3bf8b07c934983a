package admin

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/config"
)

// redact removes every configured password from s (defence in depth: no Redis or
// network error is expected to carry one).
func (a *Actions) redact(s string) string { return a.cfg.Scrub(s) }

// Observe reads resource on every master at once (TYPE, PTTL, GET; read-only, each bounded
// by ctx and the config's inspect timeout) and judges it the way the poller does, so that
// a force-release can say what it will delete where. Masters that did not answer are
// Up=false in the snapshot and their node carries the error.
func Observe(ctx context.Context, cfg *config.Config, pools []*redis.Pool, resource string) (*inspect.Snapshot, inspect.Resource) {
	key := cfg.Key(resource)
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
			mctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			n, rtt, err := observeNode(mctx, pool, key)
			n.Master = cfg.Masters[i].Name
			if err != nil {
				n.Error = cfg.Scrub(err.Error())
				snap.Masters[i].Error = n.Error
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
	inspect.Judge(&row, at, make([]float64, len(row.Nodes)), snap.TakenAt, cfg)
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
	n := inspect.Node{PTTLMs: -2, Type: "none"}
	t0 := time.Now()
	conn, err := pool.GetContext(ctx)
	if err != nil {
		return n, 0, err
	}
	defer conn.Close()
	typ, err := redis.String(redis.DoContext(conn, ctx, "TYPE", key))
	if err != nil {
		return n, 0, err
	}
	n.Type = typ
	if n.PTTLMs, err = redis.Int64(redis.DoContext(conn, ctx, "PTTL", key)); err != nil {
		return n, 0, err
	}
	if typ == "string" {
		v, err := redis.String(redis.DoContext(conn, ctx, "GET", key))
		if err != nil && !errors.Is(err, redis.ErrNil) {
			return n, 0, err
		}
		n.Value = v
	}
	return n, time.Since(t0), nil
}
