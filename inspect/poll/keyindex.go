package poll

import (
	"hash/maphash"

	"github.com/redlockctl/redlockctl/inspect/wire"
)

// keyIndex maps the collector's keys to their entries: an open-addressing table of
// 8-byte slots (the upper half of the key's hash, and the entry + 1), without
// pointers, that the collector probes for a whole batch before merging it. A Go map
// answers one key at a time, and at 100k keys nearly every lookup waits on cache misses
// (the map's group, then the stored key's bytes) one after the other; probing a batch
// in passes lets those misses overlap, and the garbage collector has nothing to trace.
type keyIndex struct {
	seed  maphash.Seed
	slots []uint64 // 0: empty; else hash>>32<<32 | entry+1
	used  int
}

func newKeyIndex() keyIndex {
	return keyIndex{seed: maphash.MakeSeed(), slots: make([]uint64, 64)}
}

func (x *keyIndex) hash(key []byte) uint64 { return maphash.Bytes(x.seed, key) }

// keyer returns each entry's key (the collector, or a test's keyList).
type keyer interface{ key(e int32) string }

// keyList is a keyer of a slice of keys.
type keyList []string

func (l keyList) key(e int32) string { return l[e] }

// find returns key's entry, or -1 and the empty slot where it goes. keys holds every
// entry's key.
func (x *keyIndex) find(h uint64, key []byte, keys keyer) (e int32, slot int) {
	mask := len(x.slots) - 1
	tag := h >> 32 << 32
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1, i
		}
		if s&^0xffffffff == tag {
			if e := int32(s&0xffffffff) - 1; keys.key(e) == string(key) {
				return e, i
			}
		}
	}
}

// insert records entry e for a key of hash h at slot (from find), growing the table
// when it is half full. keys holds every entry's key, e's included.
func (x *keyIndex) insert(h uint64, slot int, e int32, keys keyer) {
	x.slots[slot] = h>>32<<32 | uint64(e+1)
	x.used++
	if x.used*2 > len(x.slots) {
		x.resize(x.used, keys)
	}
}

// reserve makes room for n keys without growing.
func (x *keyIndex) reserve(n int, keys keyer) {
	if n*2 > len(x.slots) {
		x.resize(n, keys)
	}
}

// resize rebuilds the table with room for n keys at most half full.
func (x *keyIndex) resize(n int, keys keyer) {
	size := 64
	for size < 2*n {
		size *= 2
	}
	old := x.slots
	x.slots = make([]uint64, size)
	wire.Prefault(x.slots)
	mask := size - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		e := int32(s&0xffffffff) - 1
		h := maphash.String(x.seed, keys.key(e))
		i := int(h) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// prefetch reads what a merge will read for keys of hashes hs: their first slot, then
// the key and first value of each candidate entry, and its first cell. The loads are
// independent of one another, so their cache misses overlap; find then runs on warm
// lines. It returns a byte of what it read, so that the loads are not optimised away.
func (c *collector) prefetch(hs []uint64) byte {
	x := &c.index
	mask := uint64(len(x.slots) - 1)
	var b byte
	for _, h := range hs {
		b ^= byte(x.slots[h&mask])
	}
	for _, h := range hs {
		s := x.slots[h&mask]
		if s == 0 || s&^0xffffffff != h>>32<<32 {
			continue
		}
		e := int(s&0xffffffff) - 1
		if k := c.key(int32(e)); k != "" {
			b ^= k[0]
		}
		if v := c.firstVal(int32(e)); v != "" {
			b ^= v[0]
		}
		b ^= byte(c.cells[e*c.n])
	}
	return b
}
