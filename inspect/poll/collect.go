package poll

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock"
)

// collector merges the masters' key batches as they arrive, so that the raw replies
// of every master are never all held at once. It keeps them compact until finish
// builds the rows: one entry per key (its bytes and first value in an arena) and one
// 8-byte cell per key and master (see packed), without pointers. Merging a key then touches a few
// MB instead of the rows (hundreds of bytes each), which is what made the merge the
// poll's largest cost. Once closed (Poll stopped waiting), batches from stragglers are
// dropped.
type collector struct {
	mu     sync.Mutex
	closed bool
	cfg    *config.Config
	n      int
	index  keyIndex        // key -> entry
	keys   []strRef        // per entry: the key (key(e))
	first  []strRef        // per entry: the first value seen, which cells share (firstVal(e))
	cells  []packed        // entries×n
	wide   map[int]cell    // cells (by index) that do not fit in 8 bytes (see packed)
	others []string        // values that differ from their entry's first (cell.val-2)
	odd    map[int]oddCell // cells (by index) of keys that are not strings
	arena  arena
	// batchAt holds, per master, the local instant of each batch (the middle of its
	// round trip), and batchRTT that round trip: what the batch's deadlines may be
	// off by, at most half of it either way.
	batchAt  [][]time.Time
	batchRTT [][]time.Duration
	// Clusters: the shard each batch was read from, each shard's clock rate, and which
	// keys' shard did not answer (set before finish; nil for other masters).
	batchShard [][]int32
	shardRates [][]float64
	keyDown    []func(key string) string
	fence      map[string]int64
	nconf      int     // the first nconf entries are configured resources
	keep       []int32 // room for the plan's rows (recycled tables), empty
	// touched keeps the reads of touch and prefetch from being optimised away.
	touched atomic.Uint32

	// A feed-first poller's collector is kept from poll to poll (see feedfirst.go):
	// kept says so (plan keeps the index); fresh holds, per master, the first batch
	// of the poll being built (earlier ones are aged: see aged); cols, per master,
	// what a whole read of the column in progress has seen (nil: none); churn counts
	// the cells written over or cleared since the tables were last compacted; out,
	// that a stream built on it may still be read (its rows are built from the cells
	// when asked), so that the next poll writes a copy (compact) instead.
	kept  bool
	out   bool // a PollStream handed it out, and it was not recycled since (Poller.mu; see collectFed)
	fresh []int32
	cols  []*column
	churn int
	// dirty lists the entries whose cells changed in the poll being read (dirtyBits
	// says which); contrib holds each entry's contribution to the counts of the rows
	// last handed out, valid while tallied (see delta.go).
	dirty     []int32
	dirtyBits []uint64
	contrib   []contribution
	tallied   bool
}

// cell is what one master returned for one key.
type cell struct {
	pttl  int64 // -2: absent (or not read)
	batch int32 // the batch it was read in (-1: not read)
	val   int32 // 0: no value; 1: the entry's first value; k ≥ 2: others[k-2]
}

var emptyCell = cell{pttl: -2, batch: -1}

// packed is a cell in 8 bytes, as the collector's table holds it: the PTTL in the upper
// 40 bits (signed: ±17 years), batch+1 in the next 22, and in the lowest 2 the value
// (0: none, 1: the entry's first), or packedWide: the cell is in the collector's wide
// map, whole (a PTTL or a batch out of those ranges, or a value that differs from the
// entry's first, as a split lock's does). At 5 × 1M keys the table is 40 MB instead
// of 80.
type packed uint64

const (
	packedWide      = 3
	packedBatchBits = 22
)

// pack returns cl packed, or false when it does not fit.
func pack(cl cell) (packed, bool) {
	if cl.val < 0 || cl.val > 1 || cl.pttl != cl.pttl<<24>>24 || cl.batch < -1 || cl.batch+1 >= 1<<packedBatchBits {
		return packedWide, false
	}
	return packed(uint64(cl.pttl)<<24 | uint64(cl.batch+1)<<2 | uint64(cl.val)), true
}

var emptyPacked, _ = pack(emptyCell)

// cell returns cell ci.
func (c *collector) cell(ci int) cell {
	p := c.cells[ci]
	if p&3 == packedWide {
		return c.wide[ci]
	}
	return cell{pttl: int64(p) >> 24, batch: int32(p>>2&(1<<packedBatchBits-1)) - 1, val: int32(p & 3)}
}

// setCell sets cell ci to cl.
func (c *collector) setCell(ci int, cl cell) {
	p, ok := pack(cl)
	switch {
	case !ok:
		if c.wide == nil {
			c.wide = map[int]cell{}
		}
		c.wide[ci] = cl
	case len(c.wide) > 0:
		delete(c.wide, ci)
	}
	c.cells[ci] = p
}

// oddCell is the type, and the decoded lock of a hash, of a cell whose key is not a
// string.
type oddCell struct {
	typ  string
	lock *locks.Lock
}

