package poll

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/exitcode"
)

// Stream is one poll whose rows are built while they are written out, a chunk at a
// time in reused memory, instead of all at once: a one-shot dump of a million rows
// never holds them, nor pays for the first touch of their memory. Its rows can also be
// built one at a time (Row, Node), as often as asked: the console keeps a stream and
// its own compact rows instead of the built ones.
type Stream struct {
	// Snapshot is everything the poll found but its rows (Resources is nil). Each
	// counts the rows it hands out into Snapshot.Summary.
	Snapshot *inspect.Snapshot

	// Plan builds the poll's rows: a carry.Tracker keeps it, to build them only
	// if a later poll carries from them.
	Plan           *RowPlan
	rows           []inspect.Resource // StreamOf: the rows, built already, in name order
	filter         string
	query          inspect.Query
	badFilter      bool // the filter does not parse: no row is kept
	onlyReportable bool
	reportable     bool // Each handed out a reportable row

	// A carry.Carrier's (Carrier.Track): Observe sees every row as each builds it, before
	// any filter; Passed is set once each has handed out every row; Carried is what
	// the rows the Carrier carried add to the summary's row counts.
	Observe func(lo int, rows []inspect.Resource)
	Passed  atomic.Bool
	Carried inspect.Summary
}

// PollStream polls like Poll, but leaves building the rows to the Stream's Each. It
// computes no events, and leaves the poller's event history as it was.
func (p *Poller) PollStream(ctx context.Context) *Stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	reads, col := p.collect(ctx)
	s, pl := p.prepare(time.Now(), reads, col)
	if p.ff != nil {
		p.ff.rates = pl.rates
		col.out = true // until Recycle: the next poll writes a copy (see collectFed)
	}
	return &Stream{Snapshot: s, Plan: pl}
}

// Recycle hands the poller the tables of st, one of its polls that nothing reads any
// more: not st, nor a row built from it, nor a string taken from one (serve's poll, once
// its figures are tallied: its Carrier keeps no string of it). The next poll fills them
// instead of new ones: at 5 × 1M keys, 170 MB that are not allocated again, and the
// only set of tables serve has. st is empty afterwards. A stream of
// a snapshot (StreamOf) or of another poller is left as it is.
func (p *Poller) Recycle(st *Stream) {
	if st == nil || st.Plan == nil || st.Plan.c.cfg != p.cfg {
		return
	}
	if c := st.Plan.c; c.kept {
		p.mu.Lock()
		c.out = false // its tables are the next poll's, written in place (feedfirst.go)
		p.mu.Unlock()
		st.Plan, st.rows = nil, nil
		return
	}
	t := st.Plan.c.recycle(st.Plan)
	st.Plan, st.rows = nil, nil
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spare = t
}

// StreamOf returns a stream of a snapshot whose rows are built already (a poll
// tracked whole, a replay): Each, Row and Node hand out its rows in name order. Its
// Snapshot is a copy of s without the rows; s is not changed.
func StreamOf(s *inspect.Snapshot) *Stream {
	c := *s
	rows := s.Resources
	if !ByName(rows) {
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b inspect.Resource) int { return strings.Compare(a.Resource, b.Resource) })
	}
	c.Resources = nil
	return &Stream{Snapshot: &c, rows: rows}
}

// Len is the number of rows of the poll, before any filter.
func (st *Stream) Len() int {
	if st.Plan == nil {
		return len(st.rows)
	}
	return len(st.Plan.keep)
}

// Row builds row i (0 ≤ i < Len(), in name order) in memory of its own, as Each
// hands it out. The stream is only read: Row may run on several goroutines at once.
func (st *Stream) Row(i int) inspect.Resource {
	if st.Plan == nil {
		return st.rows[i]
	}
	return st.Plan.row(i)
}

// Node returns master mi's node of row i as Row(i) has it, without building the row:
// a few nanoseconds, for sorting a million rows by one master's PTTL.
func (st *Stream) Node(i, mi int) inspect.Node {
	if st.Plan == nil {
		if r := &st.rows[i]; mi < len(r.Nodes) {
			return r.Nodes[mi]
		}
		return inspect.Node{PTTLMs: -2, Type: inspect.TypeNone}
	}
	return st.Plan.node(i, mi)
}

// EachAt hands every row, in name order and unfiltered, to work a chunk at a time, on
// several goroutines at once; lo is the index (Row's) of the chunk's first row. A
// chunk is reused once work returned: work may keep the strings of its rows (they
// are the poll's), not the rows. Like Each, it recounts Snapshot.Summary.
func (st *Stream) EachAt(work func(lo int, rows []inspect.Resource)) {
	var mu sync.Mutex
	sum := &st.Snapshot.Summary
	st.resetRowCounts()
	st.each(func(lo int, rows []inspect.Resource, out []byte) ([]byte, error) {
		work(lo, rows)
		mu.Lock()
		inspect.CountRows(sum, rows)
		mu.Unlock()
		return out, nil
	}, func([]byte) error { return nil })
}

