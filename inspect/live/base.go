package live

import "hash/maphash"

// The base: keys a whole read found held that have not changed since. In a large
// keyspace they are nearly every key (a million locks held for hours, and a few
// thousand taken and released each second), and the tracker's full state for a key
// (its masters, its generations, their strings) costs about 500 bytes. A base key
// costs its bytes and 36 more: a pointer-free record, an index entry, and its key
// (and value, when kept) in shared chunks. The first change of a base key, or a read
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
	idx     map[uint64]uint32 // hash of the key -> record
	recs    []baseRec
	free    []uint32
	chunks  [][]byte
	garbage int // bytes of chunks no record uses
	used    int // bytes of chunks in use
	values  bool
}

func newBase(values bool) *base {
	return &base{seed: maphash.MakeSeed(), idx: make(map[uint64]uint32), values: values}
}

func (b *base) hash(key string) uint64 { return maphash.String(b.seed, key) }

// Len returns how many keys the base holds.
func (b *base) Len() int { return len(b.idx) }

func (b *base) bytes(r *baseRec) []byte {
	c := b.chunks[r.off>>20]
	o := r.off & (baseChunk - 1)
	return c[o : o+uint32(r.keyLen)+uint32(r.valLen)]
}

func (b *base) key(r *baseRec) string { return string(b.bytes(r)[:r.keyLen]) }

func (b *base) value(r *baseRec) string { return string(b.bytes(r)[r.keyLen:]) }

// find returns key's record (nil when the base does not hold it).
func (b *base) find(key string) (*baseRec, uint32) {
	i, ok := b.idx[b.hash(key)]
	if !ok {
		return nil, 0
	}
	r := &b.recs[i]
	if string(b.bytes(r)[:r.keyLen]) != key {
		return nil, 0 // another key with the same hash holds the slot
	}
	return r, i
}

// add stores key (not held yet) and reports whether it could: a key whose hash is
// taken by another, or too long for a record, stays in the full state.
func (b *base) add(key, value string) (*baseRec, bool) {
	if !b.values {
		value = ""
	}
	h := b.hash(key)
	if _, taken := b.idx[h]; taken || len(key) > 0xffff || len(value) > 0xffff || len(key)+len(value) > baseChunk {
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
	b.idx[h] = i
	return &b.recs[i], true
}

// remove drops record i (of key), compacting the chunks when most of them is garbage.
func (b *base) remove(key string, i uint32) {
	r := &b.recs[i]
	n := int(r.keyLen) + int(r.valLen)
	b.garbage += n
	b.used -= n
	*r = baseRec{}
	b.free = append(b.free, i)
	delete(b.idx, b.hash(key))
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
