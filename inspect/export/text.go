package export

import (
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/redlockctl/redlockctl/inspect"
)

// WriteText writes the metrics of one snapshot (a poll that took took) in the
// Prometheus text format, as a scrape of `redlockctl serve` right after that poll
// would serve them: for node_exporter's textfile collector. The counters count this
// one poll.
func WriteText(w io.Writer, s *inspect.Snapshot, took time.Duration, o Options) error {
	e := New(o)
	e.Record(s, took)
	e.now = func() time.Time { return s.TakenAt }
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