// Built returns every row, built in memory of their own.
func (st *Stream) Built() []inspect.Resource {
	if st.Plan == nil {
		return slices.Clone(st.rows)
	}
	return st.Plan.Rows()
}

// resetRowCounts sets the summary's row counts to those of the rows a Carrier
// carried, before the rows are counted again.
func (st *Stream) resetRowCounts() {
	sum := &st.Snapshot.Summary
	c := st.Carried
	c.MastersUp, c.Findings = sum.MastersUp, sum.Findings
	*sum = c
}

// each hands the rows, streamChunk at a time, to work and emit as inOrder does: built
// in reused memory from the plan, or copies of StreamOf's rows (work may change them).
// observe, if set, sees each chunk first.
func (st *Stream) each(work func(lo int, rows []inspect.Resource, out []byte) ([]byte, error), emit func(out []byte) error) error {
	if observe := st.Observe; observe != nil {
		inner := work
		work = func(lo int, rows []inspect.Resource, out []byte) ([]byte, error) {
			observe(lo, rows)
			return inner(lo, rows, out)
		}
	}
	if pl := st.Plan; pl != nil && pl.c.kept {
		// A feed-first poll's: each row's contribution to the counts is kept, for
		// the Deltas that follow (delta.go).
		inner := work
		work = func(lo int, rows []inspect.Resource, out []byte) ([]byte, error) {
			for j := range rows {
				pl.c.contrib[pl.keep[lo+j]] = contributionOf(&rows[j])
			}
			return inner(lo, rows, out)
		}
	}
	var err error
	if st.Plan != nil {
		err = st.Plan.each(work, emit)
	} else {
		bufs := make([][]inspect.Resource, runtime.GOMAXPROCS(0))
		err = inOrder((len(st.rows)+streamChunk-1)/streamChunk, len(bufs), func(w, k int, out []byte) ([]byte, error) {
			lo := k * streamChunk
			bufs[w] = append(bufs[w][:0], st.rows[lo:min(lo+streamChunk, len(st.rows))]...)
			return work(lo, bufs[w], out)
		}, emit)
	}
	if err == nil {
		st.Passed.Store(true)
		if st.Plan != nil && st.Plan.c.kept {
			st.Plan.c.tallied = true
		}
	}
	return err
}

// EachName hands f the resource name of every row, in name order, without building
// the rows.
func (st *Stream) EachName(f func(name string)) {
	if st.Plan == nil {
		for i := range st.rows {
			f(st.rows[i].Resource)
		}
		return
	}
	c := st.Plan.c
	for _, e := range st.Plan.keep {
		f(c.cfg.Resource(c.key(e)))
	}
}

// Filter makes Each hand out only the rows that Filter(snapshot, filter,
// onlyReportable) would keep. It returns st.
func (st *Stream) Filter(filter string, onlyReportable bool) *Stream {
	q, err := inspect.ParseQuery(filter)
	st.filter, st.query, st.badFilter, st.onlyReportable = filter, q, err != nil, onlyReportable
	return st
}

// Each hands the rows, in name order and filtered, to work a chunk at a time, on
// several goroutines at once, and what work appended to out for each chunk to emit,
// one chunk at a time in name order. A chunk and its output are reused once emit
// returned: neither work nor emit may keep them. Each recounts the rows of
// Snapshot.Summary as it goes: the summary is whole once Each has returned nil. It
// can be called again, and builds the same rows again. It returns the first error of
// work or emit.
func (st *Stream) Each(work func(rows []inspect.Resource, out []byte) ([]byte, error), emit func(out []byte) error) error {
	var mu sync.Mutex
	sum := &st.Snapshot.Summary
	st.resetRowCounts() // rows are counted again
	st.reportable = false
	filtering := st.filter != "" || st.onlyReportable
	return st.each(func(_ int, rows []inspect.Resource, out []byte) ([]byte, error) {
		if filtering {
			kept := rows[:0]
			for i := range rows {
				if !st.badFilter && inspect.KeepRow(&rows[i], st.query, st.onlyReportable) {
					kept = append(kept, rows[i])
				}
			}
			rows = kept
		}
		reportable := false
		for i := 0; i < len(rows) && !reportable; i++ {
			reportable = rows[i].Reportable()
		}
		mu.Lock()
		inspect.CountRows(sum, rows)
		st.reportable = st.reportable || reportable
		mu.Unlock()
		if len(rows) == 0 {
			return out, nil
		}
		return work(rows, out)
	}, emit)
}

// ExitCode is ExitCode of the snapshot with the rows Each handed out: valid once Each
// has returned nil.
func (st *Stream) ExitCode() int {
	if c := inspect.ExitCode(st.Snapshot); c != 0 || !st.reportable {
		return c
	}
	return exitcode.Findings
}

// ByName reports whether rows are sorted by resource name.
func ByName(rows []inspect.Resource) bool {
	for i := 1; i < len(rows); i++ {
		if rows[i].Resource < rows[i-1].Resource {
			return false
		}
	}
	return true
}
