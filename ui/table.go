package ui

import (
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
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

// row is one resource of the current snapshot with what the table needs precomputed.
type row struct {
	res       *inspect.Resource
	name      string // display form (escaped)
	owner     string // display form (escaped); the quoted value when no owner was parsed
	lib       string // the library that wrote the lock (escaped), "" for a free row
	lname     string // raw, lower-case, for the filter (as dump matches)
	lowner    string
	lvalue    string
	rank      int32 // position in resource-name order
	sev       int8  // state severity, for sorting by state
	anomalous bool
	changedAt int // poll sequence number of the last change
	fp        uint64
}

// fpEntry is one resource's fingerprint from the previous poll, in name order.
type fpEntry struct {
	name      string
	fp        uint64
	changedAt int
}

// table is the resource table: the rows of the current snapshot, sorted and filtered
// on its own index slices, with only the visible window rendered.
type table struct {
	snap  *inspect.Snapshot
	rows  []row
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

	prev   []fpEntry // previous poll's fingerprints, in name order
	byName []int32   // row indices in resource-name order (byName[rank] = row)
	seed   maphash.Seed
	// ownerRanks[i] is row i's owner position among distinct owners (lazy, per snapshot).
	ownerRanks []int32
	// Sort buffers, reused across sorts.
	keyBuf          []int64
	packBuf, tmpBuf []uint64
	mine            map[string]string // resource -> value this console holds

	// Building off the UI path (tableasync.go).
	applied viewSpec  // the settings order and view were built for
	gen     int       // the latest order request; older results are dropped
	pending bool      // an order request is on its way
	base    []fpEntry // a table built in a command: the fingerprints it merged against
	// asyncRows is the row count from which sorting and filtering leave the UI path.
	asyncRows int
	stale     bool // polling paused: time-based cells are frozen figures
}

func newTable() *table {
	return &table{seed: maphash.MakeSeed(), height: 10, mine: map[string]string{}, asyncRows: asyncRows}
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

// setSnapshot replaces the rows with s's resources, marks rows that changed since the
// previous poll, re-sorts and re-filters, and keeps the cursor on the same resource.
func (t *table) setSnapshot(s *inspect.Snapshot, seq int) {
	t.snap = s
	t.seq = seq
	t.ownerRanks = nil
	n := len(s.Resources)
	// Fresh slices, never the previous ones reused: a command building an order off
	// the UI path may still be reading them (tableasync.go).
	t.rows = make([]row, n)
	for i := range s.Resources {
		r := &s.Resources[i]
		name := clean(r.Resource)
		owner := clean(r.Owner)
		if r.Owner == "" && r.Value != "" {
			owner = quote(r.Value) // a value another library wrote: no owner to parse
		}
		t.rows[i] = row{
			res: r, name: name, owner: owner, lib: clean(r.Library),
			lname: strings.ToLower(r.Resource), lowner: strings.ToLower(r.Owner), lvalue: strings.ToLower(r.Value),
			sev: stateSeverity(r.State), anomalous: isAnomalous(r), fp: t.fingerprint(r),
		}
	}
	// Name order: the poller usually returns resources sorted; sort only if not.
	byName := make([]int32, n)
	for i := range byName {
		byName[i] = int32(i)
	}
	if !slices.IsSortedFunc(byName, t.cmpName) {
		slices.SortFunc(byName, t.cmpName)
	}
	// Merge with the previous poll's fingerprints (both in name order).
	next := make([]fpEntry, n)
	j := 0
	for k, idx := range byName {
		r := &t.rows[idx]
		r.rank = int32(k)
		name := r.res.Resource
		for j < len(t.prev) && t.prev[j].name < name {
			j++
		}
		switch {
		case t.prev == nil:
			r.changedAt = -changedPolls // first poll: nothing is "changed"
		case j < len(t.prev) && t.prev[j].name == name && t.prev[j].fp == r.fp:
			r.changedAt = t.prev[j].changedAt
		default:
			r.changedAt = seq
		}
		next[k] = fpEntry{name: name, fp: r.fp, changedAt: r.changedAt}
	}
	t.prev = next
	t.byName = byName
	t.resort()
	t.applied, t.pending = t.spec(), false
	t.gen++ // an order built for the previous rows no longer applies
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

// rowByName finds a row by resource name (binary search over the name ranks).
func (t *table) rowByName(name string) (int32, bool) {
	k, ok := slices.BinarySearchFunc(t.byName, name, func(idx int32, n string) int {
		return strings.Compare(t.rows[idx].res.Resource, n)
	})
	if !ok {
		return 0, false
	}
	return t.byName[k], true
}

// moveTo puts the cursor on view index i (clamped) and selects that resource.
func (t *table) moveTo(i int) {
	if len(t.view) == 0 {
		t.cursor, t.offset = 0, 0
		return
	}
	t.cursor = max(0, min(i, len(t.view)-1))
	t.selected = t.rows[t.view[t.cursor]].res.Resource
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
	return t.rows[t.view[t.cursor]].res
}

// cell kinds, by agreement with the row's holding value.
const (
	cellSame = iota
	cellOther
	cellAbsent
	cellDown
	cellProjected // an unreachable master's PTTL projected from its last sample
)