// arena holds the bytes of keys and values in shared chunks: one allocation per 64
// KiB instead of one per string, and nothing for the collector to trace. A chunk is
// never written again where a string was handed out, until the whole arena is
// recycled (see Poller.Recycle).
type arena struct {
	buf    []byte
	chunks [][]byte // every chunk written, the current one (buf) last
	spare  [][]byte // chunks of a recycled arena, to be written again
	long   []string // strings too long for a chunk, each of its own
	shared int      // chunks[:shared] are another arena's too (share): never recycled
}

// strRef is a string of an arena in 8 bytes, without a pointer: its chunk (bits
// 32-62), offset (16-31) and length (0-15); with bit 63 set, the index of a string
// too long for a chunk (arena.long). 0 is "". At 5 × 1M keys a collector's keys and
// first values take 16 MB instead of 32, and nothing the garbage collector traces.
type strRef uint64

const longRef strRef = 1 << 63

// ref stores a copy of b and returns its reference.
func (a *arena) ref(b []byte) strRef {
	if len(b) == 0 {
		return 0
	}
	if len(b) > wire.ArenaChunk/16 {
		a.long = append(a.long, string(b))
		return longRef | strRef(len(a.long)-1)
	}
	if len(a.buf)+len(b) > cap(a.buf) {
		a.next()
	}
	off := len(a.buf)
	a.buf = append(a.buf, b...)
	return strRef(len(a.chunks)-1)<<32 | strRef(off)<<16 | strRef(len(b))
}

// get returns the string of r, in the arena's memory.
func (a *arena) get(r strRef) string {
	if r&longRef != 0 {
		return a.long[uint32(r)]
	}
	n := int(r & 0xffff)
	if n == 0 {
		return ""
	}
	ch := unsafe.SliceData(a.chunks[r>>32])
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(ch), int(r>>16&0xffff))), n)
}

// next starts a chunk: a spare one, else a new one.
func (a *arena) next() {
	if k := len(a.spare); k > 0 {
		a.buf, a.spare = a.spare[k-1][:0], a.spare[:k-1]
	} else {
		a.buf = make([]byte, 0, wire.ArenaChunk)
		wire.Prefault(a.buf)
	}
	a.chunks = append(a.chunks, a.buf)
}

// recycled returns every chunk of a but those it shares, to be written again.
func (a *arena) recycled() [][]byte { return append(a.spare, a.chunks[a.shared:]...) }

// share returns an arena that holds a's strings and writes new ones in chunks of its
// own: a's chunks are never written through it, nor recycled.
func (a *arena) share() arena {
	return arena{chunks: slices.Clone(a.chunks), long: slices.Clone(a.long), shared: len(a.chunks)}
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
	rtt   time.Duration // the round trip it was read in (0: not known)
	// check: a reconciliation read it, to be compared with what the column held
	// (feedfirst.go).
	check bool
	// hashes is scratch for add (the keys' hashes), kept by the caller between
	// batches.
	hashes []uint64
}

func newCollector(cfg *config.Config) *collector { return newCollectorIn(cfg, nil) }

// newCollectorIn returns a collector that fills the tables of spare (an earlier
// collector of the same config that nothing reads any more; nil for new tables).
func newCollectorIn(cfg *config.Config, spare *tables) *collector {
	c := &collector{cfg: cfg, n: len(cfg.Masters), index: newKeyIndex(), fence: map[string]int64{}}
	if spare != nil {
		c.keys, c.first, c.cells, c.others = spare.keys, spare.first, spare.cells, spare.others
		c.arena.spare, c.keep = spare.chunks, spare.keep
	}
	c.batchAt = make([][]time.Time, c.n)
	c.batchRTT = make([][]time.Duration, c.n)
	c.batchShard = make([][]int32, c.n)
	c.shardRates = make([][]float64, c.n)
	c.keyDown = make([]func(string) string, c.n)
	for _, res := range cfg.Inspect.Resources {
		k := cfg.Key(res)
		h := c.index.hash([]byte(k))
		if e, slot := c.index.find(h, []byte(k), c); e < 0 {
			c.index.insert(h, slot, c.newEntry(c.arena.ref([]byte(k))), c)
		}
	}
	c.nconf = len(c.keys)
	return c
}

// reserve makes room for about n keys (a master's key count). The masters mostly
// hold the same keys, so room for the largest count is enough.
func (c *collector) reserve(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.keys = growTo(c.keys, n)
	c.first = growTo(c.first, n)
	c.cells = growTo(c.cells, n*c.n)
	c.index.reserve(n, c)
}

// tables are the big tables of a collector and its plan, handed from a poll that
// nothing reads any more to the next one (Poller.Recycle), empty and with their
// capacity.
type tables struct {
	keys, first []strRef
	others      []string
	cells       []packed
	chunks      [][]byte
	keep        []int32
}

