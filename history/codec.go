package history

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// A block holds the lifecycles of one duration class that ended within blockSpan of
// each other, written together. Its key is
//
//	'B' class minEnd seq
//
// class is bits.Len64 of the hold in µs (the time between acquired_at and ended_at),
// so a class c holds lifecycles held for less than 2^c µs: the holders at an instant t
// in class c ended within [t, t+2^c), and a query reads only those blocks (see At).
// The records in a block are varints against the block's minEnd and dictionary ids
// (see dict) for resource and key, owner, library and scope; a value of this
// project's form (OWNER#32 hex[#token]) is its 16 random bytes.
const blockSpan = 2 * time.Second

// Key prefixes.
const (
	pBlock   = 'B' // class(1) minEnd(8) seq(4) -> block
	pEnded   = 'X' // end(8) seq(4) -> block of one: every end but released (Expired & co)
	pOpen    = 'O' // key \0 value -> block of one: a lifecycle not ended
	pGap     = 'G' // from(8) master -> Mark (JSON)
	pSession = 'S' // from(8) -> Mark (JSON)
	pMark    = 'M' // at(8) seq(4) -> Mark (JSON)
	pDict    = 'D' // id(4) -> string
)

// classes is how many duration classes there are (0 .. 64).
const classes = 65

func classOf(holdUs int64) byte { return byte(bits.Len64(uint64(max(holdUs, 0)))) }

// classSpan is the longest hold of class c, in µs (exclusive).
func classSpan(c byte) int64 {
	if c >= 63 {
		return 1<<63 - 1
	}
	return int64(1) << c
}

// us is t in µs since the epoch.
func us(t time.Time) int64 { return t.UnixMicro() }

func fromUs(v int64) time.Time { return time.UnixMicro(v) }

// putTime appends v so that keys sort in time order (sign bit flipped, big-endian).
func putTime(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)^1<<63) }

func getTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ 1<<63) }

func blockKey(c byte, minEnd int64, seq uint32) []byte {
	k := append(make([]byte, 0, 14), pBlock, c)
	k = putTime(k, minEnd)
	return binary.BigEndian.AppendUint32(k, seq)
}

func timeKey(p byte, at int64, seq uint32) []byte {
	k := putTime(append(make([]byte, 0, 13), p), at)
	return binary.BigEndian.AppendUint32(k, seq)
}

func openKey(key, value string) []byte {
	return append(append(append([]byte{pOpen}, key...), 0), value...)
}

func dictKey(id uint32) []byte { return binary.BigEndian.AppendUint32([]byte{pDict}, id) }

// End kinds as stored.
var endCodes = []string{Held, Released, Expired, ForceReleased, Evicted, Unknown}

func endCode(end string) (byte, error) {
	for i, e := range endCodes {
		if e == end {
			return byte(i), nil
		}
	}
	return 0, fmt.Errorf("unknown end %q", end)
}

// Record flags.
const (
	fEnd       = 0x07 // end code
	fUnseen    = 0x08
	fMargin    = 0x10
	fValue     = 0x60 // value form (see valueForm)
	fAudit     = 0x80
	valueRaw   = 0 << 5
	valueOwned = 1 << 5 // OWNER#hex32
	valueToken = 2 << 5 // OWNER#hex32#token
	valueNone  = 3 << 5
)

// valueForm returns how value is stored given owner: this project's form is its 16
// random bytes (and token).
func valueForm(value, owner string) (form byte, random []byte, token uint64) {
	if value == "" {
		return valueNone, nil, 0
	}
	rest, ok := strings.CutPrefix(value, owner+"#")
	if !ok || owner == "" || len(rest) < 32 {
		return valueRaw, nil, 0
	}
	hexPart := rest[:32]
	if strings.ToLower(hexPart) != hexPart {
		return valueRaw, nil, 0
	}
	r, err := hex.DecodeString(hexPart)
	if err != nil {
		return valueRaw, nil, 0
	}
	if len(rest) == 32 {
		return valueOwned, r, 0
	}
	ts, ok := strings.CutPrefix(rest[32:], "#")
	if !ok {
		return valueRaw, nil, 0
	}
	t, err := strconv.ParseUint(ts, 10, 64)
	if err != nil || strconv.FormatUint(t, 10) != ts {
		return valueRaw, nil, 0
	}
	return valueToken, r, t
}

