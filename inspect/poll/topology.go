package poll

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// target is one server read for a master entry: the entry's address (plain), the
// master the sentinels reported and ROLE confirmed (Sentinel group), or one shard
// master (cluster). mc.Addr is the server read.
type target struct {
	pool    *redis.Pool
	mc      config.MasterConfig
	cluster bool                  // keys are read with GET, not MGET (no cross-slot commands)
	shard   int                   // the shard's index in this poll's discovery
	ownsKey func(key string) bool // cluster: whether the key's slot is this shard's
}

// owns reports whether a configured resource's key is read on this target.
func (t target) owns(key string) bool { return t.ownsKey == nil || t.ownsKey(key) }

// redirected reports whether err is a cluster redirection or a refusal during a slot
// migration: the key is not (or no longer) on this shard. Such keys are counted, as the
// poll may then have missed them.
func (m *masterScan) redirected(err error) bool {
	var re wire.ReplyError
	if !errors.As(err, &re) {
		return false
	}
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"} {
		if strings.HasPrefix(string(re), p) {
			m.res.moved++
			return true
		}
	}
	return false
}

// recvClusterBatch reads the replies of one GET and one PTTL per key; a key another
// shard answers for is absent here (and counted in res.moved).
func (m *masterScan) recvClusterBatch(kb *keyBatch) (*keyBatch, error) {
	rc := m.rc
	moved := make([]bool, len(kb.keys))
	for i := range kb.keys {
		v, err := rc.ReadBulk()
		if m.redirected(err) {
			moved[i] = true
			continue
		}
		var re wire.ReplyError
		if errors.As(err, &re) && strings.HasPrefix(string(re), "WRONGTYPE") {
			continue // not a string: nil value, TYPE follows
		}
		if err != nil {
			return nil, fmt.Errorf("GET: %w", err)
		}
		kb.vals[i] = v
	}
	for i := range kb.keys {
		n, err := rc.ReadInt()
		if moved[i] || m.redirected(err) {
			kb.pttls[i] = -2
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("PTTL: %w", err)
		}
		kb.pttls[i] = n
	}
	return kb, nil
}

// nodeConns is what the poller keeps per Sentinel group or cluster between polls:
// connections per server address, the resolved master, the shards last found. Only the
// goroutine reading the entry touches it (the entry's busy flag guards it).
type nodeConns struct {
	dial       config.Dialer
	dialS      config.Dialer
	pools      map[string]*redis.Pool
	raws       map[string]*wire.Conn
	healthSeen map[string]bool
	addr       string   // Sentinel group: the master being read ("" = resolve)
	known      []string // cluster: shard masters found last time, asked before the seeds
}

func newNodeConns(mc config.MasterConfig, timeout time.Duration) *nodeConns {
	nc := &nodeConns{pools: map[string]*redis.Pool{}, raws: map[string]*wire.Conn{}, healthSeen: map[string]bool{}}
	var errD, errS error
	nc.dial, errD = mc.NodeDialer(timeout)
	if mc.Kind() == config.KindSentinel {
		nc.dialS, errS = mc.SentinelDialer(timeout)
	}
	if err := errors.Join(errD, errS); err != nil {
		failing := func(context.Context, string) (redis.Conn, error) { return nil, err }
		nc.dial, nc.dialS = failing, failing
	}
	return nc
}

// pool returns the pool of connections to addr.
func (nc *nodeConns) pool(addr string) *redis.Pool {
	p, ok := nc.pools[addr]
	if !ok {
		dial := nc.dial
		p = &redis.Pool{MaxIdle: 2, IdleTimeout: time.Minute,
			DialContext: func(ctx context.Context) (redis.Conn, error) { return dial(ctx, addr) }}
		nc.pools[addr] = p
	}
	return p
}

// forget closes what is kept for addr (a server that is no longer read).
func (nc *nodeConns) forget(addr string) {
	if rc := nc.raws[addr]; rc != nil {
		rc.Close()
	}
	if p := nc.pools[addr]; p != nil {
		p.Close()
	}
	delete(nc.raws, addr)
	delete(nc.pools, addr)
	delete(nc.healthSeen, addr)
}

func (nc *nodeConns) close() {
	for addr := range nc.pools {
		nc.forget(addr)
	}
	for addr := range nc.raws {
		nc.forget(addr)
	}
}

// readTarget reads one server through readMaster, keeping its key connection in nc.
func (nc *nodeConns) readTarget(t target, cfg *config.Config, deadline time.Time, wantHealth bool, mi int, col *collector, live *wire.Liveness) *masterRead {
	addr := t.mc.Addr
	raw := nc.raws[addr]
	r := readMaster(t, cfg, deadline, wantHealth || !nc.healthSeen[addr], &raw, mi, col, live)
	nc.raws[addr] = raw
	if raw == nil {
		delete(nc.raws, addr)
	}
	if r.health != nil {
		nc.healthSeen[addr] = true
	}
	r.addr = addr
	return r
}

