package inspect

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/inspect/config"
	"github.com/redlockctl/redlockctl/inspect/errkind"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/redlock"
)

// collector merges the masters' key batches into rows as they arrive, so that the raw
// replies of every master are never all held at once. Once closed (Poll stopped
// waiting), batches from stragglers are dropped.
type collector struct {
	mu      sync.Mutex
	closed  bool
	cfg     *config.Config
	n       int
	index   map[string]int32
	rows    []Resource
	batch   []int32       // rows×n: the batch each node was read in (-1: not read)
	batchAt [][]time.Time // per master: local instant of each batch
	// Clusters: the shard each batch was read from, each shard's clock rate, and which
	// keys' shard did not answer (set before finish; nil for other masters).
	batchShard [][]int32
	shardRates [][]float64
	keyDown    []func(key string) string
	fence      map[string]int64
	nconf      int    // the first nconf rows are configured resources
	slab       []Node // nodes for rows to come
}

// keyBatch is one batch of keys as one master returned them. A nil value is a key
// that is absent or not a string; types is nil when every present key is a string.
type keyBatch struct {
	keys  [][]byte
	vals  [][]byte
	pttls []int64
	types []string
	locks []*locks.Lock // decoded hash keys (nil when there are none)
	shard int           // the cluster shard it was read from (0 for other masters)
}

func newCollector(cfg *config.Config) *collector {
	c := &collector{cfg: cfg, n: len(cfg.Masters), index: map[string]int32{}, fence: map[string]int64{}}
	c.batchAt = make([][]time.Time, c.n)
	c.batchShard = make([][]int32, c.n)
	c.shardRates = make([][]float64, c.n)
	c.keyDown = make([]func(string) string, c.n)
	for _, res := range cfg.Inspect.Resources {
		if _, ok := c.index[cfg.Key(res)]; !ok {
			c.newRow(cfg.Key(res))
		}
	}
	c.nconf = len(c.rows)
	return c
}

// reserve makes room for about n rows (a master's key count). The masters mostly
// hold the same keys, so room for the largest count is enough: a second master's
// hint must not copy the rows (at a million rows, hundreds of MB) again.
func (c *collector) reserve(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || n <= cap(c.rows) {
		return
	}
	rows := make([]Resource, len(c.rows), max(n, len(c.rows)))
	copy(rows, c.rows)
	c.rows = rows
	batch := make([]int32, len(c.batch), cap(rows)*c.n)
	copy(batch, c.batch)
	c.batch = batch
	if len(c.index) == 0 {
		c.index = make(map[string]int32, n)
	}
}

// slabRows is how many rows' nodes are allocated at once.
const slabRows = 512

func (c *collector) newRow(key string) int32 {
	idx := int32(len(c.rows))
	if len(c.slab) < c.n {
		c.slab = make([]Node, slabRows*c.n)
	}
	nodes := c.slab[:c.n:c.n]
	c.slab = c.slab[c.n:]
	for i := range nodes {
		nodes[i] = Node{Master: c.cfg.Masters[i].Name, PTTLMs: -2, Type: TypeNone}
	}
	c.rows = append(c.rows, Resource{Resource: c.cfg.Resource(key), Key: key, Nodes: nodes, Anomalies: []Anomaly{}})
	for range c.n {
		c.batch = append(c.batch, -1)
	}
	c.index[key] = idx
	return idx
}

// add merges a batch read from master mi around local instant at. It returns false
// once the collector is closed.
func (c *collector) add(mi int, at time.Time, b *keyBatch) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	bi := int32(len(c.batchAt[mi]))
	c.batchAt[mi] = append(c.batchAt[mi], at)
	c.batchShard[mi] = append(c.batchShard[mi], int32(b.shard))
	for i, kb := range b.keys {
		pttl := b.pttls[i]
		if pttl == -2 {
			continue // absent, or expired between SCAN and the read: no phantom row
		}
		typ := TypeString
		if b.types != nil && b.types[i] != "" {
			typ = b.types[i]
		}
		val := b.vals[i]
		if typ == TypeString && len(kb) > len(redlock.FenceSuffix) && strings.HasSuffix(string(kb), redlock.FenceSuffix) {
			if n, ok := parseCounter(string(val)); ok {
				base := string(kb[:len(kb)-len(redlock.FenceSuffix)])
				c.fence[base] = max(c.fence[base], n)
				continue
			}
		}
		idx, ok := c.index[string(kb)]
		if !ok {
			idx = c.newRow(string(kb))
		}
		r := &c.rows[idx]
		nd := &r.Nodes[mi]
		nd.PTTLMs, nd.Type, nd.Value, nd.Lock = pttl, typ, "", nil
		if b.locks != nil && b.locks[i] != nil {
			nd.Lock = b.locks[i]
			if nd.Lock.Recognised() {
				nd.Value = nd.Lock.Holder // judged like a string lock's value
			}
		}
		if typ == TypeString {
			// r.Value holds the first value seen for the row until judge sets it:
			// equal values (the usual case for a lock) share one copy.
			if r.Value == string(val) && r.Value != "" {
				nd.Value = r.Value
			} else {
				nd.Value = string(val)
				if r.Value == "" {
					r.Value = nd.Value
				}
			}
		}
		c.batch[int(idx)*c.n+mi] = bi
	}
	return true
}

