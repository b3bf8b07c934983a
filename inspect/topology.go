package inspect

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

	"github.com/redlockctl/redlockctl/inspect/config"
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
	var re respError
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
		v, err := rc.readBulk()
		if m.redirected(err) {
			moved[i] = true
			continue
		}
		var re respError
		if errors.As(err, &re) && strings.HasPrefix(string(re), "WRONGTYPE") {
			continue // not a string: nil value, TYPE follows
		}
		if err != nil {
			return nil, fmt.Errorf("GET: %w", err)
		}
		kb.vals[i] = v
	}
	for i := range kb.keys {
		n, err := rc.readInt()
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
	raws       map[string]*respConn
	healthSeen map[string]bool
	addr       string   // Sentinel group: the master being read ("" = resolve)
	known      []string // cluster: shard masters found last time, asked before the seeds
}

func newNodeConns(mc config.MasterConfig, timeout time.Duration) *nodeConns {
	nc := &nodeConns{pools: map[string]*redis.Pool{}, raws: map[string]*respConn{}, healthSeen: map[string]bool{}}
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
		rc.close()
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
func (nc *nodeConns) readTarget(t target, cfg *config.Config, deadline time.Time, wantHealth bool, mi int, col *collector) *masterRead {
	addr := t.mc.Addr
	raw := nc.raws[addr]
	r := readMaster(t, cfg, deadline, wantHealth || !nc.healthSeen[addr], &raw, mi, col)
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
func (p *Poller) readSentinel(mi int, st *masterState, deadline time.Time, wantHealth bool, col *collector) *masterRead {
	mc := p.cfg.Masters[mi]
	nc := st.conns
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if nc.addr != "" {
		// The sentinels name the new master as soon as they promote it, while the old
		// one may still say master for seconds: ask both every poll.
		reported := mostReported(topology.AskSentinels(ctx, nc.dialS, mc.Sentinels, mc.MasterName))
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
	var info *sentinelInfo
	var wg sync.WaitGroup
	if wantHealth || fresh {
		wg.Add(1)
		group := mc
		go func() { defer wg.Done(); info = p.askSentinels(ctx, group, nc) }()
	}
	mc.Addr = nc.addr
	r := nc.readTarget(target{pool: nc.pool(nc.addr), mc: mc}, p.cfg, deadline, wantHealth || fresh, mi, col)
	wg.Wait()
	r.sentinel = info
	if r.err != nil || (r.health != nil && r.health.role != "" && r.health.role != "master") {
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

// sentinelInfo is what the sentinels said about a group (SENTINEL MASTER and
// SENTINEL CKQUORUM on each).
type sentinelInfo struct {
	configured  int    // sentinels in the config
	answered    int    // sentinels that know the group
	known       int    // sentinels the best-informed one knows, itself included
	ckquorum    string // "" when every answering sentinel said OK, else the first refusal
	configEpoch int64
	promotedMs  int64 // the longest role-reported-time among the sentinels (-1 unknown)
	errs        []string
}

func (p *Poller) askSentinels(ctx context.Context, mc config.MasterConfig, nc *nodeConns) *sentinelInfo {
	info := &sentinelInfo{configured: len(mc.Sentinels), promotedMs: -1}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range mc.Sentinels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fields, ck, err := askSentinel(ctx, nc.dialS, s, mc.MasterName)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				info.errs = append(info.errs, s+": "+p.cfg.Scrub(err.Error()))
				return
			}
			info.answered++
			if n, err := strconv.Atoi(fields["num-other-sentinels"]); err == nil {
				info.known = max(info.known, n+1)
			}
			if e, err := strconv.ParseInt(fields["config-epoch"], 10, 64); err == nil {
				info.configEpoch = max(info.configEpoch, e)
			}
			if t, err := strconv.ParseInt(fields["role-reported-time"], 10, 64); err == nil {
				info.promotedMs = max(info.promotedMs, t)
			}
			if ck != "" && info.ckquorum == "" {
				info.ckquorum = s + ": " + ck
			}
		}()
	}
	wg.Wait()
	sort.Strings(info.errs)
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

// clusterRead is what one poll learnt about a cluster besides its shards' keys.
type clusterRead struct {
	shards []topology.Shard
	reads  []*masterRead // per shard, same order
	owner  []int16       // slot -> shard index (-1: not served)
	info   map[string]string
}

// readCluster finds the shard masters (CLUSTER SHARDS, or CLUSTER SLOTS on older
// servers), reads every shard master at once into column mi, then checks whether a
// slot moved or was migrating while it read: such a poll may have missed keys and is
// marked incomplete. The entry fails only when no shard answered.
func (p *Poller) readCluster(mi int, st *masterState, deadline time.Time, wantHealth bool, col *collector) *masterRead {
	mc := p.cfg.Masters[mi]
	nc := st.conns
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	res := &masterRead{}
	shards, info, err := nc.discover(ctx, mc)
	if err != nil {
		res.err = errors.New(p.cfg.Scrub(err.Error()))
		return res
	}
	cr := &clusterRead{shards: shards, info: info, reads: make([]*masterRead, len(shards)), owner: make([]int16, topology.Slots)}
	for i := range cr.owner {
		cr.owner[i] = -1
	}
	for si, sh := range shards {
		for _, r := range sh.Slots {
			for s := max(r[0], 0); s <= r[1] && s < topology.Slots; s++ {
				cr.owner[s] = int16(si)
			}
		}
	}
	res.cluster = cr
	// Each shard's connections are handed to its goroutine and taken back after.
	type conns struct {
		raw  *respConn
		pool *redis.Pool
		seen bool
	}
	own := make([]conns, len(shards))
	for si, sh := range shards {
		own[si] = conns{raw: nc.raws[sh.Master], pool: nc.pool(sh.Master), seen: nc.healthSeen[sh.Master]}
	}
	var wg sync.WaitGroup
	for si, sh := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			smc := mc
			smc.Addr = sh.Master
			t := target{pool: own[si].pool, mc: smc, cluster: true, shard: si,
				ownsKey: func(key string) bool { return cr.owner[topology.Slot(key)] == int16(si) }}
			cr.reads[si] = readMaster(t, p.cfg, deadline, wantHealth || !own[si].seen, &own[si].raw, mi, col)
			cr.reads[si].addr = sh.Master
		}()
	}
	wg.Wait()
	current := map[string]bool{}
	failed := 0
	for si, sh := range shards {
		current[sh.Master] = true
		nc.raws[sh.Master] = own[si].raw
		if own[si].raw == nil {
			delete(nc.raws, sh.Master)
		}
		if cr.reads[si].health != nil {
			nc.healthSeen[sh.Master] = true
		}
		res.moved += cr.reads[si].moved
		if cr.reads[si].err != nil {
			failed++
		}
		res.capped = res.capped || cr.reads[si].capped
		res.scanned += cr.reads[si].scanned
	}
	for addr := range nc.pools {
		if !current[addr] {
			nc.forget(addr)
		}
	}
	if failed == len(shards) {
		res.err = fmt.Errorf("no shard master answered: %v", cr.reads[0].err)
		return res
	}
	if col != nil {
		res.incomplete = nc.migrations(ctx, shards, res.moved)
	}
	return res
}

// sampleShards keeps the clock samples of a cluster read that read no keys.
func sampleShards(st *masterState, cr *clusterRead) {
	for si, sh := range cr.shards {
		if hs := st.shards[sh.Master]; hs != nil && cr.reads[si].clock != nil {
			hs.clock.add(*cr.reads[si].clock)
		}
	}
}

// discover asks the shard masters found last time, then the seeds, for the cluster's
// shards and CLUSTER INFO. A seed that is not in cluster mode gives an error that says so.
func (nc *nodeConns) discover(ctx context.Context, mc config.MasterConfig) ([]topology.Shard, map[string]string, error) {
	var errs []error
	tried := map[string]bool{}
	for _, addr := range append(append([]string(nil), nc.known...), mc.Cluster...) {
		if tried[addr] {
			continue
		}
		tried[addr] = true
		shards, info, err := discoverAt(ctx, nc.pool(addr))
		if err == nil {
			nc.known = nc.known[:0]
			for _, sh := range shards {
				nc.known = append(nc.known, sh.Master)
			}
			return shards, info, nil
		}
		if errors.Is(err, topology.ErrNotCluster) {
			return nil, nil, fmt.Errorf("%s is not in cluster mode (cluster support disabled): a plain server goes in addr = %q, not in cluster = [...]", addr, addr)
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, fmt.Errorf("cluster: no node answered: %w", errors.Join(errs...))
}

func discoverAt(ctx context.Context, pool *redis.Pool) ([]topology.Shard, map[string]string, error) {
	c, err := pool.GetContext(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	shards, err := topology.Shards(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if len(shards) == 0 {
		return nil, nil, errors.New("the cluster has no master")
	}
	s, err := redis.String(redis.DoContext(c, ctx, "CLUSTER", "INFO"))
	if err != nil {
		return nil, nil, fmt.Errorf("CLUSTER INFO: %w", err)
	}
	info := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = v
		}
	}
	return shards, info, nil
}

// migrations says why the poll may have missed keys ("" when it cannot have): keys
// answered with a redirection, a slot migrating or importing on a shard master when the
// read ended (CLUSTER NODES marks them), or slot owners that changed during the poll.
func (nc *nodeConns) migrations(ctx context.Context, shards []topology.Shard, moved int) string {
	var why []string
	if moved > 0 {
		why = append(why, fmt.Sprintf("%d keys were answered by another shard (MOVED/ASK)", moved))
	}
	for _, sh := range shards {
		c, err := nc.pool(sh.Master).GetContext(ctx)
		if err != nil {
			continue
		}
		s, err := redis.String(redis.DoContext(c, ctx, "CLUSTER", "NODES"))
		c.Close()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "myself") && strings.Contains(line, "[") {
				why = append(why, sh.Master+" has a slot migrating or importing")
			}
		}
	}
	if after, _, err := discoverAt(ctx, nc.pool(shards[0].Master)); err == nil && fingerprint(after) != fingerprint(shards) {
		why = append(why, "slot owners changed during the poll")
	}
	if len(why) == 0 {
		return ""
	}
	return "keys may be missing: " + strings.Join(why, "; ")
}

func fingerprint(shards []topology.Shard) string {
	var b strings.Builder
	for _, sh := range shards {
		fmt.Fprintf(&b, "%s%v;", sh.Master, sh.Slots)
	}
	return b.String()
}

// slotRanges formats a shard's slot ranges: "0-5460,10923".
func slotRanges(rs [][2]int) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r[0] == r[1] {
			parts[i] = strconv.Itoa(r[0])
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r[0], r[1])
		}
	}
	return strings.Join(parts, ",")
}
