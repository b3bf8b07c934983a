package ui

import (
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/verdict"
)

// Sortable columns; a master's PTTL column is colMasters+i.
const (
	colResource = iota
	colState
	colOwner
	colHolders
	colValidity
	colSpread
	colToken
	colLib
	colMasters
)

var colNames = [...]string{"RESOURCE", "STATE", "OWNER", "HOLD", "VALIDITY", "SPREAD", "TOKEN", "LIB"}

// changedPolls is how many polls a changed row stays marked.
const changedPolls = 3

// row is one resource of the current poll as the table sorts, filters and marks it.
// The whole resource (every master's node, anomalies, the decoded lock) is not kept:
// it is built again from the poll's stream when a row is drawn or opened
// (table.resource). Strings share the poll's memory. A new column is a field here,
// filled in newRow.
type row struct {
	name, owner, value string // raw, as the poll read them (display forms are made when drawn)
	validity, spread   int64  // ms; validity counts for a held row only, as of table.at
	token              int64
	expiry             int64  // when the value's last holder lets it go, unix ns (history)
	fp                 uint64 // what the row shows, to mark it changed
	changedAt          int32  // poll sequence number of the last change
	holders            int16
	sev                int8 // the state, by severity (stateSeverity, state)
	lib                int8 // the library that wrote the lock, by locks.LibraryRank (table.libID)
	anomalous          bool
	uncertain          bool
	carried            bool // a node is carried from an unreachable master (inspect.Tracker)
	// The filter matches these as they are when they have no upper case.
	lowerName, lowerOwner, lowerValue bool
}

// table is the resource table: the rows of the current poll in name order, sorted
// and filtered on its own index slices, with only the visible window rendered.
type table struct {
	src  *poll.Stream      // the current poll; builds a row's whole resource
	snap *inspect.Snapshot // src.Snapshot
	rows []row             // in name order: rows[i] is src.Row(i)
	// at is when the poll the rows were built from whole was taken: a held row's
	// validity is as of then (a Delta's rows are moved back to it, so that the sort
	// compares deadlines).
	at time.Time
	// events are what changed between the previous poll's rows and these.
	events    []inspect.Event
	tolerance time.Duration // noise in expiries events ignore (inspect.EventTolerance)

	order []int32 // every row, in sort order
	view  []int32 // the filtered subset of order

	sortCol       int
	desc          bool
	filter        string // the query text (inspect.ParseQuery)
	anomaliesOnly bool
	filterErr     error      // filter does not parse (inspect.ParseQuery): no row is kept
	live          *liveBoard // the live feed's record, for the LIVE column (nil: none)
	liveNow       time.Time

	cursor, offset int
	height         int    // visible rows
	selected       string // resource under the cursor, kept across polls and sorts
	seq            int    // poll sequence number

	seed maphash.Seed
	// ownerRanks[i] is row i's owner position among distinct owners (lazy, per snapshot).
	ownerRanks []int32
	// Sort buffers, reused across sorts.
	keyBuf          []int64
	packBuf, tmpBuf []uint64
	mine            map[string]string // resource -> value this console holds

	// Building off the UI path (tableasync.go).
	applied viewSpec // the settings order and view were built for
	gen     int      // the latest order request; older results are dropped
	pending bool     // an order request is on its way
	base    []row    // a table built in a command: the previous rows it merged against
	// A table patched in a command (tablepatch.go): the stream, order and view it
	// patched.
	from                *poll.Stream
	baseOrder, baseView []int32
	// asyncRows is the row count from which sorting and filtering leave the UI path.
	asyncRows int
	stale     bool // polling paused: time-based cells are frozen figures
}

func newTable() *table {
	return &table{seed: maphash.MakeSeed(), height: 10, mine: map[string]string{}, asyncRows: asyncRows}
}

// states are the row states by severity (stateSeverity).
var states = [...]string{inspect.StateSplit, inspect.StateNoTTL, inspect.StateForeign, inspect.StatePartial, inspect.StateHeld, inspect.StateFree, ""}

// state is r's state (inspect.State*).
func (r *row) state() string { return states[r.sev] }