// encoder appends records to a block; ids come from the dictionary.
type encoder struct {
	buf   []byte
	base  int64 // minEnd
	n     int
	hashs []uint64 // of each record's resource, for the block's filter
}

func newEncoder(base int64) *encoder { return &encoder{base: base} }

// add appends l, whose end (or, held, acquisition) is at >= base.
func (e *encoder) add(l *Lifecycle, d *dict) error {
	end := us(l.EndedAt)
	start := us(l.AcquiredAt)
	if l.End == Held {
		end = start
	}
	code, err := endCode(l.End)
	if err != nil {
		return err
	}
	form, random, token := valueForm(l.Value, l.Owner)
	flags := code | form
	if l.Unseen {
		flags |= fUnseen
	}
	if l.MarginMs != nil {
		flags |= fMargin
	}
	if len(l.Audit) > 0 {
		flags |= fAudit
	}
	e.hashs = append(e.hashs, resourceHash(l.Resource))
	b := e.buf
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(end-e.base))
	b = binary.AppendUvarint(b, uint64(max(end-start, 0)))
	b = binary.AppendUvarint(b, uint64(d.id(l.Resource+"\x00"+l.Key)))
	b = binary.AppendUvarint(b, uint64(d.id(l.Owner)))
	b = binary.AppendUvarint(b, uint64(d.id(l.Library)))
	b = binary.AppendUvarint(b, uint64(d.id(l.Scope)))
	b = binary.AppendUvarint(b, uint64(l.Masters))
	b = binary.AppendUvarint(b, uint64(l.Quorum))
	b = binary.AppendUvarint(b, uint64(max(l.TTLMs, 0)))
	b = binary.AppendUvarint(b, uint64(l.Extensions))
	if l.MarginMs != nil {
		b = binary.AppendVarint(b, int64(*l.MarginMs*1000))
	}
	switch form {
	case valueRaw:
		b = binary.AppendUvarint(b, uint64(len(l.Value)))
		b = append(b, l.Value...)
	case valueOwned:
		b = append(b, random...)
	case valueToken:
		b = append(b, random...)
		b = binary.AppendUvarint(b, token)
	}
	if len(l.Audit) > 0 {
		b = binary.AppendUvarint(b, uint64(len(l.Audit)))
		b = append(b, l.Audit...)
	}
	e.buf = b
	e.n++
	return nil
}

// bytes returns the block: its base and count, its resource filter (a Bloom
// filter of bloomBits bits a record), then the records.
func (e *encoder) bytes() []byte {
	bloom := make([]byte, max((e.n*bloomBits+7)/8, 8))
	for _, h := range e.hashs {
		bloomSet(bloom, h)
	}
	out := binary.AppendVarint(make([]byte, 0, len(e.buf)+len(bloom)+16), e.base)
	out = binary.AppendUvarint(out, uint64(e.n))
	out = binary.AppendUvarint(out, uint64(len(bloom)))
	out = append(out, bloom...)
	return append(out, e.buf...)
}

// bloomBits is the bits of a block's resource filter a record: with three hashes,
// a block without the resource asked for is read for nothing about 3% of the time.
const bloomBits = 16

func resourceHash(resource string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(resource))
	return h.Sum64()
}

// bloomProbe returns the i-th bit position of h in a filter of m bits.
func bloomProbe(h uint64, i, m uint64) uint64 { return (h + i*(h>>33|h<<31|1)) % m }

func bloomSet(f []byte, h uint64) {
	m := uint64(len(f)) * 8
	for i := range uint64(3) {
		p := bloomProbe(h, i, m)
		f[p/8] |= 1 << (p % 8)
	}
}

// bloomHas reports whether f may hold h.
func bloomHas(f []byte, h uint64) bool {
	m := uint64(len(f)) * 8
	if m == 0 {
		return true
	}
	for i := range uint64(3) {
		p := bloomProbe(h, i, m)
		if f[p/8]&(1<<(p%8)) == 0 {
			return false
		}
	}
	return true
}

var errCorrupt = errors.New("history: corrupt block")

// blockMayHold reports whether block b may hold a record of a resource of hashes
// (false: it holds none).
func blockMayHold(b []byte, hashes []uint64) bool {
	r := reader{b: b}
	r.varint()
	r.uvarint()
	f := r.take(int(r.uvarint()))
	if r.err != nil {
		return true // decodeBlock says what is wrong
	}
	for _, h := range hashes {
		if bloomHas(f, h) {
			return true
		}
	}
	return false
}

