package history

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"
)

// Defaults of [history].
const (
	DefaultMaxSize = 1 << 30             // bytes
	DefaultMaxAge  = 14 * 24 * time.Hour // records older than this are dropped
)

// Options are a Store's bounds.
type Options struct {
	MaxSize  int64         // bytes on disk; 0: DefaultMaxSize
	MaxAge   time.Duration // 0: DefaultMaxAge
	ReadOnly bool          // open for queries only; the store must exist
}

// Store is an embedded history store: one file in a directory. A Store opened for
// writing is the only writer (another process that opens it gets an error naming the
// way out); any number of goroutines may query it.
type Store struct {
	eng  engine
	opts Options

	mu   sync.Mutex // one Write or Trim at a time
	dict *dict
	seq  uint32

	namesMu sync.RWMutex
	names   []string // id -> name, as read; "" not read yet (id 0 is "")
}

// Open opens (creating, unless o.ReadOnly) the store in dir.
func Open(dir string, o Options) (*Store, error) {
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxSize < 0 || o.MaxAge < 0 {
		return nil, fmt.Errorf("history: max_size and max_age must be positive")
	}
	if !o.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	eng, err := openBolt(dir, o.ReadOnly)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return newStore(eng, o)
}

func newStore(eng engine, o Options) (*Store, error) {
	s := &Store{eng: eng, opts: o, seq: rand.Uint32()}
	if !o.ReadOnly {
		d, err := loadDict(eng)
		if err != nil {
			eng.close()
			return nil, err
		}
		s.dict = d
	}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.eng.close() }

// settle ends what the last session left open (lifecycles held, feed gaps)
// unknown at its last write.
func (s *Store) settle(now time.Time) error {
	var last Mark
	var opens []Lifecycle
	var gaps []Mark
	err := s.eng.view(func(kr kvReader) error {
		if k := kr.last([]byte{pSession}, []byte{pSession + 1}); k != nil {
			if err := json.Unmarshal(kr.get(k), &last); err != nil {
				return fmt.Errorf("history: session record: %w", err)
			}
		}
		kr.scan([]byte{pGap}, []byte{pGap + 1}, func(_, v []byte) bool {
			var m Mark
			if json.Unmarshal(v, &m) == nil && m.To.IsZero() {
				gaps = append(gaps, m)
			}
			return true
		})
		return s.scanOpen(kr, nil, nil, func(l *Lifecycle) { opens = append(opens, owned(l)) })
	})
	if err != nil || last.At.IsZero() && len(opens) == 0 {
		return err
	}
	end := last.To
	if end.IsZero() || end.After(now) {
		end = now
	}
	var b Batch
	for _, l := range opens {
		b.Closed = append(b.Closed, l)
		if l.AcquiredAt.After(end) {
			l.AcquiredAt = end
		}
		l.End, l.EndedAt = Unknown, end
		b.Ended = append(b.Ended, l)
	}
	for _, g := range gaps {
		g.To = end
		if g.To.Before(g.At) {
			g.To = g.At
		}
		b.Marks = append(b.Marks, g)
	}
	return s.Write(b)
}

// Batch is what one Write stores, in one durable transaction.
type Batch struct {
	Ended  []Lifecycle // lifecycles ended (End set)
	Open   []Lifecycle // lifecycles held, stored (or replaced) until they end
	Closed []Lifecycle // open lifecycles to forget (by key and value): they ended
	Marks  []Mark      // gaps and sessions are stored by their start, replacing the one there
}

