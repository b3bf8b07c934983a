package redlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/topology"
)

// sentinelSource gives the pipes of a Sentinel instance connections to the group's
// current master. Its epoch changes whenever the master may have changed (a connection
// failed, a READONLY reply, or the sentinels report another address); pipes holding a
// connection of an older epoch reconnect, and the next connection resolves the master
// again through the sentinels and confirms it with ROLE.
type sentinelSource struct {
	cfg          Sentinel
	dialSentinel topology.Dialer
	dialNode     topology.Dialer
	resolveLimit time.Duration // bound of one background resolution

	turn     chan struct{} // a token: held while resolving (one resolution at a time)
	resolved atomic.Pointer[string]
	epoch    atomic.Uint64
	stale    atomic.Bool // resolve before the next connection
	kick     chan struct{}
}

func newSentinelSource(cfg Sentinel, o *options, quit <-chan struct{}, wg *sync.WaitGroup) *sentinelSource {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSentinelInterval
	}
	sentinelOpts := dialOptions(o, cfg.SentinelDialOptions)
	nodeOpts := dialOptions(o, cfg.DialOptions)
	s := &sentinelSource{
		cfg: cfg,
		dialSentinel: func(ctx context.Context, addr string) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, sentinelOpts...)
		},
		dialNode: func(ctx context.Context, addr string) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, nodeOpts...)
		},
		resolveLimit: max(time.Second, 20*o.nodeTimeout),
		kick:         make(chan struct{}, 1),
		turn:         make(chan struct{}, 1),
	}
	s.stale.Store(true)
	wg.Add(1)
	go func() { defer wg.Done(); s.watch(quit) }()
	return s
}

// addr returns the last confirmed master address ("" before the first).
func (s *sentinelSource) addr() string {
	if p := s.resolved.Load(); p != nil {
		return *p
	}
	return ""
}

// get dials the current master (resolving it first when needed) and checks its ROLE on
// the connection it returns, so a pipe never starts on a replica.
func (s *sentinelSource) get(ctx context.Context) (redis.Conn, uint64, error) {
	addr, epoch, err := s.master(ctx)
	if err != nil {
		return nil, 0, err
	}
	conn, err := s.dialNode(ctx, addr)
	if err != nil {
		s.failed()
		return nil, 0, fmt.Errorf("master %s of %q: %w", addr, s.cfg.MasterName, err)
	}
	role, err := topology.Role(ctx, conn)
	if err == nil && role != "master" {
		err = fmt.Errorf("ROLE says %s", role)
	}
	if err != nil {
		conn.Close()
		s.failed()
		return nil, 0, fmt.Errorf("master %s of %q: %w", addr, s.cfg.MasterName, err)
	}
	return conn, epoch, nil
}

// master returns the master address and its epoch, resolving through the sentinels when
// none is known or the last one is suspect.
func (s *sentinelSource) master(ctx context.Context) (string, uint64, error) {
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-ctx.Done():
		return "", 0, fmt.Errorf("resolving the master of %q: %w", s.cfg.MasterName, ctx.Err())
	}
	if a := s.addr(); a != "" && !s.stale.Load() {
		return a, s.epoch.Load(), nil
	}
	addr, _, err := topology.ResolveMaster(ctx, s.cfg.Addrs, s.cfg.MasterName, s.dialSentinel, s.dialNode)
	if err != nil {
		return "", 0, err
	}
	if addr != s.addr() {
		s.resolved.Store(&addr)
		s.epoch.Add(1)
	}
	s.stale.Store(false)
	return addr, s.epoch.Load(), nil
}

func (s *sentinelSource) current(epoch uint64) bool { return epoch == s.epoch.Load() }

// failed marks the master suspect: every pipe reconnects, and the first to do so
// resolves again.
func (s *sentinelSource) failed() {
	s.stale.Store(true)
	s.epoch.Add(1)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// watch resolves the master at once, then every Interval asks the sentinels whether it
// changed, so that a failover whose old master still answers (SENTINEL FAILOVER, a
// partition) is followed too. A changed report marks the master suspect; the pipes then
// resolve it with ROLE before trusting it.
func (s *sentinelSource) watch(quit <-chan struct{}) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { <-quit; stop() }() // Close does not wait for a slow sentinel
	for first := true; ; first = false {
		ctx, cancel := context.WithTimeout(base, s.resolveLimit)
		if first || s.stale.Load() {
			s.master(ctx)
		} else if s.changed(ctx) {
			s.failed()
		}
		cancel()
		select {
		case <-quit:
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// changed reports whether the address most sentinels report differs from the one in use.
func (s *sentinelSource) changed(ctx context.Context) bool {
	cur := s.addr()
	if cur == "" {
		return false
	}
	votes := map[string]int{}
	best := ""
	for _, a := range topology.AskSentinels(ctx, s.dialSentinel, s.cfg.Addrs, s.cfg.MasterName) {
		if a.Err != nil {
			continue
		}
		votes[a.Addr]++
		if votes[a.Addr] > votes[best] {
			best = a.Addr
		}
	}
	return best != "" && best != cur
}
