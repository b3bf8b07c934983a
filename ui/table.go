package ui

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"

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
	colMasters
)

var colNames = [...]string{"RESOURCE", "STATE", "OWNER", "HOLD", "VALIDITY", "SPREAD", "TOKEN"}

// changedPolls is how many polls a changed row stays marked.
const changedPolls = 3

// row is one resource of the current snapshot with what the table needs precomputed.
type row struct {
	res       *inspect.Resource
	name      string // display form (escaped)
	owner     string // display form (escaped); the quoted value when no owner was parsed
	lname     string // lower-case, for the filter
	lowner    string
	lvalue    string // escaped value, lower-case, for the filter
	rank      int32  // position in resource-name order
	sev       int8   // state severity, for sorting by state
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
	filter        string // lower-case
	anomaliesOnly bool

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
}

func newTable() *table {
	return &table{seed: maphash.MakeSeed(), height: 10, mine: map[string]string{}}
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
	if cap(t.rows) >= n {
		t.rows = t.rows[:n]
	} else {
		t.rows = make([]row, n)
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		name := clean(r.Resource)
		owner := clean(r.Owner)
		if r.Owner == "" && r.Value != "" {
			owner = quote(r.Value) // a value another library wrote: no owner to parse
		}
		t.rows[i] = row{
			res: r, name: name, owner: owner,
			lname: strings.ToLower(name), lowner: strings.ToLower(owner), lvalue: strings.ToLower(clean(r.Value)),
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
}

func (t *table) cmpName(a, b int32) int {
	return strings.Compare(t.rows[a].res.Resource, t.rows[b].res.Resource)
}

// nColumns is the number of sortable columns for the current masters.
func (t *table) nColumns() int {
	n := colMasters
	if t.snap != nil {
		n += len(t.snap.Masters)
	}
	return n
}

// sortKey is the primary sort key of row r for column c; ties go by resource name.
func (t *table) sortKey(r *row, c int) int64 {
	switch c {
	case colResource:
		return int64(r.rank)
	case colState:
		return int64(r.sev)
	case colHolders:
		return int64(r.res.Holders)
	case colValidity:
		if r.res.State != inspect.StateHeld {
			return -1 // shown as "-": before every lock that has validity left
		}
		return r.res.ValidityMs
	case colSpread:
		return r.res.TTLSpreadMs
	case colToken:
		return r.res.Token
	}
	i := c - colMasters
	if i >= 0 && i < len(r.res.Nodes) {
		nd := &r.res.Nodes[i]
		switch {
		case nd.Error != "":
			return -3 // down: first, nothing known
		case nd.Type != "" && nd.Type != inspect.TypeString && nd.Type != inspect.TypeNone:
			return sortNotALock // shown as its type: after every lock
		case nd.PTTLMs == -1:
			return sortNeverExpires // no-ttl: after every expiring value
		}
		return nd.PTTLMs // -2 absent, else ms left
	}
	return 0
}

// Sort keys of master cells that show no PTTL, placed after every real one; small
// enough that the packed radix sort still applies (41 bits of key).
const (
	sortNeverExpires = int64(1) << 40
	sortNotALock     = sortNeverExpires + 1
)

// resort rebuilds order for the sort column and direction, then re-filters.
func (t *table) resort() {
	n := len(t.rows)
	order := t.orderSlot(n)
	if t.sortCol == colResource {
		copy(order, t.byName) // the name order is the order
	} else {
		keys := grow(&t.keyBuf, n)
		lo, hi := int64(0), int64(0)
		for i := range t.rows {
			r := &t.rows[i]
			var k int64
			if t.sortCol == colOwner {
				k = int64(t.ownerRank(i))
			} else {
				k = t.sortKey(r, t.sortCol)
			}
			keys[i] = k
			if i == 0 || k < lo {
				lo = k
			}
			if i == 0 || k > hi {
				hi = k
			}
		}
		// Pack (key, name rank) into one uint64 when the key range allows: a plain
		// integer sort is several times faster than a comparator on 100k rows.
		rankBits := uint(bits.Len(uint(n)))
		if span := uint64(hi - lo); hi >= lo && bits.Len64(span)+int(rankBits) <= 64 {
			packed := grow(&t.packBuf, n)
			for i := range t.rows {
				packed[i] = uint64(keys[i]-lo)<<rankBits | uint64(t.rows[i].rank)
			}
			radixSort(packed, grow(&t.tmpBuf, n), bits.Len64(span)+int(rankBits))
			mask := uint64(1)<<rankBits - 1
			for i, p := range packed {
				order[i] = t.byName[p&mask]
			}
		} else {
			for i := range order {
				order[i] = int32(i)
			}
			slices.SortFunc(order, func(a, b int32) int {
				if keys[a] != keys[b] {
					if keys[a] < keys[b] {
						return -1
					}
					return 1
				}
				return int(t.rows[a].rank - t.rows[b].rank)
			})
		}
	}
	if t.desc {
		slices.Reverse(t.order)
	}
	t.refilter(false)
}

// ownerRank returns row i's owner position among the distinct owners, computed once
// per snapshot.
func (t *table) ownerRank(i int) int32 {
	if t.ownerRanks == nil {
		set := map[string]int32{}
		for j := range t.rows {
			set[t.rows[j].owner] = 0
		}
		names := make([]string, 0, len(set))
		for s := range set {
			names = append(names, s)
		}
		slices.Sort(names)
		for k, s := range names {
			set[s] = int32(k)
		}
		t.ownerRanks = make([]int32, len(t.rows))
		for j := range t.rows {
			t.ownerRanks[j] = set[t.rows[j].owner]
		}
	}
	return t.ownerRanks[i]
}

func (t *table) orderSlot(n int) []int32 {
	if cap(t.order) < n {
		t.order = make([]int32, n)
	}
	t.order = t.order[:n]
	return t.order
}

func (t *table) matches(r *row) bool {
	if t.anomaliesOnly && !r.anomalous {
		return false
	}
	if t.filter == "" {
		return true
	}
	return strings.Contains(r.lname, t.filter) || strings.Contains(r.lowner, t.filter) ||
		strings.Contains(r.lvalue, t.filter) || strings.Contains(r.res.State, t.filter)
}

// refilter rebuilds view from order; narrow means the new filter only removes rows
// from the current view, so the view itself is scanned instead of every row.
func (t *table) refilter(narrow bool) {
	src := t.order
	if narrow {
		src = t.view
	}
	if t.filter == "" && !t.anomaliesOnly {
		t.view = append(t.view[:0], t.order...)
	} else {
		out := make([]int32, 0, min(len(src), 1024))
		for _, idx := range src {
			if t.matches(&t.rows[idx]) {
				out = append(out, idx)
			}
		}
		t.view = out
	}
	t.restoreCursor()
}

// setFilter applies a new filter text.
func (t *table) setFilter(f string) {
	f = strings.ToLower(f)
	narrow := t.filter != "" && strings.Contains(f, t.filter)
	t.filter = f
	t.refilter(narrow)
}

func (t *table) toggleAnomalies() {
	t.anomaliesOnly = !t.anomaliesOnly
	t.refilter(t.anomaliesOnly)
}

func (t *table) sortBy(col int) {
	n := t.nColumns()
	t.sortCol = ((col % n) + n) % n
	t.desc = false
	t.resort()
}

func (t *table) reverse() {
	t.desc = !t.desc
	slices.Reverse(t.order)
	slices.Reverse(t.view)
	t.restoreCursor()
}

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

// layout is the widths of the table's columns for one terminal width.
type layout struct {
	resource, state, owner, holders, validity, spread, token, cell int
	masters                                                        int
}

func (t *table) layout(width int) layout {
	nm := 0
	if t.snap != nil {
		nm = len(t.snap.Masters)
	}
	l := layout{state: 7, holders: 4, validity: 8, cell: 7, masters: nm}
	// mark(3) + separators: one space before each column after mark.
	used := func() int {
		w := 3 + 1 + l.resource + 1 + l.state + 1 + l.holders + 1 + l.validity + nm*(1+l.cell)
		for _, c := range []int{l.owner, l.spread, l.token} {
			if c > 0 {
				w += 1 + c
			}
		}
		return w
	}
	const minRes = 12
	if width-used() < 24 {
		l.cell = 6
	}
	for _, add := range []struct {
		w   *int
		n   int
		min int
	}{{&l.owner, 14, 18}, {&l.spread, 7, 12}, {&l.token, 6, 12}} {
		*add.w = add.n
		if width-used() < add.min+4 {
			*add.w = 0
		}
	}
	l.resource = max(minRes, width-used())
	if l.owner > 0 && l.resource > 40 {
		grow := min(l.resource-40, 10)
		l.owner += grow
		l.resource -= grow
	}
	return l
}

// title renders the header row.
func (t *table) title(st Styles, l layout) string {
	h := func(c int, name string, w int, right bool) string {
		if c == t.sortCol {
			if t.desc {
				name += "↓"
			} else {
				name += "↑"
			}
		}
		if right {
			return fitRight(name, w)
		}
		return fit(name, w)
	}
	var b strings.Builder
	b.WriteString("   ")
	b.WriteString(" " + h(colResource, colNames[colResource], l.resource, false))
	b.WriteString(" " + h(colState, colNames[colState], l.state, false))
	if l.owner > 0 {
		b.WriteString(" " + h(colOwner, colNames[colOwner], l.owner, false))
	}
	b.WriteString(" " + h(colHolders, colNames[colHolders], l.holders, true))
	b.WriteString(" " + h(colValidity, colNames[colValidity], l.validity, true))
	if l.spread > 0 {
		b.WriteString(" " + h(colSpread, colNames[colSpread], l.spread, true))
	}
	if l.token > 0 {
		b.WriteString(" " + h(colToken, colNames[colToken], l.token, true))
	}
	if t.snap != nil {
		for i, m := range t.snap.Masters {
			b.WriteString(" " + h(colMasters+i, clean(m.Name), l.cell, true))
		}
	}
	return st.ColTitle.Render(b.String())
}

// cell kinds, by agreement with the row's holding value.
const (
	cellSame = iota
	cellOther
	cellAbsent
	cellDown
)

// nodeCell returns the text and kind of master i's cell for r.
func nodeCell(s *inspect.Snapshot, r *inspect.Resource, i int) (string, int) {
	if i < len(s.Masters) && !s.Masters[i].Up {
		return "down", cellDown
	}
	if i >= len(r.Nodes) {
		return "?", cellDown
	}
	n := &r.Nodes[i]
	switch {
	case n.Error != "":
		return "err", cellDown
	case n.Type != "" && n.Type != "string" && n.Type != "none":
		return clean(n.Type), cellOther
	case n.PTTLMs == -2 || (n.Value == "" && n.PTTLMs < -1):
		return "-", cellAbsent
	case n.Value == r.Value:
		return fmtPTTL(n.PTTLMs), cellSame
	default:
		return "~" + fmtPTTL(n.PTTLMs), cellOther
	}
}

func (st Styles) cellStyle(kind int) lipgloss.Style {
	switch kind {
	case cellSame:
		return st.CellSame
	case cellOther:
		return st.CellOther
	case cellAbsent:
		return st.CellAbsent
	}
	return st.CellDown
}

// renderRow renders row r; the cursor row is rendered plain then reversed, so that
// it reads the same without colour.
func (t *table) renderRow(st Styles, l layout, r *row, selected bool) string {
	res := r.res
	style := func(s lipgloss.Style, text string) string {
		if selected {
			return text
		}
		return s.Render(text)
	}
	mark := [3]byte{' ', ' ', ' '}
	if selected {
		mark[0] = '>'
	}
	if t.seq-r.changedAt < changedPolls {
		mark[1] = '+'
	}
	switch {
	case t.mine[res.Resource] != "":
		mark[2] = '*'
	case r.anomalous:
		mark[2] = '!'
	case res.Uncertain:
		mark[2] = '?'
	}
	var b strings.Builder
	b.WriteString(style(st.Mark, string(mark[:])))
	b.WriteString(" " + fit(r.name, l.resource))
	b.WriteString(" " + style(st.state(res.State), fit(res.State, l.state)))
	if l.owner > 0 {
		b.WriteString(" " + fit(r.owner, l.owner))
	}
	nm := len(t.snap.Masters)
	b.WriteString(" " + fitRight(strconv.Itoa(res.Holders)+"/"+strconv.Itoa(nm), l.holders))
	validity, spread, token := "-", "-", "-"
	if res.State == inspect.StateHeld {
		validity = fmtMs(res.ValidityMs)
		if res.ValidityMs <= 0 {
			validity = "expired"
		}
		spread = fmtMs(res.TTLSpreadMs)
	}
	if res.Token > 0 {
		token = strconv.FormatInt(res.Token, 10)
	}
	b.WriteString(" " + fitRight(validity, l.validity))
	if l.spread > 0 {
		b.WriteString(" " + fitRight(spread, l.spread))
	}
	if l.token > 0 {
		b.WriteString(" " + fitRight(token, l.token))
	}
	for i := 0; i < nm; i++ {
		text, kind := nodeCell(t.snap, res, i)
		b.WriteString(" " + style(st.cellStyle(kind), fitRight(text, l.cell)))
	}
	line := b.String()
	if selected {
		return st.Selected.Render(line)
	}
	return line
}

// render returns exactly height lines (title first) for the given width.
func (t *table) render(st Styles, width, height int) []string {
	l := t.layout(width)
	lines := make([]string, 0, height)
	lines = append(lines, t.title(st, l))
	if len(t.view) == 0 {
		msg := "no resources"
		switch {
		case t.snap == nil:
			msg = "waiting for the first poll…"
		case t.filter != "" || t.anomaliesOnly:
			msg = "no resource matches the filter"
		}
		lines = append(lines, st.Dim.Render("   "+msg))
	}
	end := min(len(t.view), t.offset+height-1)
	for i := t.offset; i < end; i++ {
		lines = append(lines, t.renderRow(st, l, &t.rows[t.view[i]], i == t.cursor))
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}

// grow returns (*buf)[:n], reallocating only when too small.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// radixSort sorts a in place by its low nbits bits (LSD, 11-bit digits so the counts
// stay in L1), using tmp (same length) as scratch. Linear time.
func radixSort(a, tmp []uint64, nbits int) {
	const digit = 11
	const mask = 1<<digit - 1
	var count [1 << digit]int
	src, dst := a, tmp
	for shift := 0; shift < nbits; shift += digit {
		clear(count[:])
		for _, v := range src {
			count[(v>>shift)&mask]++
		}
		if count[(src[0]>>shift)&mask] == len(src) {
			continue // every value has this digit: nothing to do
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, v := range src {
			d := (v >> shift) & mask
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}
