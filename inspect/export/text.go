package export

import (
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// WriteText writes the metrics of one snapshot (a poll that took took) in the
// Prometheus text format, as a scrape of `redlockctl serve` right after that poll
// would serve them: for node_exporter's textfile collector. The counters count this
// one poll.
func WriteText(w io.Writer, s *inspect.Snapshot, took time.Duration, o Options) error {
	e := New(o)
	e.Record(s, took)
	return e.writeText(w, s.TakenAt)
}

// WriteTextStream is WriteText for a poll whose rows are built a chunk at a time and
// tallied (poll.Stream.Each), never all at once: the same text, for a fraction of
// the memory at 100k locks.
func WriteTextStream(w io.Writer, st *poll.Stream, took time.Duration, o Options) error {
	e := New(o)
	t := tally(st, &e.opts)
	e.cur.Store(reduceTally(st.Snapshot, t, took, &e.opts, nil)) // Each made the summary whole
	return e.writeText(w, st.Snapshot.TakenAt)
}

// writeText writes what a scrape at instant now would serve.
func (e *Exporter) writeText(w io.Writer, now time.Time) error {
	e.now = func() time.Time { return now }
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("prometheus metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

func init() {
	report.Register(report.Format{Name: "prometheus", Help: "the text exposition, for node_exporter's textfile collector",
		Stream: func(w io.Writer, st *poll.Stream, c report.Context) error {
			return WriteTextStream(w, st, c.Took, Options{Masters: c.Masters, Resources: c.Resources})
		}})
}
