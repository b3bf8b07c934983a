package history

import (
	"fmt"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
)

// Backend is a history store: the embedded one (Store, a bbolt file) or a
// PostgreSQL database shared by several recorders (PG). A Recorder writes to it; the
// history command and serve's /api/v1/history ask it. Both answer the same questions
// the same way.
type Backend interface {
	// Write stores b durably: when it returns nil, a crash loses none of it.
	Write(b Batch) error
	// Trim applies the store's bounds (max_age, and max_size where it applies),
	// the oldest data first.
	Trim(now time.Time) (Trimmed, error)
	// Used returns the bytes the store's data takes on disk.
	Used() (int64, error)
	// At returns the lifecycles sel selects that were held at t, or why that is
	// unknown.
	At(sel Select, t time.Time) (Answer, error)
	// Lifecycles returns the lifecycles f selects, in the order they were acquired.
	Lifecycles(f Filter, now time.Time) (Result, error)
	// Marks returns the marks from since to until (zero: unbounded), in time order.
	Marks(since, until time.Time) ([]Mark, error)
	// Do answers req (now: what "still held" is measured to).
	Do(req Request, now time.Time) (Response, error)
	Close() error

	// settle ends what earlier sessions left open (lifecycles held, feed gaps)
	// unknown at their last write: at a Recorder's start, and for PG, of other
	// recorders that stopped writing.
	settle(now time.Time) error
}

var (
	_ Backend = (*Store)(nil)
	_ Backend = (*PG)(nil)
)

// OpenConfig opens the store h names: PostgreSQL when it has a URL, else the
// embedded store in its directory.
func OpenConfig(h config.HistoryConfig, readOnly bool) (Backend, error) {
	if h.URL != "" {
		return OpenPG(h.URL, h.Password, PGOptions{MaxAge: h.MaxAge, ReadOnly: readOnly})
	}
	if h.Dir == "" {
		return nil, fmt.Errorf("history: no store configured ([history] dir is off and url is unset)")
	}
	o := Options{ReadOnly: readOnly}
	if !readOnly {
		o.MaxSize, o.MaxAge = h.MaxSize, h.MaxAge
	}
	return Open(h.Dir, o)
}