// readSentinel reads a Sentinel group's current master: the one read last time while
// its ROLE still says master and the sentinels still report it, else the one
// topology.ResolveMaster finds (asking every sentinel, trusting only a ROLE-confirmed
// address). On health polls and after a
// change of master, it also reads what the sentinels say about the group.
func (p *Poller) readSentinel(mi int, st *masterState, deadline time.Time, wantHealth bool, col *collector, live *wire.Liveness) *masterRead {
	mc := p.cfg.Masters[mi]
	nc := st.conns
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if nc.addr != "" {
		// The sentinels name the new master as soon as they promote it, while the old
		// one may still say master for seconds: ask both every poll. The sentinels get
		// half of the time left, and are not waited for once a majority agree: a slow
		// sentinel must not leave the master no time to answer.
		reported := mostReported(topology.AskSentinelsMajority(ctx, nc.dialS, mc.Sentinels, mc.MasterName))
		if role, err := roleAt(ctx, nc.pool(nc.addr)); err != nil || role != "master" || (reported != "" && reported != nc.addr) {
			nc.forget(nc.addr) // failed over, or gone: resolve again
			nc.addr = ""
		}
	}
	fresh := false
	if nc.addr == "" {
		addr, _, err := topology.ResolveMaster(ctx, mc.Sentinels, mc.MasterName, nc.dialS, nc.dial)
		if err != nil {
			return &masterRead{err: errors.New(p.cfg.Scrub(err.Error())), sentinel: p.askSentinels(ctx, mc, nc)}
		}
		nc.addr, fresh = addr, true
	}
	var info *verdict.SentinelInfo
	var wg sync.WaitGroup
	if wantHealth || fresh {
		wg.Add(1)
		group := mc
		go func() {
			defer wg.Done()
			defer func() {
				if rec := recover(); rec != nil { // a bug costs the Sentinels' view, named as such
					info = &verdict.SentinelInfo{Configured: len(group.Sentinels), PromotedMs: -1,
						Errs: []string{fmt.Sprintf("internal error, please report it: %v", rec)}}
				}
			}()
			info = p.askSentinels(ctx, group, nc)
		}()
	}
	mc.Addr = nc.addr
	// A master that does not answer still leaves time to hand the result over.
	readBy := deadline.Add(-min(time.Until(deadline)/5, 100*time.Millisecond))
	r := nc.readTarget(target{pool: nc.pool(nc.addr), mc: mc}, p.cfg, readBy, wantHealth || fresh, mi, col, live)
	wg.Wait()
	r.sentinel = info
	if r.err != nil || (r.health != nil && r.health.Role != "" && r.health.Role != "master") {
		nc.forget(nc.addr)
		nc.addr = ""
	}
	return r
}

// mostReported returns the address most sentinels reported ("" when none answered).
func mostReported(answers []topology.SentinelAnswer) string {
	votes, best := map[string]int{}, ""
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		votes[a.Addr]++
		if best == "" || votes[a.Addr] > votes[best] {
			best = a.Addr
		}
	}
	return best
}

func roleAt(ctx context.Context, pool *redis.Pool) (string, error) {
	c, err := pool.GetContext(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return topology.Role(ctx, c)
}

func (p *Poller) askSentinels(ctx context.Context, mc config.MasterConfig, nc *nodeConns) *verdict.SentinelInfo {
	info := &verdict.SentinelInfo{Configured: len(mc.Sentinels), PromotedMs: -1}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range mc.Sentinels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if rec := recover(); rec != nil { // a bug costs this Sentinel's answer, named as such
					mu.Lock()
					info.Errs = append(info.Errs, fmt.Sprintf("%s: internal error, please report it: %v", s, rec))
					mu.Unlock()
				}
			}()
			fields, ck, err := askSentinel(ctx, nc.dialS, s, mc.MasterName)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				info.Errs = append(info.Errs, s+": "+p.cfg.Scrub(err.Error()))
				return
			}
			info.Answered++
			if n, err := strconv.Atoi(fields["num-other-sentinels"]); err == nil {
				info.Known = max(info.Known, n+1)
			}
			if e, err := strconv.ParseInt(fields["config-epoch"], 10, 64); err == nil {
				info.ConfigEpoch = max(info.ConfigEpoch, e)
			}
			if t, err := strconv.ParseInt(fields["role-reported-time"], 10, 64); err == nil {
				info.PromotedMs = max(info.PromotedMs, t)
			}
			if ck != "" && info.Ckquorum == "" {
				info.Ckquorum = s + ": " + ck
			}
		}()
	}
	wg.Wait()
	sort.Strings(info.Errs)
	return info
}

// askSentinel reads SENTINEL MASTER name and SENTINEL CKQUORUM name from one sentinel;
// ck is "" when CKQUORUM said OK.
func askSentinel(ctx context.Context, dial config.Dialer, addr, name string) (map[string]string, string, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	c.Send("SENTINEL", "MASTER", name)
	c.Send("SENTINEL", "CKQUORUM", name)
	if err := c.Flush(); err != nil {
		return nil, "", err
	}
	fields, err := redis.StringMap(redis.ReceiveContext(c, ctx))
	if err != nil {
		return nil, "", err
	}
	ck := ""
	if _, err := redis.String(redis.ReceiveContext(c, ctx)); err != nil {
		var re redis.Error
		if !errors.As(err, &re) {
			return nil, "", err
		}
		ck = string(re)
	}
	return fields, ck, nil
}
