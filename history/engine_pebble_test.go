package history

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleEngine is the engine measured against bbolt (see docs/history.md): the
// same keys and blocks in a Pebble LSM, one synced batch per write.
type pebbleEngine struct{ db *pebble.DB }

func openPebble(dir string) (*pebbleEngine, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		return nil, err
	}
	return &pebbleEngine{db: db}, nil
}

type pebbleReader struct{ r pebble.Reader }

func (p pebbleReader) get(k []byte) []byte {
	v, c, err := p.r.Get(k)
	if err != nil {
		return nil
	}
	defer c.Close()
	return bytes.Clone(v)
}

func (p pebbleReader) scan(lo, hi []byte, fn func(k, v []byte) bool) {
	it, err := p.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Key(), it.Value()) {
			return
		}
	}
}

func (p pebbleReader) last(lo, hi []byte) []byte {
	it, err := p.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil
	}
	defer it.Close()
	if !it.Last() {
		return nil
	}
	return bytes.Clone(it.Key())
}

type pebbleWriter struct {
	pebbleReader
	b *pebble.Batch
}

func (w pebbleWriter) put(k, v []byte) error { return w.b.Set(k, v, nil) }
func (w pebbleWriter) del(k []byte) error    { return w.b.Delete(k, nil) }

func (e *pebbleEngine) update(fn func(kvWriter) error) error {
	b := e.db.NewIndexedBatch()
	defer b.Close()
	if err := fn(pebbleWriter{pebbleReader{b}, b}); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

func (e *pebbleEngine) view(fn func(kvReader) error) error {
	s := e.db.NewSnapshot()
	defer s.Close()
	return fn(pebbleReader{s})
}

func (e *pebbleEngine) used() (int64, error) {
	return int64(e.db.Metrics().DiskSpaceUsage()), nil
}

func (e *pebbleEngine) close() error { return e.db.Close() }

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