// recycle takes c's tables (and pl's, c's plan), empty, and leaves c and pl with
// none: a straggler's batch or a row asked for after this finds nothing to read. The
// strings of keys, first and others are cleared, so that nothing they point to is
// kept alive beyond the arena's own chunks.
func (c *collector) recycle(pl *RowPlan) *tables {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &tables{keys: c.keys, first: c.first, others: c.others, cells: c.cells, chunks: c.arena.recycled(), keep: pl.keep}
	clear(t.others)
	t.keys, t.first, t.others, t.cells, t.keep = t.keys[:0], t.first[:0], t.others[:0], t.cells[:0], t.keep[:0]
	c.closed = true
	c.keys, c.first, c.others, c.cells, c.arena, c.odd, c.wide = nil, nil, nil, nil, arena{}, nil, nil
	pl.keep = nil
	return t
}

// entries is how many keys were merged.
func (c *collector) entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

// growTo returns s with room for n elements, mapped in (prefault).
func growTo[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s
	}
	t := make([]T, len(s), n)
	wire.Prefault(t)
	copy(t, s)
	return t
}

// key returns entry e's key, in the arena's memory.
func (c *collector) key(e int32) string { return c.arena.get(c.keys[e]) }

// firstVal returns the first value seen of entry e ("" for none).
func (c *collector) firstVal(e int32) string { return c.arena.get(c.first[e]) }

func (c *collector) newEntry(key strRef) int32 {
	e := int32(len(c.keys))
	c.keys = append(c.keys, key)
	c.first = append(c.first, 0)
	for range c.n {
		c.cells = append(c.cells, emptyPacked)
	}
	return e
}

// value records v as entry e's value on one master and returns the cell's val.
func (c *collector) value(e int32, v []byte) int32 {
	switch {
	case len(v) == 0:
		return 0
	case c.first[e] == 0:
		c.first[e] = c.arena.ref(v)
		return 1
	case c.firstVal(e) == string(v):
		return 1
	}
	c.others = append(c.others, string(v))
	return int32(len(c.others) + 1)
}

var fenceSuffix = []byte(redlock.FenceSuffix)

