package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
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

// observeConn reads key on conn (TYPE, PTTL, GET or the hash's fields); the duration
// is counted from t0.
func observeConn(ctx context.Context, conn redis.Conn, key string, t0 time.Time) (inspect.Node, time.Duration, error) {
	n := inspect.Node{PTTLMs: -2, Type: "none"}
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
	if typ == locks.TypeHash || typ == locks.TypeZSet {
		observe := observeHash
		if typ == locks.TypeZSet {
			observe = observeZSet
		}
		l, err := observe(ctx, conn, key, n.PTTLMs)
		if err != nil {
			return n, 0, err
		}
		n.Lock = &l
		if l.Recognised() {
			n.Value = l.Holder
		}
	}
	return n, time.Since(t0), nil
}

// observeZSet reads a sorted set's members and scores as the poller does (bounded,
// read-only) and decodes them.
func observeZSet(ctx context.Context, conn redis.Conn, key string, pttl int64) (locks.Lock, error) {
	const most = 64
	e := locks.Entry{Key: key, Type: locks.TypeZSet, PTTLMs: pttl}
	items, err := redis.Strings(redis.DoContext(conn, ctx, "ZRANGE", key, 0, most, "WITHSCORES"))
	if err != nil {
		return locks.Lock{}, fmt.Errorf("ZRANGE: %w", err)
	}
	for i := 0; i+1 < len(items); i += 2 {
		f, err := strconv.ParseFloat(items[i+1], 64)
		if err != nil {
			return locks.Lock{}, fmt.Errorf("ZRANGE %q: score %q is no number", key, items[i+1])
		}
		e.Items, e.Scores = append(e.Items, items[i]), append(e.Scores, f)
	}
	if len(e.Items) > most {
		e.Items, e.Scores, e.Truncated = e.Items[:most], e.Scores[:most], true
	}
	return locks.Decode(e, nil, time.Now()), nil
}

// observeHash reads a hash key's fields and companions as the poller does (bounded,
// read-only) and decodes them.
func observeHash(ctx context.Context, conn redis.Conn, key string, pttl int64) (locks.Lock, error) {
	e := locks.Entry{Key: key, Type: locks.TypeHash, PTTLMs: pttl, Fields: map[string]string{}}
	r, err := redis.Values(redis.DoContext(conn, ctx, "HSCAN", key, "0", "COUNT", 128))
	if err != nil || len(r) != 2 {
		return locks.Lock{}, errors.Join(errors.New("HSCAN: unexpected reply"), err)
	}
	cursor, _ := redis.String(r[0], nil)
	kv, _ := redis.Strings(r[1], nil)
	for i := 0; i+1 < len(kv); i += 2 {
		e.Fields[kv[i]] = kv[i+1]
	}
	e.Truncated = cursor != "0"
	related := map[string]locks.Entry{}
	for _, c := range locks.Related(e) {
		ce := locks.Entry{Key: c.Key, Type: locks.TypeNone, PTTLMs: -2}
		switch c.Type {
		case locks.TypeString:
			if v, err := redis.String(redis.DoContext(conn, ctx, "GET", c.Key)); err == nil {
				ce.Type, ce.Value, ce.PTTLMs = locks.TypeString, v, -1
			}
		case locks.TypeList:
			if items, err := redis.Strings(redis.DoContext(conn, ctx, "LRANGE", c.Key, 0, 63)); err == nil && len(items) > 0 {
				ce.Type, ce.Items, ce.PTTLMs = locks.TypeList, items, -1
			}
		case locks.TypeZSet:
			if items, err := redis.Strings(redis.DoContext(conn, ctx, "ZRANGE", c.Key, 0, 63, "WITHSCORES")); err == nil && len(items) > 0 {
				ce.Type, ce.PTTLMs = locks.TypeZSet, -1
				for i := 0; i+1 < len(items); i += 2 {
					f, _ := strconv.ParseFloat(items[i+1], 64)
					ce.Items, ce.Scores = append(ce.Items, items[i]), append(ce.Scores, f)
				}
			}
		}
		related[c.Key] = ce
	}
	return locks.Decode(e, related, time.Now()), nil
}
