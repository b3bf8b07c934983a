package history

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// engine is the ordered key-value store under a Store: one durable transaction per
// write, consistent reads.
type engine interface {
	update(fn func(kvWriter) error) error
	view(fn func(kvReader) error) error
	used() (int64, error) // bytes the data takes on disk (free pages not counted)
	close() error
}

type kvReader interface {
	get(k []byte) []byte
	// scan calls fn for keys in [lo, hi) in order until it returns false; k and v are
	// valid only during the call.
	scan(lo, hi []byte, fn func(k, v []byte) bool)
	// last returns the last key in [lo, hi), nil if none.
	last(lo, hi []byte) []byte
}

type kvWriter interface {
	kvReader
	put(k, v []byte) error
	del(k []byte) error
}

// fileName is the store's file in its directory.
const fileName = "history.db"

var bucket = []byte("h")

// errLocked says another process has the store open for writing.
var errLocked = errors.New("the store is open in another process")

// lockTimeout is how long Open waits for another process to let go of the store.
const lockTimeout = time.Second

type boltEngine struct{ db *bolt.DB }

func openBolt(dir string, readOnly bool) (*boltEngine, error) {
	path := filepath.Join(dir, fileName)
	if readOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolt.ErrTimeout) {
		who := ""
		if h := lockHolder(path); h != "" {
			who = ", " + h
		}
		return nil, fmt.Errorf("%s: %w%s, and one process at a time has it (a running serve records to it: ask it with --server URL)", path, errLocked, who)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !readOnly {
		if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &boltEngine{db: db}, nil
}

type boltTx struct{ b *bolt.Bucket }

func (t boltTx) get(k []byte) []byte { return t.b.Get(k) }

func (t boltTx) scan(lo, hi []byte, fn func(k, v []byte) bool) {
	c := t.b.Cursor()
	for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
		if !fn(k, v) {
			return
		}
	}
}

func (t boltTx) last(lo, hi []byte) []byte {
	c := t.b.Cursor()
	k, _ := c.Seek(hi)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
		return nil
	}
	return bytes.Clone(k)
}

func (t boltTx) put(k, v []byte) error { return t.b.Put(k, v) }
func (t boltTx) del(k []byte) error    { return t.b.Delete(k) }

func (e *boltEngine) update(fn func(kvWriter) error) error {
	return e.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		b.FillPercent = 0.95 // keys mostly come in order: pack the pages
		return fn(boltTx{b})
	})
}

func (e *boltEngine) view(fn func(kvReader) error) error {
	return e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		return fn(boltTx{b})
	})
}

// used is the pages in use: the file's high-water mark (it is grown ahead of
// need) less the free pages.
func (e *boltEngine) used() (int64, error) {
	var size int64
	err := e.db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	return size - int64(e.db.Stats().FreeAlloc), err
}

func (e *boltEngine) close() error { return e.db.Close() }