// Write stores b durably: when it returns nil, a crash loses none of it.
func (s *Store) Write(b Batch) error {
	if s.dict == nil {
		return errors.New("history: the store is open read-only")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	blocks, err := s.encode(b.Ended)
	if err != nil {
		return err
	}
	err = s.eng.update(func(w kvWriter) error {
		for _, blk := range blocks {
			if err := w.put(blk.key, blk.val); err != nil {
				return err
			}
		}
		for i := range b.Open {
			l := &b.Open[i]
			e := newEncoder(us(l.AcquiredAt))
			if err := e.add(l, s.dict); err != nil {
				return err
			}
			if err := w.put(openKey(l.Key, l.Value), e.bytes()); err != nil {
				return err
			}
		}
		for _, l := range b.Closed {
			if err := w.del(openKey(l.Key, l.Value)); err != nil {
				return err
			}
		}
		for _, m := range b.Marks {
			v, err := json.Marshal(m)
			if err != nil {
				return err
			}
			var k []byte
			switch m.Kind {
			case MarkGap:
				k = append(putTime([]byte{pGap}, us(m.At)), m.Master...)
			case MarkSession:
				k = putTime([]byte{pSession}, us(m.At))
			default:
				s.seq++
				k = timeKey(pMark, us(m.At), s.seq)
			}
			if err := w.put(k, v); err != nil {
				return err
			}
		}
		return s.dict.flush(w)
	})
	if err == nil {
		s.dict.added = s.dict.added[:0]
	}
	return err
}

type kv struct{ key, val []byte }

// encode makes the blocks of ended: by class, ends within blockSpan; each end but a
// release is also written on its own under pEnded.
func (s *Store) encode(ended []Lifecycle) ([]kv, error) {
	if len(ended) == 0 {
		return nil, nil
	}
	idx := make([]int, len(ended))
	for i := range idx {
		idx[i] = i
	}
	cls := func(i int) byte { return classOf(us(ended[i].EndedAt) - us(ended[i].AcquiredAt)) }
	slices.SortFunc(idx, func(a, b int) int {
		if ca, cb := cls(a), cls(b); ca != cb {
			return int(ca) - int(cb)
		}
		return ended[a].EndedAt.Compare(ended[b].EndedAt)
	})
	var out []kv
	var enc *encoder
	var encClass byte
	seal := func() {
		if enc != nil {
			s.seq++
			out = append(out, kv{blockKey(encClass, enc.base, s.seq), enc.bytes()})
			enc = nil
		}
	}
	for _, i := range idx {
		l := &ended[i]
		if l.End == Held {
			return nil, fmt.Errorf("history: lifecycle of %s ended without an end", l.Key)
		}
		c, end := cls(i), us(l.EndedAt)
		if enc != nil && (c != encClass || end-enc.base > blockSpan.Microseconds()) {
			seal()
		}
		if enc == nil {
			enc, encClass = newEncoder(end), c
		}
		if err := enc.add(l, s.dict); err != nil {
			return nil, err
		}
		if l.End != Released {
			one := newEncoder(end)
			if err := one.add(l, s.dict); err != nil {
				return nil, err
			}
			s.seq++
			out = append(out, kv{timeKey(pEnded, end, s.seq), one.bytes()})
		}
	}
	seal()
	return out, nil
}

// Used returns the bytes the store's data takes on disk.
func (s *Store) Used() (int64, error) { return s.eng.used() }

// Trimmed is what one Trim dropped.
type Trimmed struct {
	Lifecycles int       // lifecycles dropped
	Before     time.Time // everything older than this is gone (zero: nothing dropped)
}

// Trim drops what is older than MaxAge (from now), then, while the store takes more
// than MaxSize, the oldest data, a slice of its time span at a time, down to 90% of
// MaxSize: the oldest first, always.
func (s *Store) Trim(now time.Time) (Trimmed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t Trimmed
	cut := now.Add(-s.opts.MaxAge)
	for round := 0; ; round++ {
		if !cut.IsZero() {
			n, err := s.dropBefore(us(cut))
			if err != nil {
				return t, err
			}
			t.Lifecycles += n
			if n > 0 {
				t.Before = cut
			}
		}
		used, err := s.eng.used()
		if err != nil || used <= s.opts.MaxSize {
			return t, err
		}
		oldest, newest, err := s.span()
		if err != nil || oldest >= newest {
			return t, err
		}
		excess := float64(used-s.opts.MaxSize*9/10) / float64(used)
		step := max(int64(float64(newest-oldest)*excess), time.Second.Microseconds())
		cut = fromUs(oldest + step)
		if round > 64 {
			return t, fmt.Errorf("history: store still %d bytes after trimming (max_size %d): the dictionary of names alone is larger", used, s.opts.MaxSize)
		}
	}
}

// span returns the ends of the oldest and newest blocks, in µs.
func (s *Store) span() (oldest, newest int64, err error) {
	oldest, newest = 1<<63-1, -1<<63
	err = s.eng.view(func(r kvReader) error {
		for c := byte(0); c < classes; c++ {
			lo, hi := []byte{pBlock, c}, []byte{pBlock, c + 1}
			r.scan(lo, hi, func(k, _ []byte) bool {
				oldest = min(oldest, getTime(k[2:]))
				return false
			})
			if k := r.last(lo, hi); k != nil {
				newest = max(newest, getTime(k[2:]))
			}
		}
		return nil
	})
	return oldest, newest, err
}

// dropBefore deletes blocks, ends, gaps, sessions and marks older than cut (µs),
// and returns how many lifecycles went.
func (s *Store) dropBefore(cut int64) (int, error) {
	n := 0
	err := s.eng.update(func(w kvWriter) error {
		var keys [][]byte
		collect := func(lo, hi []byte, timeAt int, count bool) {
			w.scan(lo, hi, func(k, v []byte) bool {
				if getTime(k[timeAt:]) >= cut {
					return false
				}
				if count {
					n += blockCount(v)
				}
				keys = append(keys, slices.Clone(k))
				return true
			})
		}
		for c := byte(0); c < classes; c++ {
			// A block's lifecycles ended within blockSpan of its key's time.
			collect([]byte{pBlock, c}, putTime([]byte{pBlock, c}, cut-blockSpan.Microseconds()), 2, true)
		}
		collect([]byte{pEnded}, []byte{pEnded + 1}, 1, false)
		collect([]byte{pMark}, []byte{pMark + 1}, 1, false)
		// A gap or session is dropped once it ended before cut.
		for _, p := range []byte{pGap, pSession} {
			w.scan([]byte{p}, putTime([]byte{p}, cut), func(k, v []byte) bool {
				var m Mark
				if json.Unmarshal(v, &m) == nil && !m.To.IsZero() && us(m.To) < cut {
					keys = append(keys, slices.Clone(k))
				}
				return true
			})
		}
		for _, k := range keys {
			if err := w.del(k); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// dict gives each name (resource and key, owner, library, scope) a number, stored
// once.
type dict struct {
	ids   map[string]uint32
	next  uint32
	added []string
}

func loadDict(eng engine) (*dict, error) {
	d := &dict{ids: map[string]uint32{"": 0}, next: 1}
	err := eng.view(func(r kvReader) error {
		r.scan([]byte{pDict}, []byte{pDict + 1}, func(k, v []byte) bool {
			id := binary.BigEndian.Uint32(k[1:])
			d.ids[string(v)] = id
			d.next = max(d.next, id+1)
			return true
		})
		return nil
	})
	return d, err
}

func (d *dict) id(s string) uint32 {
	if id, ok := d.ids[s]; ok {
		return id
	}
	id := d.next
	d.next++
	d.ids[s] = id
	d.added = append(d.added, s)
	return id
}

// flush writes the names added since the last successful Write.
func (d *dict) flush(w kvWriter) error {
	first := d.next - uint32(len(d.added))
	for i, s := range d.added {
		if err := w.put(dictKey(first+uint32(i)), []byte(s)); err != nil {
			return err
		}
	}
	return nil
}

// readName returns the name numbered id, read within r.
func readName(r kvReader, id uint32) (string, error) {
	if id == 0 {
		return "", nil
	}
	v := r.get(dictKey(id))
	if v == nil {
		return "", fmt.Errorf("history: name %d missing: %w", id, errCorrupt)
	}
	return string(v), nil
}

// learn adds names read to the store's cache (a new slice: scans in progress
// read the one they took).
func (s *Store) learn(names map[uint32]string) {
	if len(names) == 0 {
		return
	}
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	top := len(s.names)
	for id := range names {
		top = max(top, int(id)+1)
	}
	next := make([]string, top)
	copy(next, s.names)
	for id, n := range names {
		next[id] = n
	}
	s.names = next
}
