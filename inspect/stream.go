package inspect

import (
	"context"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/internal/exitcode"
)

// Stream is one poll whose rows are built while they are written out, a chunk at a
// time in reused memory, instead of all at once: a one-shot dump of a million rows
// never holds them, nor pays for the first touch of their memory.
type Stream struct {
	// Snapshot is everything the poll found but its rows (Resources is nil). Each
	// counts the rows it hands out into Snapshot.Summary.
	Snapshot *Snapshot

	plan           *rowPlan
	filter         string
	query          Query
	badFilter      bool // the filter does not parse: no row is kept
	onlyReportable bool
	reportable     bool // Each handed out a reportable row
}

// PollStream polls like Poll, but leaves building the rows to the Stream's Each. It
// computes no events, and leaves the poller's event history as it was.
func (p *Poller) PollStream(ctx context.Context) *Stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	reads, col := p.collect(ctx)
	s, pl := p.prepare(time.Now(), reads, col)
	return &Stream{Snapshot: s, plan: pl}
}

// Filter makes Each hand out only the rows that Filter(snapshot, filter,
// onlyReportable) would keep. It returns st.
func (st *Stream) Filter(filter string, onlyReportable bool) *Stream {
	q, err := ParseQuery(filter)
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
func (st *Stream) Each(work func(rows []Resource, out []byte) ([]byte, error), emit func(out []byte) error) error {
	var mu sync.Mutex
	sum := &st.Snapshot.Summary
	*sum = Summary{MastersUp: sum.MastersUp, Findings: sum.Findings} // rows are counted again
	st.reportable = false
	filtering := st.filter != "" || st.onlyReportable
	return st.plan.each(func(rows []Resource, out []byte) ([]byte, error) {
		if filtering {
			kept := rows[:0]
			for i := range rows {
				if !st.badFilter && keepRow(&rows[i], st.query, st.onlyReportable) {
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
		countRows(sum, rows)
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
	if c := ExitCode(st.Snapshot); c != 0 || !st.reportable {
		return c
	}
	return exitcode.Findings
}
