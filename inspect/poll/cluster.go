package poll

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

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
		raw  *wire.Conn
		pool *redis.Pool
		seen bool
	}
	own := make([]conns, len(shards))
	for si, sh := range shards {
		own[si] = conns{raw: nc.raws[sh.Master], pool: nc.pool(sh.Master), seen: nc.healthSeen[sh.Master]}
	}
	// The shards answer a little before the poll's deadline, so that a shard that does
	// not answer still leaves time to merge the others and check for migrations.
	shardDeadline := deadline.Add(-min(time.Until(deadline)/5, 100*time.Millisecond))
	var wg sync.WaitGroup
	for si, sh := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A bug met on one shard's read costs that shard's rows, named as such.
				if rec := recover(); rec != nil {
					cr.reads[si] = &masterRead{err: fmt.Errorf("internal error, please report it: %v", rec), addr: sh.Master}
				}
			}()
			smc := mc
			smc.Addr = sh.Master
			t := target{pool: own[si].pool, mc: smc, cluster: true, shard: si,
				ownsKey: func(key string) bool { return cr.owner[topology.Slot(key)] == int16(si) }}
			cr.reads[si] = readMaster(t, p.cfg, shardDeadline, wantHealth || !own[si].seen, &own[si].raw, mi, col, nil)
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
		mctx, cancel := context.WithDeadline(ctx, deadline.Add(-min(time.Until(deadline)/2, 50*time.Millisecond)))
		res.incomplete = nc.migrations(mctx, shards, cr.reads, res.moved)
		cancel()
	}
	return res
}

// sampleShards keeps the clock samples of a cluster read that read no keys.
func sampleShards(st *masterState, cr *clusterRead) {
	for si, sh := range cr.shards {
		if hs := st.shards[sh.Master]; hs != nil && cr.reads[si].clock != nil {
			hs.clock.Add(*cr.reads[si].clock)
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
		// One node that does not answer (paused) must leave time to ask the next.
		dctx, cancel := context.WithTimeout(ctx, max(time.Until(deadlineOf(ctx))/3, 10*time.Millisecond))
		shards, info, err := discoverAt(dctx, nc.pool(addr))
		cancel()
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
func (nc *nodeConns) migrations(ctx context.Context, shards []topology.Shard, reads []*masterRead, moved int) string {
	var why []string
	if moved > 0 {
		why = append(why, fmt.Sprintf("%d keys were answered by another shard (MOVED/ASK)", moved))
	}
	answered := ""
	for si, sh := range shards {
		if reads[si].err != nil {
			continue // did not answer: its keys are already uncertain
		}
		if answered == "" {
			answered = sh.Master
		}
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
	if answered == "" {
		return ""
	}
	if after, _, err := discoverAt(ctx, nc.pool(answered)); err == nil && fingerprint(after) != fingerprint(shards) {
		why = append(why, "slot owners changed during the poll")
	}
	if len(why) == 0 {
		return ""
	}
	return "keys may be missing: " + strings.Join(why, "; ")
}

// deadlineOf returns ctx's deadline (a minute from now when it has none).
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
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