// libID is the library id of row i (locks.LibraryRank's inverse).
func (t *table) libID(i int32) string {
	switch k := int(t.rows[i].lib); {
	case k == 0:
		return ""
	case k <= len(locks.Libraries):
		return locks.Libraries[k-1].ID
	case k == 1+len(locks.Libraries):
		return locks.Unknown
	}
	return t.resource(i).Library // an id outside the registry, which no decoder gives
}

func stateSeverity(s string) int8 {
	switch s {
	case inspect.StateSplit:
		return 0
	case inspect.StateNoTTL:
		return 1
	case inspect.StateForeign:
		return 2
	case inspect.StatePartial:
		return 3
	case inspect.StateHeld:
		return 4
	case inspect.StateFree:
		return 5
	}
	return 6
}

func isAnomalous(r *inspect.Resource) bool {
	switch r.State {
	case inspect.StateHeld, inspect.StateFree:
		return r.Uncertain || len(r.Anomalies) > 0
	}
	return true
}

func (t *table) fingerprint(r *inspect.Resource) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.WriteString(r.State)
	h.WriteByte(0)
	h.WriteString(r.Value)
	h.WriteByte(byte(r.Holders))
	for i := range r.Nodes {
		n := &r.Nodes[i]
		h.WriteByte(0)
		h.WriteString(n.Value)
		h.WriteByte(0)
		h.WriteString(n.Type)
		if n.Error != "" {
			h.WriteByte(1)
		}
		if n.PTTLMs == -1 {
			h.WriteByte(2)
		}
	}
	return h.Sum64()
}

// newRow is r's row in a poll taken at "at" (changedAt is set by merge).
func (t *table) newRow(r *inspect.Resource, at time.Time) row {
	carried := false
	for i := range r.Nodes {
		carried = carried || r.Nodes[i].LastSeen != nil
	}
	return row{
		name: r.Resource, owner: r.Owner, value: r.Value,
		validity: r.ValidityMs, spread: r.TTLSpreadMs, token: r.Token,
		expiry: verdict.ReadingOf(r, at).Expiry, fp: t.fingerprint(r),
		holders: int16(min(r.Holders, math.MaxInt16)), sev: stateSeverity(r.State), lib: int8(min(locks.LibraryRank(r.Library), math.MaxInt8)),
		anomalous: isAnomalous(r), uncertain: r.Uncertain, carried: carried,
		lowerName: isLower(r.Resource), lowerOwner: isLower(r.Owner), lowerValue: isLower(r.Value),
	}
}

// isLower reports whether s is its own lower-case form (strings.ToLower).
func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return strings.ToLower(s) == s
		case 'A' <= c && c <= 'Z':
			return false
		}
	}
	return true
}

// reading is what events compare of r (inspect.ReadingOf).
func (r *row) reading() verdict.Reading {
	rd := verdict.Reading{Value: r.value, State: r.state(), Expiry: r.expiry}
	if r.state() == inspect.StateFree {
		rd.Value = ""
	}
	return rd
}

// setSnapshot replaces the rows with st's, marks the rows that changed since the
// previous poll and notes what happened between the two (events), re-sorts and
// re-filters, and keeps the cursor on the same resource.
func (t *table) setSnapshot(st *poll.Stream, seq int) {
	prev, prevSnap := t.rows, t.snap
	t.src, t.snap, t.seq, t.ownerRanks = st, st.Snapshot, seq, nil
	// Fresh slices, never the previous ones reused: a command building an order off
	// the UI path may still be reading them (tableasync.go).
	rows := make([]row, st.Len())
	at := st.Snapshot.TakenAt
	st.EachAt(func(lo int, rs []inspect.Resource) {
		for i := range rs {
			rows[lo+i] = t.newRow(&rs[i], at)
		}
	})
	t.rows, t.at = rows, at
	t.events = t.merge(t.rows, prev, prevSnap)
	t.resort()
	t.applied, t.pending = t.spec(), false
	t.gen++ // an order built for the previous rows no longer applies
}

