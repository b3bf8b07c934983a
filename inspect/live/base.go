package live

import "hash/maphash"

// The base: keys a whole read found held that have not changed since. In a large
// keyspace they are nearly every key (a million locks held for hours, and a few
// thousand taken and released each second), and the tracker's full state for a key
// (its masters, its generations, their strings) costs about 500 bytes. A base key
// costs its bytes and about 40 more: a pointer-free 24-byte record, an 8-byte index
// slot (the index is at most three quarters full), and its key (and value, when kept)
// in shared chunks. The first change of a base key, or a read
// that finds it changed, moves it to the full state first (promote), so that what
// the tracker infers is the same either way.

// baseChunk is the size of the chunks that hold base keys and values.
const baseChunk = 1 << 20

// maxBaseMasters is the most masters a base record has room for; a larger fleet
// keeps every key in the full state.
const maxBaseMasters = 32

// baseRec is one base key: the masters that held it when read (a bit each), the
// earliest deadline read on any of them, and where its key and value are.
type baseRec struct {
	deadline int64  // unix ns; 0 unknown (no TTL)
	off      uint32 // chunk<<20 | offset of the key, the value right after it
	keyLen   uint16
	valLen   uint16
	present  uint32 // 0: a free record
	seen     uint32 // masters whose whole read in progress found it (see Tracker.SyncPage)
}

// base is the tracker's compact store of base keys.
type base struct {
	seed    maphash.Seed
	idx     baseIndex // key -> record
	recs    []baseRec
	free    []uint32
	chunks  [][]byte
	garbage int // bytes of chunks no record uses
	used    int // bytes of chunks in use
	values  bool
}

func newBase(values bool) *base {
	return &base{seed: maphash.MakeSeed(), values: values}
}

func (b *base) hash(key string) uint64 { return maphash.String(b.seed, key) }

// Len returns how many keys the base holds.
func (b *base) Len() int { return b.idx.used }

func (b *base) bytes(r *baseRec) []byte {
	c := b.chunks[r.off>>20]
	o := r.off & (baseChunk - 1)
	return c[o : o+uint32(r.keyLen)+uint32(r.valLen)]
}

func (b *base) key(r *baseRec) string { return string(b.bytes(r)[:r.keyLen]) }

func (b *base) value(r *baseRec) string { return string(b.bytes(r)[r.keyLen:]) }

// find returns key's record (nil when the base does not hold it).
func (b *base) find(key string) (*baseRec, uint32) {
	if slot := b.slot(key, b.hash(key)); slot >= 0 {
		i := b.idx.rec(slot)
		return &b.recs[i], i
	}
	return nil, 0
}

// slot returns the index slot of key (of hash h), or -1.
func (b *base) slot(key string, h uint64) int {
	x := &b.idx
	if x.used == 0 {
		return -1
	}
	mask := len(x.slots) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1
		}
		if s>>32 == h>>32 {
			if r := &b.recs[uint32(s)-1]; string(b.bytes(r)[:r.keyLen]) == key {
				return i
			}
		}
	}
}

// add stores key (not held yet, nor in the base) and reports whether it could: a key
// too long for a record stays in the full state.
func (b *base) add(key, value string) (*baseRec, bool) {
	if !b.values {
		value = ""
	}
	h := b.hash(key)
	if len(key) > 0xffff || len(value) > 0xffff || len(key)+len(value) > baseChunk {
		return nil, false
	}
	n := len(key) + len(value)
	if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1])+n > baseChunk {
		b.chunks = append(b.chunks, make([]byte, 0, baseChunk))
	}
	ci := len(b.chunks) - 1
	off := uint32(ci)<<20 | uint32(len(b.chunks[ci]))
	b.chunks[ci] = append(append(b.chunks[ci], key...), value...)
	b.used += n
	rec := baseRec{off: off, keyLen: uint16(len(key)), valLen: uint16(len(value))}
	var i uint32
	if k := len(b.free); k > 0 {
		i, b.free = b.free[k-1], b.free[:k-1]
		b.recs[i] = rec
	} else {
		i = uint32(len(b.recs))
		b.recs = append(b.recs, rec)
	}
	b.idx.insert(h, i)
	return &b.recs[i], true
}

// remove drops record i (of key), compacting the chunks when most of them is garbage.
func (b *base) remove(key string, i uint32) {
	r := &b.recs[i]
	n := int(r.keyLen) + int(r.valLen)
	b.garbage += n
	b.used -= n
	h := b.hash(key)
	if slot := b.slot(key, h); slot >= 0 {
		b.idx.remove(slot)
	}
	*r = baseRec{}
	b.free = append(b.free, i)
	if b.garbage > baseChunk && b.garbage > b.used {
		b.compact()
	}
}

// compact copies the records' bytes into new chunks.
func (b *base) compact() {
	old := b.chunks
	b.chunks, b.garbage, b.used = nil, 0, 0
	for i := range b.recs {
		r := &b.recs[i]
		if r.present == 0 {
			continue
		}
		c := old[r.off>>20]
		o := r.off & (baseChunk - 1)
		kv := c[o : o+uint32(r.keyLen)+uint32(r.valLen)]
		if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1])+len(kv) > baseChunk {
			b.chunks = append(b.chunks, make([]byte, 0, baseChunk))
		}
		ci := len(b.chunks) - 1
		r.off = uint32(ci)<<20 | uint32(len(b.chunks[ci]))
		b.chunks[ci] = append(b.chunks[ci], kv...)
		b.used += len(kv)
	}
}

// baseIndex maps the base's keys to their records: open addressing with linear
// probing over 8-byte slots, without pointers (a Go map of the same took 38 bytes a
// key at a million keys, this one 8-16). A slot holds the upper half of the key's
// hash, which also places it, and the record + 1 (0: empty); the key itself is
// compared on the record.
type baseIndex struct {
	slots []uint64
	used  int
}

func (x *baseIndex) home(h uint64) int { return int(h>>32) & (len(x.slots) - 1) }

func (x *baseIndex) rec(slot int) uint32 { return uint32(x.slots[slot]) - 1 }

// insert records rec for a key of hash h that the index does not hold, growing it
// when it would be more than three quarters full.
func (x *baseIndex) insert(h uint64, rec uint32) {
	if (x.used+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.put(h>>32<<32 | uint64(rec+1))
	x.used++
}

// put places slot value s at the first free slot from its home.
func (x *baseIndex) put(s uint64) {
	mask := len(x.slots) - 1
	i := x.home(s)
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

// grow doubles the table (64 slots at first) and places every slot again.
func (x *baseIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, max(64, 2*len(old)))
	for _, s := range old {
		if s != 0 {
			x.put(s)
		}
	}
}

// remove empties slot i, moving back the slots after it that would no longer be
// found past the gap (backward-shift deletion).
func (x *baseIndex) remove(i int) {
	mask := len(x.slots) - 1
	x.used--
	for {
		x.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			s := x.slots[j]
			if s == 0 {
				return
			}
			k := x.home(s)
			// s stays unless its home is outside (i, j], cyclically: then the gap at
			// i would cut it off from its home, and it moves there.
			if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
				continue
			}
			x.slots[i] = s
			i = j
			break
		}
	}
}
