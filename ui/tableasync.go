package ui

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect/poll"
)

// asyncRows is the row count from which sorting and filtering run in a command, off
// the UI path: at a million rows one sort or filter pass takes longer than a
// keystroke may, so the keystroke re-renders at once (the status line says
// "sorting…") and the new order lands when it is ready. A new snapshot's rows are
// always built in the poll's command.
const asyncRows = 200_000

// viewSpec is the settings an order and a view are built for.
type viewSpec struct {
	sortCol       int
	desc          bool
	filter        string
	anomaliesOnly bool
}

func (t *table) spec() viewSpec {
	return viewSpec{sortCol: t.sortCol, desc: t.desc, filter: t.filter, anomaliesOnly: t.anomaliesOnly}
}

// orderMsg carries an order and a view built off the UI path for request gen.
type orderMsg struct {
	gen int
	nt  *table
}

// large reports whether sorting and filtering go off the UI path.
func (t *table) large() bool { return len(t.rows) >= t.asyncRows }

// scratch returns a table that shares t's rows, names and fingerprints read-only
// and has sp's settings, for building in a command: it owns every slice it writes.
func (t *table) scratch(sp viewSpec) *table {
	return &table{src: t.src, snap: t.snap, rows: t.rows, ownerRanks: t.ownerRanks, seed: t.seed, tolerance: t.tolerance,
		seq: t.seq, sortCol: sp.sortCol, desc: sp.desc, filter: sp.filter, anomaliesOnly: sp.anomaliesOnly, height: 1}
}

// rebuild brings the order and the view up to the current settings: at once for a
// small table, in a command for a large one. narrow says the view only loses rows.
func (t *table) rebuild(resort, narrow bool) tea.Cmd {
	if !t.large() {
		if resort {
			t.resort()
		} else {
			t.refilter(narrow)
		}
		t.applied = t.spec()
		return nil
	}
	t.gen++
	t.pending = true
	gen, nt := t.gen, t.scratch(t.spec())
	order, view, applied := t.order, t.view, t.applied
	return func() tea.Msg {
		switch {
		case resort || nt.sortCol != applied.sortCol:
			nt.resort()
		case nt.desc != applied.desc:
			nt.order = slices.Clone(order)
			slices.Reverse(nt.order)
			nt.refilter(false)
		default:
			nt.order = order
			if narrow && (nt.filter == applied.filter || applied.filter == "" || narrows(applied.filter, nt.filter)) && (nt.anomaliesOnly || !applied.anomaliesOnly) {
				nt.view = view // read only: refilter writes a new slice when narrowing
				nt.refilter(true)
			} else {
				nt.refilter(false)
			}
		}
		return orderMsg{gen: gen, nt: nt}
	}
}

// adoptOrder takes an order and view built off the UI path, unless the settings or
// the rows changed since it was asked for (a newer request is then on its way).
func (t *table) adoptOrder(msg orderMsg) {
	if msg.gen != t.gen || msg.nt.spec() != t.spec() {
		return
	}
	nt := msg.nt
	t.order, t.view, t.applied, t.pending = nt.order, nt.view, nt.spec(), false
	if t.ownerRanks == nil {
		t.ownerRanks = nt.ownerRanks
	}
	t.restoreCursor()
}

// builder returns what the poll's command needs to build the next poll's rows off
// the UI path (the current rows, read only, to merge with); seq is the sequence number
// the poll will get.
func (t *table) builder(seq int) *table {
	return &table{src: t.src, snap: t.snap, rows: t.rows, seed: t.seed, tolerance: t.tolerance, seq: seq, sortCol: t.sortCol, desc: t.desc,
		filter: t.filter, anomaliesOnly: t.anomaliesOnly, height: 1}
}

// build builds st's rows, marks, events, order and view (in the poll's command).
func (b *table) build(st *poll.Stream) *table {
	b.base = b.rows
	b.setSnapshot(st, b.seq)
	return b
}

// adoptSnapshot takes rows built off the UI path by build. It falls back to building
// them here when they were merged with other rows than the table has now, and asks
// for a new order when the settings changed while the poll ran.
func (t *table) adoptSnapshot(st *poll.Stream, seq int, nt *table) tea.Cmd {
	if nt == nil || nt.src != st || nt.seq != seq || !sameSlice(nt.base, t.rows) {
		t.setSnapshot(st, seq)
		t.applied = t.spec()
		return nil
	}
	t.src, t.snap, t.seq, t.rows, t.events, t.ownerRanks, t.at = nt.src, nt.snap, nt.seq, nt.rows, nt.events, nt.ownerRanks, nt.at
	t.order, t.view, t.applied = nt.order, nt.view, nt.spec()
	t.gen++ // an order built for the previous rows no longer applies
	t.pending = false
	if t.applied != t.spec() {
		cmd := t.rebuild(true, false)
		if cmd == nil {
			return nil
		}
		t.restoreCursor()
		return cmd
	}
	t.restoreCursor()
	return nil
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