// setCluster gives a cluster column its per-shard clock rates and the error of the
// shard each key belongs to ("" when it answered); finish uses them.
func (c *collector) setCluster(mi int, rates []float64, keyDown func(key string) string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shardRates[mi], c.keyDown[mi] = rates, keyDown
}

func (c *collector) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// finish judges every row and returns them sorted by resource name. down[i] is the
// error of master i when it did not answer (kinds[i] its kind): its nodes carry that
// error and whatever it had sent before failing is discarded.
func (c *collector) finish(now time.Time, down []string, kinds []errkind.Kind, rates []float64, p judgeParams) []Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := c.rows
	at := make([]time.Time, c.n)
	rt := make([]float64, c.n)
	kept := 0
	for ri := range rows {
		r := &rows[ri]
		present := false
		for mi := range c.n {
			at[mi], rt[mi] = now, rates[mi]
			down, kind := down[mi], kinds[mi]
			if down == "" && c.keyDown[mi] != nil {
				if down = c.keyDown[mi](r.Key); down != "" { // the key's cluster shard did not answer
					kind = errkind.OfText(down)
				}
			}
			if down != "" {
				r.Nodes[mi] = Node{Master: r.Nodes[mi].Master, PTTLMs: -2, Type: TypeNone, Error: down, ErrorKind: kind}
				continue
			}
			if b := c.batch[ri*c.n+mi]; b >= 0 {
				at[mi] = c.batchAt[mi][b]
				if sr := c.shardRates[mi]; sr != nil {
					rt[mi] = sr[c.batchShard[mi][b]] // a key expires on its own shard's clock
				}
			}
			present = present || r.Nodes[mi].PTTLMs != -2
		}
		if !present && ri >= c.nconf {
			continue // only a master that then failed had it
		}
		if ri >= c.nconf && isCompanion(r) {
			continue // part of its lock's row (a queue, a token counter, a signal list)
		}
		judge(r, at, rt, now, p)
		if r.Token == 0 {
			r.Token = c.fence[r.Key]
		}
		if kept != ri {
			rows[kept] = *r
		}
		kept++
	}
	clear(rows[kept:])
	rows = rows[:kept]
	c.rows, c.batch, c.index = nil, nil, nil
	markShared(rows)
	sortRows(rows)
	return rows
}

// sortRows sorts by resource name, moving each 168-byte row once (a permutation
// applied in place) instead of swapping rows during the sort.
func sortRows(rows []Resource) {
	perm := make([]int32, len(rows))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int { return strings.Compare(rows[a].Resource, rows[b].Resource) })
	for i := range perm {
		if perm[i] < 0 || perm[i] == int32(i) {
			continue
		}
		tmp := rows[i]
		j := i
		for {
			k := int(perm[j])
			perm[j] = -1
			if k == i {
				rows[j] = tmp
				break
			}
			rows[j] = rows[k]
			j = k
		}
	}
}

// isCompanion reports whether a row's key is another lock's companion (see
// locks.CompanionOf) with the type its library writes there on every master that has
// it. Such keys belong to their lock's row, not rows of their own. Fence counters are
// the collector's own business (see add).
func isCompanion(r *Resource) bool {
	_, role, ok := locks.CompanionOf(r.Key)
	if !ok || role == locks.RoleFenceCounter {
		return false
	}
	want := locks.RoleType(role)
	for i := range r.Nodes {
		n := &r.Nodes[i]
		if n.PTTLMs != -2 && n.Error == "" && want != "" && n.Type != want {
			return false
		}
	}
	return true
}