// add merges a batch read from master mi around local instant at. It returns false
// once the collector is closed.
func (c *collector) add(mi int, at time.Time, b *keyBatch) bool {
	if cap(b.hashes) < len(b.keys) {
		b.hashes = make([]uint64, len(b.keys))
	}
	hs := b.hashes[:len(b.keys)]
	for i, k := range b.keys { // outside the lock: the seed never changes
		hs[i] = c.index.hash(k)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.touched.Add(uint32(c.prefetch(hs)))
	bi := int32(len(c.batchAt[mi]))
	c.batchAt[mi] = append(c.batchAt[mi], at)
	c.batchRTT[mi] = append(c.batchRTT[mi], b.rtt)
	c.batchShard[mi] = append(c.batchShard[mi], int32(b.shard))
	for i, kb := range b.keys {
		pttl := b.pttls[i]
		if pttl == -2 {
			continue // absent, or expired between SCAN and the read: no phantom row
		}
		typ := inspect.TypeString
		if b.types != nil && b.types[i] != "" {
			typ = b.types[i]
		}
		val := b.vals[i]
		if typ == inspect.TypeString && len(kb) > len(fenceSuffix) && bytes.HasSuffix(kb, fenceSuffix) {
			if n, ok := parseCounter(string(val)); ok {
				base := string(kb[:len(kb)-len(fenceSuffix)])
				c.fence[base] = max(c.fence[base], n)
				continue
			}
		}
		e, slot := c.index.find(hs[i], kb, c)
		if e < 0 {
			e = c.newEntry(c.arena.ref(kb))
			c.index.insert(hs[i], slot, e, c)
		}
		ci := int(e)*c.n + mi
		var lk *locks.Lock
		if b.locks != nil {
			lk = b.locks[i]
		}
		v := val
		if typ != inspect.TypeString {
			v = nil
			if lk != nil && lk.Recognised() {
				v = []byte(lk.Holder) // judged like a string lock's value
			}
		}
		if c.kept {
			if col := c.cols[mi]; col != nil {
				col.see(e)
				if col.check != nil && (b.check || col.whole) {
					if kind := c.differs(ci, mi, at, b.rtt, pttl, v, typ); kind != "" {
						col.check(c.key(e), kind)
					}
				}
			}
			if c.cells[ci] != emptyPacked {
				c.churn++
			}
			c.markDirty(e)
		}
		c.setCell(ci, cell{pttl: pttl, batch: bi, val: c.value(e, v)})
		if typ != inspect.TypeString || lk != nil {
			if c.odd == nil {
				c.odd = map[int]oddCell{}
			}
			c.odd[ci] = oddCell{typ: typ, lock: lk}
		} else if len(c.odd) > 0 {
			delete(c.odd, ci) // read again, a string this time
		}
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

// down returns the error (and its kind) of master mi for entry e's key: the
// master's, or its cluster shard's; "" when it answered.
func (c *collector) down(e int32, mi int, down []string, kinds []errkind.Kind) (string, errkind.Kind) {
	if down[mi] != "" {
		return down[mi], kinds[mi]
	}
	if c.keyDown[mi] != nil {
		if d := c.keyDown[mi](c.key(e)); d != "" {
			return d, errkind.OfText(d)
		}
	}
	return "", errkind.None
}

// node sets *nd (zero, or a scratch node) to what master mi holds for entry e, as
// read. It writes the fields one by one: rows are built in fresh memory, and copying a
// whole Node would first read it (a write barrier while the collector runs).
func (c *collector) node(nd *inspect.Node, e int32, mi int) {
	ci := int(e)*c.n + mi
	cl := c.cell(ci)
	nd.Master, nd.PTTLMs, nd.Type = c.cfg.Masters[mi].Name, cl.pttl, inspect.TypeNone
	if cl.pttl == -2 {
		return
	}
	nd.Type = inspect.TypeString
	switch {
	case cl.val == 1:
		nd.Value = c.firstVal(e)
	case cl.val >= 2:
		nd.Value = c.others[cl.val-2]
	}
	if len(c.odd) > 0 {
		if o, ok := c.odd[ci]; ok {
			nd.Type, nd.Lock = o.typ, o.lock
		}
	}
}

// row reports whether entry e becomes a row: a configured resource, or a key that a
// master which answered holds and that is not another lock's companion (by its name,
// or by folds). r is scratch.
func (c *collector) row(e int32, down []string, kinds []errkind.Kind, folds map[foldKey]string, r *inspect.Resource) bool {
	if int(e) < c.nconf {
		return true
	}
	present := false
	for mi := range c.n {
		if c.cell(int(e)*c.n+mi).pttl != -2 {
			if d, _ := c.down(e, mi, down, kinds); d == "" {
				present = true
				break
			}
		}
	}
	if !present {
		return false // only a master that then failed had it
	}
	if len(folds) > 0 && c.folded(e, folds, down, kinds) {
		return false // part of its lock's row (a Redisson semaphore's permit count)
	}
	if _, role, ok := locks.CompanionOf(c.key(e)); !ok || role == locks.RoleFenceCounter {
		return true
	}
	r.Key = c.key(e)
	for mi := range c.n {
		r.Nodes[mi] = inspect.Node{PTTLMs: -2, Type: inspect.TypeNone}
		if d, _ := c.down(e, mi, down, kinds); d == "" {
			c.node(&r.Nodes[mi], e, mi)
		}
	}
	return !isCompanion(r) // part of its lock's row (a queue, a token counter, a signal list)
}

// foldKey is a key on one master (by index).
type foldKey struct {
	key string
	mi  int
}

// folds returns, by key and master, the Redis type of each companion that a lock
// decoded on that master (one that answered) found beside it, where the companion's
// own name does not say whose it is (locks.CompanionOf does not know it): a Redisson
// RPermitExpirableSemaphore's permit count, at the semaphore's bare name. Only hash
// and sorted-set locks are decoded with their companions; nil when there are none.
func (c *collector) folds(down []string, kinds []errkind.Kind) map[foldKey]string {
	var out map[foldKey]string
	for ci, o := range c.odd {
		if o.lock == nil || !o.lock.Recognised() || len(o.lock.Companions) == 0 {
			continue
		}
		e, mi := int32(ci/c.n), ci%c.n
		if d, _ := c.down(e, mi, down, kinds); d != "" {
			continue
		}
		for _, cp := range o.lock.Companions {
			if _, _, named := locks.CompanionOf(cp.Key); named {
				continue
			}
			if out == nil {
				out = map[foldKey]string{}
			}
			out[foldKey{cp.Key, mi}] = cp.Type
		}
	}
	return out
}

// folded reports whether every master that answered and holds entry e's key has a
// lock that found it there as its companion, of the type it holds (see folds).
func (c *collector) folded(e int32, folds map[foldKey]string, down []string, kinds []errkind.Kind) bool {
	key := c.key(e)
	for mi := range c.n {
		ci := int(e)*c.n + mi
		if c.cell(ci).pttl == -2 {
			continue
		}
		if d, _ := c.down(e, mi, down, kinds); d != "" {
			continue
		}
		typ := inspect.TypeString
		if o, ok := c.odd[ci]; ok {
			typ = o.typ
		}
		if want, ok := folds[foldKey{key, mi}]; !ok || want != typ {
			return false
		}
	}
	return true
}

// RowPlan is what the collector decided before building any row: which entries
// become rows, in name order, and what the whole set says that rows need. Building
// from it only reads the collector, so rows can be built all at once (rows) or a
// chunk at a time, as often as asked (each).
type RowPlan struct {
	c       *collector
	keep    []int32 // entries that become rows, in name order
	now     time.Time
	down    []string
	kinds   []errkind.Kind
	rates   []float64
	p       verdict.Params
	maxPTTL int64 // the longest PTTL of any row's node

	shared     map[string]int // sharedValues, once each or row has needed it
	sharedDone sync.Once
	// hashes: every entry's values hashed and sorted, kept by a Delta's plan so that
	// the next Delta counts shared values from them (see sharedFrom); nil elsewhere.
	hashes *valueHashes
}

// valueHashes is the sorted hashes (under seed) of the values of every entry of a
// plan's tables, each entry's distinct values once.
type valueHashes struct {
	seed maphash.Seed
	hs   []uint64
}

// plan closes the collector to new batches and decides the rows. down[i] is the error
// of master i when it did not answer (kinds[i] its kind): its nodes carry that error
// and whatever it had sent before failing is discarded.
func (c *collector) plan(now time.Time, down []string, kinds []errkind.Kind, rates []float64, p verdict.Params) *RowPlan {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.kept {
		c.tallied = false
		c.contrib = growTo(c.contrib[:0], len(c.keys))[:len(c.keys)]
		clear(c.contrib)
		c.resetDirty()
	} else {
		// The index is not needed from here on. Its seed stays: a straggler's add
		// hashes its keys before it takes the lock and finds the collector closed.
		c.index.slots, c.index.used = nil, 0
	}
	pl := &RowPlan{c: c, keep: growTo(c.keep, len(c.keys)), now: now, down: down, kinds: kinds, rates: rates, p: p}
	c.keep = nil
	scratch := inspect.Resource{Nodes: make([]inspect.Node, c.n)}
	folds := c.folds(down, kinds)
	for e := range int32(len(c.keys)) {
		if !c.row(e, down, kinds, folds, &scratch) {
			continue
		}
		pl.keep = append(pl.keep, e)
		for mi := range c.n {
			if pttl := c.cell(int(e)*c.n + mi).pttl; pttl > pl.maxPTTL {
				if d, _ := c.down(e, mi, down, kinds); d == "" {
					pl.maxPTTL = pttl
				}
			}
		}
	}
	sortByName(pl.keep, func(e int32) string { return c.cfg.Resource(c.key(e)) })
	return pl
}

// Rows builds every row, on every core: the masters are done with them by now, and
// most of the time here goes to the first touch of the rows' memory.
func (pl *RowPlan) Rows() []inspect.Resource {
	n := pl.c.n
	rows := make([]inspect.Resource, len(pl.keep))
	nodes := make([]inspect.Node, len(pl.keep)*n)
	workers := min(runtime.GOMAXPROCS(0), 1+len(pl.keep)/4096)
	per := (len(pl.keep) + workers - 1) / max(workers, 1)
	var wg sync.WaitGroup
	for lo := 0; lo < len(pl.keep); lo += per {
		hi := min(lo+per, len(pl.keep))
		wg.Go(func() { pl.c.build(rows[lo:hi], nodes[lo*n:hi*n], pl.keep[lo:hi], pl) })
	}
	wg.Wait()
	verdict.MarkShared(rows)
	return rows
}

// streamChunk is how many rows each builds at a time: few, since each worker's rows
// and output buffer are fresh memory, and faulting it in costs about as much as
// filling it (a 100k-key dump's RSS: 50 MiB with 2048, 38 MiB with 256).
var streamChunk = 256

// each builds the rows streamChunk at a time and hands them to work (lo: the index of
// the chunk's first row) and emit as inOrder does.
func (pl *RowPlan) each(work func(lo int, rows []inspect.Resource, out []byte) ([]byte, error), emit func(out []byte) error) error {
	n, per := len(pl.keep), pl.c.n
	chunks := (n + streamChunk - 1) / streamChunk
	if chunks == 0 {
		return nil
	}
	shared := pl.sharedOnce()
	type buffers struct {
		rows  []inspect.Resource
		nodes []inspect.Node
	}
	bufs := make([]buffers, runtime.GOMAXPROCS(0))
	return inOrder(chunks, len(bufs), func(w, k int, out []byte) ([]byte, error) {
		b := &bufs[w]
		if b.rows == nil {
			b.rows, b.nodes = make([]inspect.Resource, streamChunk), make([]inspect.Node, streamChunk*per)
			wire.Prefault(b.rows)
			wire.Prefault(b.nodes)
		}
		lo, hi := k*streamChunk, min((k+1)*streamChunk, n)
		rows, nodes := b.rows[:hi-lo], b.nodes[:(hi-lo)*per]
		clear(rows)
		clear(nodes)
		pl.c.build(rows, nodes, pl.keep[lo:hi], pl)
		for j := range rows {
			noteSharedIn(&rows[j], shared)
		}
		return work(lo, rows, out)
	}, emit)
}

// sharedOnce returns sharedValues, counted the first time it is asked for (each may
// run again, and row runs once per row).
func (pl *RowPlan) sharedOnce() map[string]int {
	pl.sharedDone.Do(func() { pl.shared = pl.sharedValues() })
	return pl.shared
}

// noteSharedIn notes on r how many rows hold its value, when more than one does.
func noteSharedIn(r *inspect.Resource, shared map[string]int) {
	if c := shared[r.Value]; c > 1 && r.Value != "" {
		verdict.NoteShared(r, c)
	}
}

// row builds row i (in name order) in memory of its own, as each builds it.
func (pl *RowPlan) row(i int) inspect.Resource {
	shared := pl.sharedOnce()
	rows := make([]inspect.Resource, 1)
	pl.c.build(rows, make([]inspect.Node, pl.c.n), pl.keep[i:i+1], pl)
	noteSharedIn(&rows[0], shared)
	return rows[0]
}

// node returns master mi's node of row i, as row builds it (judging the row changes
// no node's content).
func (pl *RowPlan) node(i, mi int) inspect.Node {
	c, e := pl.c, pl.keep[i]
	if d, kind := c.down(e, mi, pl.down, pl.kinds); d != "" {
		return inspect.Node{Master: c.cfg.Masters[mi].Name, PTTLMs: -2, Type: inspect.TypeNone, Error: d, ErrorKind: kind}
	}
	var nd inspect.Node
	c.node(&nd, e, mi)
	if c.kept {
		if b := c.cell(int(e)*c.n + mi).batch; b >= 0 && b < c.fresh[mi] {
			nd.PTTLMs, _ = c.aged(nd.PTTLMs, c.batchAt[mi][b], pl.now)
		}
	}
	return nd
}

// EachRows hands rows, chunk at a time, to work and emit as Stream.Each hands a
// stream's: work on several goroutines at once, emit in order.
func EachRows(rows []inspect.Resource, chunk int, work func(rows []inspect.Resource, out []byte) ([]byte, error), emit func(out []byte) error) error {
	chunk = max(chunk, 1)
	return inOrder((len(rows)+chunk-1)/chunk, runtime.GOMAXPROCS(0), func(_, k int, out []byte) ([]byte, error) {
		return work(rows[k*chunk:min((k+1)*chunk, len(rows))], out)
	}, emit)
}

// inOrder runs produce for chunks 0..chunks-1 on up to workers goroutines at once
// (worker w gets chunks w, w+workers, ..., one after the other, and its own output
// buffer), and hands each chunk's output to emit, one at a time in chunk order. A
// worker reuses its buffer once emit returned. After an error from produce or emit,
// workers stop at their next chunk; inOrder returns that error once they all have.
func inOrder(chunks, workers int, produce func(w, k int, out []byte) ([]byte, error), emit func(out []byte) error) error {
	if chunks == 0 {
		return nil
	}
	workers = max(1, min(workers, chunks))
	type result struct {
		out []byte
		err error
	}
	results := make([]chan result, chunks)
	for k := range results {
		results[k] = make(chan result, 1)
	}
	acks := make([]chan struct{}, workers) // the emitter is done with a worker's output
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		acks[w] = make(chan struct{}, 1)
		wg.Go(func() {
			out := make([]byte, 0, 256<<10) // a chunk's JSON fits
			wire.Prefault(out)
			for k := w; k < chunks; k += workers {
				var err error
				out, err = produce(w, k, out[:0])
				results[k] <- result{out, err}
				if err != nil {
					return
				}
				select {
				case <-acks[w]:
				case <-done:
					return
				}
			}
		})
	}
	var err error
	for k := 0; k < chunks && err == nil; k++ {
		r := <-results[k]
		if err = r.err; err == nil && len(r.out) > 0 {
			err = emit(r.out)
		}
		acks[k%workers] <- struct{}{}
	}
	close(done)
	wg.Wait()
	return err
}

// sharedValues counts what markShared counts, without building every row first: the
// values held by node-redlock or bsm/redislock rows, for the values that more than one
// row could hold. A value can only be two rows' value if the masters returned it for
// two keys; such values are found by their hashes (sorted, so that equal ones meet),
// and only the rows of the keys that hold one are built here, to be judged. Entries
// are visited in the order they were added, which is the order of their memory.
func (pl *RowPlan) sharedValues() map[string]int {
	shared, _ := pl.sharedHashed()
	return shared
}

// sharedHashed is sharedValues, and the hashes it counted them from.
func (pl *RowPlan) sharedHashed() (map[string]int, *valueHashes) {
	c := pl.c
	h := &valueHashes{seed: maphash.MakeSeed()}
	h.hs = make([]uint64, 0, len(c.keys)+len(c.others))
	wire.Prefault(h.hs)
	var vals []string
	for e := range int32(len(c.keys)) { // rows or not: a few more hashes cost nothing
		vals = c.entryValues(e, vals[:0])
		for _, v := range vals {
			h.hs = append(h.hs, maphash.String(h.seed, v))
		}
	}
	sortHashes(h.hs)
	var dup map[uint64]bool
	for i := 1; i < len(h.hs); i++ {
		if h.hs[i] == h.hs[i-1] {
			if dup == nil {
				dup = map[uint64]bool{}
			}
			dup[h.hs[i]] = true
		}
	}
	if dup == nil {
		return nil, h
	}
	return pl.sharedOf(h.seed, dup), h
}

// entryValues appends entry e's distinct values (on any master) to vals.
func (c *collector) entryValues(e int32, vals []string) []string {
	for ci := int(e) * c.n; ci < int(e+1)*c.n; ci++ {
		cl := c.cell(ci)
		var v string
		switch {
		case cl.val == 1:
			v = c.firstVal(e)
		case cl.val >= 2:
			v = c.others[cl.val-2]
		default:
			continue
		}
		if !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	return vals
}

// sharedFrom counts the shared values of pl, a Delta's plan over a copy of prev's
// tables in which only the entries in changed (and any entry prev's tables do not
// have) may differ: from prev's hashes, taking out the changed entries' values as
// prev had them and putting in their values now. Where none of those values is met
// twice, before or after, the values met twice are prev's and so are their counts;
// otherwise it counts them whole. Either way pl keeps its hashes for the next Delta.
// (At 5 × 100k keys, 1-2 ms of a Delta instead of 9.)
func (pl *RowPlan) sharedFrom(prev *RowPlan, changed []int32) map[string]int {
	whole := func() map[string]int {
		shared, h := pl.sharedHashed()
		pl.hashes = h
		return shared
	}
	h := prev.hashes
	if h == nil {
		return whole()
	}
	c, old := pl.c, prev.c
	var out, in []uint64
	var vals []string
	add := func(to []uint64, c *collector, e int32) []uint64 {
		vals = c.entryValues(e, vals[:0])
		for _, v := range vals {
			to = append(to, maphash.String(h.seed, v))
		}
		return to
	}
	for _, e := range changed {
		if int(e) < len(old.keys) {
			out = add(out, old, e)
		}
		if int(e) < len(c.keys) {
			in = add(in, c, e)
		}
	}
	for e := int32(len(old.keys)); int(e) < len(c.keys); e++ {
		if !slices.Contains(changed, e) {
			in = add(in, c, e)
		}
	}
	slices.Sort(out)
	slices.Sort(in)
	hs, ok := replaceSorted(h.hs, out, in)
	if !ok || metTwice(h.hs, out) || metTwice(hs, in) {
		return whole()
	}
	pl.hashes = &valueHashes{seed: h.seed, hs: hs}
	return prev.sharedOnce()
}

// metTwice reports whether any of xs is in the sorted hs more than once.
func metTwice(hs, xs []uint64) bool {
	for _, x := range xs {
		if i, _ := slices.BinarySearch(hs, x); i+1 < len(hs) && hs[i+1] == x {
			return true
		}
	}
	return false
}

// replaceSorted returns the sorted multiset hs without one of each of out and with in
// (all three sorted), in new memory; false where an element of out is not in hs.
func replaceSorted(hs, out, in []uint64) ([]uint64, bool) {
	res := make([]uint64, 0, len(hs)-len(out)+len(in))
	i, j, k := 0, 0, 0
	for i < len(hs) || k < len(in) {
		if i < len(hs) && j < len(out) && hs[i] == out[j] {
			i, j = i+1, j+1
			continue
		}
		if j < len(out) && (i == len(hs) || out[j] < hs[i]) {
			return nil, false
		}
		if k < len(in) && (i == len(hs) || in[k] <= hs[i]) {
			res = append(res, in[k])
			k++
			continue
		}
		res = append(res, hs[i])
		i++
	}
	return res, j == len(out)
}

// sharedOf builds the rows of the kept entries that hold a value whose hash (under
// seed) is in dup, and counts the values they share.
func (pl *RowPlan) sharedOf(seed maphash.Seed, dup map[uint64]bool) map[string]int {
	c := pl.c
	var vals []string
	kept := make([]bool, len(c.keys))
	for _, e := range pl.keep {
		kept[e] = true
	}
	var cand []int32
	for e := range int32(len(c.keys)) {
		if !kept[e] {
			continue
		}
		vals = c.entryValues(e, vals[:0])
		for _, v := range vals {
			if dup[maphash.String(seed, v)] {
				cand = append(cand, e)
				break
			}
		}
	}
	rows := make([]inspect.Resource, len(cand))
	c.build(rows, make([]inspect.Node, len(cand)*c.n), cand, pl)
	return verdict.SharedCounts(rows)
}

// sortHashes sorts a (hashes: their top bits spread evenly) in place: one pass puts
// each in its bucket by its top 11 bits (an American flag sort), then each bucket is
// sorted, a few dozen values at 100k. Half the time of slices.Sort on the whole at
// 100k (4 ms instead of 8.5 here: a Delta's cost), and no memory beside a.
func sortHashes(a []uint64) {
	const bits = 11
	const shift = 64 - bits
	var next, end [1 << bits]int
	for _, v := range a {
		end[v>>shift]++
	}
	sum := 0
	for d, n := range end {
		next[d] = sum
		sum += n
		end[d] = sum
	}
	for d := range next {
		for next[d] < end[d] {
			v := a[next[d]]
			for k := int(v >> shift); k != d; k = int(v >> shift) {
				a[next[k]], v = v, a[next[k]]
				next[k]++
			}
			a[next[d]] = v
			next[d]++
		}
	}
	lo := 0
	for _, hi := range end {
		slices.Sort(a[lo:hi])
		lo = hi
	}
}

// build fills rows (and their nodes, len(rows)×n) from entries and judges them.
// Calls on disjoint rows may run at once: the collector is only read.
func (c *collector) build(rows []inspect.Resource, nodes []inspect.Node, entries []int32, pl *RowPlan) {
	now, down, kinds, rates := pl.now, pl.down, pl.kinds, pl.rates
	at := make([]time.Time, c.n)
	rt := make([]float64, c.n)
	var touched byte
	for ri, e := range entries {
		if ri%touchAhead == 0 {
			touched ^= c.touch(entries[ri:min(ri+touchAhead, len(entries))])
		}
		r := &rows[ri]
		r.Key = c.key(e)
		r.Resource = c.cfg.Resource(r.Key)
		r.Anomalies = []inspect.Anomaly{}
		r.Nodes = nodes[ri*c.n : (ri+1)*c.n : (ri+1)*c.n]
		for mi := range c.n {
			at[mi], rt[mi] = now, rates[mi]
			nd := &r.Nodes[mi]
			if d, kind := c.down(e, mi, down, kinds); d != "" {
				nd.Master, nd.PTTLMs, nd.Type, nd.Error, nd.ErrorKind = c.cfg.Masters[mi].Name, -2, inspect.TypeNone, d, kind
				continue
			}
			c.node(nd, e, mi)
			if b := c.cell(int(e)*c.n + mi).batch; b >= 0 {
				at[mi] = c.batchAt[mi][b]
				if c.kept && b < c.fresh[mi] {
					nd.PTTLMs, at[mi] = c.aged(nd.PTTLMs, at[mi], now)
				}
				if sr := c.shardRates[mi]; sr != nil {
					rt[mi] = sr[c.batchShard[mi][b]] // a key expires on its own shard's clock
				}
			}
		}
		verdict.JudgeWith(r, at, rt, now, pl.p)
		if r.Token == 0 {
			r.Token = c.fence[r.Key]
		}
	}
	c.touched.Add(uint32(touched))
}

// touchAhead is how many rows' data build touches at once (see touch).
const touchAhead = 128

// touch reads a byte of everything that building entries' rows reads: their cells,
// key and value. Entries come in name order, which is random in the collector's
// tables; touched in a loop of independent loads, their cache misses overlap instead
// of stalling one row at a time (at a million rows, build is mostly such misses).
func (c *collector) touch(entries []int32) byte {
	var b byte
	for _, e := range entries {
		cl := c.cells[int(e)*c.n : int(e+1)*c.n]
		b ^= byte(cl[0]) ^ byte(cl[len(cl)-1])
		if k := c.key(e); k != "" {
			b ^= k[0] ^ k[len(k)-1]
		}
		if v := c.firstVal(e); v != "" {
			b ^= v[0] ^ v[len(v)-1]
		}
	}
	return b
}

// sortKey is an entry and the 8 bytes of its name that sortByName compares first.
type sortKey struct {
	head uint64
	e    int32
}

// sortByName sorts entries by name (ties by entry: entries are distinct keys). Each
// name is first compared by the 8 bytes after the prefix every name shares, as one
// integer: most comparisons end there, without reading the strings.
func sortByName(entries []int32, name func(int32) string) {
	if len(entries) < 2 {
		return
	}
	first := name(entries[0])
	lcp := len(first)
	for _, e := range entries[1:] {
		s := name(e)
		lcp = min(lcp, len(s))
		for j := 0; j < lcp; j++ {
			if s[j] != first[j] {
				lcp = j
				break
			}
		}
	}
	ks := make([]sortKey, len(entries))
	wire.Prefault(ks)
	var b [8]byte
	for i, e := range entries {
		clear(b[:])
		copy(b[:], name(e)[lcp:])
		ks[i] = sortKey{binary.BigEndian.Uint64(b[:]), e}
	}
	slices.SortFunc(ks, func(x, y sortKey) int {
		if c := cmp.Compare(x.head, y.head); c != 0 {
			return c
		}
		if c := strings.Compare(name(x.e), name(y.e)); c != 0 {
			return c
		}
		return cmp.Compare(x.e, y.e)
	})
	for i, k := range ks {
		entries[i] = k.e
	}
}

// isCompanion reports whether a row's key is another lock's companion (see
// locks.CompanionOf) with the type its library writes there on every master that has
// it. Such keys belong to their lock's row, not rows of their own. Fence counters are
// the collector's own business (see add).
func isCompanion(r *inspect.Resource) bool {
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