// merge walks rows (the current poll's, or those a Delta judged) beside the
// previous poll's (prev, of prevSnap; both in name order): a row keeps its changed
// mark while its fingerprint stays, and what turned a previous row into its successor
// is an event. Nothing is an event or a change on the first poll (prevSnap nil).
func (t *table) merge(rows, prev []row, prevSnap *inspect.Snapshot) []inspect.Event {
	var evs []inspect.Event
	now, primed := t.snap.TakenAt, prevSnap != nil
	tolerance := t.tolerance
	if primed {
		tolerance += verdict.PollNoise(prevSnap, t.snap)
	}
	note := func(name string, p, cur verdict.Reading, carried bool) {
		e, ok := verdict.Change(name, p, cur, now, tolerance)
		// A row carried from an unreachable master was not seen to go.
		if ok && !(carried && (e.Kind == "released" || e.Kind == "expired")) {
			evs = append(evs, e)
		}
	}
	j := 0
	for k := range rows {
		r := &rows[k]
		for ; j < len(prev) && prev[j].name < r.name; j++ {
			if primed {
				note(prev[j].name, prev[j].reading(), verdict.Reading{}, false)
			}
		}
		var p *row
		if j < len(prev) && prev[j].name == r.name {
			p = &prev[j]
			j++
		}
		switch {
		case !primed:
			r.changedAt = -changedPolls
			continue
		case p != nil && p.fp == r.fp:
			r.changedAt = p.changedAt
		default:
			r.changedAt = int32(t.seq)
		}
		var pr verdict.Reading
		if p != nil {
			pr = p.reading()
		}
		note(r.name, pr, r.reading(), r.carried)
	}
	for ; primed && j < len(prev); j++ {
		note(prev[j].name, prev[j].reading(), verdict.Reading{}, false)
	}
	return evs
}

// nColumns is the number of sortable columns for the current masters.
func (t *table) nColumns() int {
	n := colMasters
	if t.snap != nil {
		n += len(t.snap.Masters)
	}
	return n
}

// Sort keys of master cells that show no PTTL, placed after every real one; small
// enough that the packed radix sort still applies (41 bits of key).
const (
	sortNeverExpires = int64(1) << 40
	sortNotALock     = sortNeverExpires + 1
)

// restoreCursor puts the cursor back on the selected resource if it is still in view,
// otherwise keeps the cursor's position.
func (t *table) restoreCursor() {
	if t.selected != "" {
		if idx, ok := t.rowByName(t.selected); ok {
			for i, v := range t.view {
				if v == idx {
					t.cursor = i
					t.clampOffset()
					return
				}
			}
		}
	}
	t.moveTo(t.cursor)
}

// rowByName finds a row by resource name (the rows are in name order).
func (t *table) rowByName(name string) (int32, bool) {
	k, ok := slices.BinarySearchFunc(t.rows, name, func(r row, n string) int { return strings.Compare(r.name, n) })
	return int32(k), ok
}

// resource builds row i's whole resource from the poll.
func (t *table) resource(i int32) *inspect.Resource {
	r := t.src.Row(int(i))
	return &r
}

// moveTo puts the cursor on view index i (clamped) and selects that resource.
func (t *table) moveTo(i int) {
	if len(t.view) == 0 {
		t.cursor, t.offset = 0, 0
		return
	}
	t.cursor = max(0, min(i, len(t.view)-1))
	t.selected = t.rows[t.view[t.cursor]].name
	t.clampOffset()
}

func (t *table) clampOffset() {
	h := max(1, t.height)
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+h {
		t.offset = t.cursor - h + 1
	}
	t.offset = max(0, min(t.offset, max(0, len(t.view)-h)))
}

func (t *table) setHeight(h int) {
	t.height = max(1, h)
	t.clampOffset()
}

// current returns the resource under the cursor, nil when the view is empty.
func (t *table) current() *inspect.Resource {
	if t.cursor < 0 || t.cursor >= len(t.view) {
		return nil
	}
	return t.resource(t.view[t.cursor])
}

// cell kinds, by agreement with the row's holding value.
const (
	cellSame = iota
	cellOther
	cellAbsent
	cellDown
	cellProjected // an unreachable master's PTTL projected from its last sample
)