// blockCount returns how many records a block holds.
func blockCount(b []byte) int {
	_, n := binary.Varint(b)
	if n <= 0 {
		return 0
	}
	c, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return 0
	}
	return int(c)
}

// decodeBlock calls fn for each record of block b whose acquisition and end (µs;
// for one held, its acquisition) and key (its name's id) keep accepts (nil: every
// record), with names from
// names; fn returns false to stop. A record keep refuses costs no allocation. fn
// gets one Lifecycle, reused, whose Value is borrowed: what it keeps, it keeps
// through owned.
func decodeBlock(b []byte, keep func(start, end int64, key uint32) bool, names func(uint32) (string, error), fn func(*Lifecycle) bool) error {
	r := reader{b: b}
	var scratch []byte
	base := r.varint()
	n := r.uvarint()
	r.take(int(r.uvarint())) // the resource filter
	// l is allocated at the first record kept: fn's pointer makes it escape, and a
	// block of one refused (the ends index, scanned by the million) costs nothing.
	var l *Lifecycle
	for i := uint64(0); i < n && r.err == nil; i++ {
		flags := r.byte()
		end := base + int64(r.uvarint())
		start := end - int64(r.uvarint())
		keyID := uint32(r.uvarint())
		if keep != nil && !keep(start, end, keyID) {
			r.skip(flags)
			continue
		}
		rk, err1 := names(keyID)
		owner, err2 := names(uint32(r.uvarint()))
		lib, err3 := names(uint32(r.uvarint()))
		scope, err4 := names(uint32(r.uvarint()))
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return err
		}
		res, key, _ := strings.Cut(rk, "\x00")
		if l == nil {
			l = new(Lifecycle)
		}
		*l = Lifecycle{Resource: res, Key: key, Owner: owner, Library: lib, Scope: scope,
			Masters: int(r.uvarint()), Quorum: int(r.uvarint()), TTLMs: int64(r.uvarint()), Extensions: int(r.uvarint()),
			End: endCodes[min(int(flags&fEnd), len(endCodes)-1)], Unseen: flags&fUnseen != 0,
			AcquiredAt: fromUs(start)}
		if l.End != Held {
			l.EndedAt = fromUs(end)
		}
		if flags&fMargin != 0 {
			m := float64(r.varint()) / 1000
			l.MarginMs = &m
		}
		scratch = scratch[:0]
		switch flags & fValue {
		case valueRaw:
			scratch = append(scratch, r.take(int(r.uvarint()))...)
		case valueOwned:
			scratch = ownedValue(scratch, owner, r.take(16), 0, false)
		case valueToken:
			rnd := r.take(16)
			scratch = ownedValue(scratch, owner, rnd, r.uvarint(), true)
		}
		if len(scratch) > 0 {
			l.Value = unsafe.String(&scratch[0], len(scratch))
		}
		if flags&fAudit != 0 {
			l.Audit = append([]byte(nil), r.take(int(r.uvarint()))...)
		}
		if r.err != nil {
			break
		}
		if !fn(l) {
			return nil
		}
	}
	return r.err
}

// ownedValue appends OWNER#hex(random)[#token] to b.
func ownedValue(b []byte, owner string, random []byte, token uint64, tokened bool) []byte {
	b = append(append(b, owner...), '#')
	b = hex.AppendEncode(b, random)
	if tokened {
		b = strconv.AppendUint(append(b, '#'), token, 10)
	}
	return b
}

// owned returns l with its own copy of the value decodeBlock lent it.
func owned(l *Lifecycle) Lifecycle {
	c := *l
	c.Value = strings.Clone(l.Value)
	return c
}

// skip passes over the rest of a record with flags.
func (r *reader) skip(flags byte) {
	for range 7 { // owner, library and scope ids, masters, quorum, ttl, extensions
		r.uvarint()
	}
	if flags&fMargin != 0 {
		r.varint()
	}
	switch flags & fValue {
	case valueRaw:
		r.take(int(r.uvarint()))
	case valueOwned:
		r.take(16)
	case valueToken:
		r.take(16)
		r.uvarint()
	}
	if flags&fAudit != 0 {
		r.take(int(r.uvarint()))
	}
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.err = errCorrupt
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) take(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.err = errCorrupt
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
