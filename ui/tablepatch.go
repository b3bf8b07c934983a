package ui

import (
	"cmp"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// A Delta (poll.Poller.PollDeltaOf) judges only the rows whose keys the live feed
// said changed. The table takes it in place of a whole poll's rows: the rows it
// dropped go, those it judged come in at their places in name order, and into the
// order and the view where the sort and the filter put them (a binary search in
// each), the other rows as they were. At 100k rows that is a few ms instead of
// building, judging and sorting every row.

// patcher returns what a Delta's command needs to patch the table off the UI path:
// its rows, order and view (read only) and the settings they were built for
// (applied, which the current ones differ from while a new order is on its way).
func (t *table) patcher(seq int) *table {
	a := t.applied
	return &table{src: t.src, snap: t.snap, at: t.at, rows: t.rows, order: t.order, view: t.view, ownerRanks: t.ownerRanks, filterErr: t.filterErr,
		seed: t.seed, tolerance: t.tolerance, seq: seq, sortCol: a.sortCol, desc: a.desc, filter: a.filter, anomaliesOnly: a.anomaliesOnly, height: 1}
}

// patch takes d, a Delta of t.src, in place of t.src (see the comment above), marks
// what changed and notes what happened (events) as a whole poll's merge does, and
// returns t. It writes fresh slices: the ones it read may still be read elsewhere
// (tableasync.go).
func (t *table) patch(d *poll.Delta) *table {
	old, oldSnap := t.rows, t.snap
	t.from, t.base, t.baseOrder, t.baseView = t.src, t.rows, t.order, t.view
	t.src, t.snap = d.Stream, d.Stream.Snapshot
	if len(d.Dropped) == 0 && len(d.Judged) == 0 {
		return t // the rows, their order and view as they were (read only, shared)
	}
	t.ownerRanks = nil

	// The judged rows, marked and noted beside the rows they replace.
	at := d.Stream.Snapshot.TakenAt
	shift := at.Sub(t.at).Milliseconds()
	judged := make([]row, len(d.Built))
	for i := range d.Built {
		judged[i] = t.newRow(&d.Built[i], at)
		if judged[i].state() == inspect.StateHeld {
			judged[i].validity += shift // as of t.at, as the other rows' are
		}
	}
	dropped := make([]row, len(d.Dropped))
	for i, k := range d.Dropped {
		dropped[i] = old[k]
	}
	t.events = t.merge(judged, dropped, oldSnap)

	// The rows: old's but those dropped, the judged ones at their places.
	n := len(old) - len(d.Dropped) + len(d.Judged)
	rows := make([]row, 0, n)
	renum := make([]int32, len(old)) // old row -> new row (-1: dropped)
	di, ji := 0, 0
	for i := range old {
		if di < len(d.Dropped) && d.Dropped[di] == i {
			renum[i] = -1
			di++
			continue
		}
		for ji < len(d.Judged) && d.Judged[ji] == len(rows) {
			rows = append(rows, judged[ji])
			ji++
		}
		renum[i] = int32(len(rows))
		rows = append(rows, old[i])
	}
	for ; ji < len(d.Judged); ji++ {
		rows = append(rows, judged[ji])
	}
	t.rows = rows

	// The order and the view: renumbered, less the dropped rows, with the judged
	// ones inserted where the sort (and the filter) put them.
	less := func(list []int32) []int32 {
		out := make([]int32, 0, len(list)+len(d.Judged))
		for _, i := range list {
			if k := renum[i]; k >= 0 {
				out = append(out, k)
			}
		}
		return out
	}
	byOrder := t.rowCmp()
	ins := make([]int32, len(d.Judged))
	for i, k := range d.Judged {
		ins[i] = int32(k)
	}
	slices.SortFunc(ins, byOrder)
	t.order = insertSorted(less(t.order), ins, byOrder)
	q, err := inspect.ParseQuery(t.filter)
	t.filterErr = err
	switch {
	case err != nil:
		t.view = nil
	case t.filter == "" && !t.anomaliesOnly:
		t.view = slices.Clone(t.order)
	default:
		kept := ins[:0:0]
		for _, i := range ins {
			if t.matches(q, i) {
				kept = append(kept, i)
			}
		}
		t.view = insertSorted(less(t.view), kept, byOrder)
	}
	return t
}

// rowCmp compares two rows (by index) in the table's sort order: by the sort column's
// key, then by name (their index), descending when desc, as resort orders them.
func (t *table) rowCmp() func(a, b int32) int {
	col, desc := t.sortCol, t.desc
	return func(a, b int32) int {
		var c int
		switch col {
		case colResource:
		case colOwner:
			c = strings.Compare(ownerText(&t.rows[a]), ownerText(&t.rows[b])) // ownerRank's order
		case colLib:
			c = cmp.Compare(t.rows[a].lib, t.rows[b].lib)
		default:
			c = cmp.Compare(t.sortKey(a, col), t.sortKey(b, col))
		}
		if c == 0 {
			c = cmp.Compare(a, b)
		}
		if desc {
			return -c
		}
		return c
	}
}

// insertSorted returns list (in the order of by) with ins (likewise, none in list)
// inserted where by puts them: a binary search for each, the runs between copied.
func insertSorted(list, ins []int32, by func(a, b int32) int) []int32 {
	out := make([]int32, 0, len(list)+len(ins))
	lo := 0
	for _, x := range ins {
		k, _ := slices.BinarySearchFunc(list[lo:], x, by)
		out = append(out, list[lo:lo+k]...)
		out = append(out, x)
		lo += k
	}
	return append(out, list[lo:]...)
}

// adoptDelta takes d, the table patched with it off the UI path (nt, from patcher),
// or patches the table here when its rows, order or view changed since they were
// read. It asks
// for a new order when the settings changed meanwhile. A Delta of another stream than
// the table's (none is asked for while a poll is in flight) is taken as a whole poll.
func (t *table) adoptDelta(d *poll.Delta, seq int, nt *table) tea.Cmd {
	if nt.from != t.src {
		t.setSnapshot(d.Stream, seq)
		t.applied = t.spec()
		return nil
	}
	if nt.seq != seq || !sameSlice(nt.base, t.rows) || !sameSlice(nt.baseOrder, t.order) || !sameSlice(nt.baseView, t.view) {
		nt = t.patcher(seq).patch(d)
	}
	t.src, t.snap, t.seq, t.rows, t.events, t.ownerRanks = nt.src, nt.snap, nt.seq, nt.rows, nt.events, nt.ownerRanks
	t.order, t.view, t.filterErr = nt.order, nt.view, nt.filterErr
	t.applied = nt.spec()
	t.gen++ // an order built for the previous rows no longer applies
	t.pending = false
	if t.applied != t.spec() {
		if cmd := t.rebuild(true, false); cmd != nil {
			t.restoreCursor()
			return cmd
		}
	}
	t.restoreCursor()
	return nil
}
