package ui

import (
	"math/bits"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
)

// sortKey is the primary sort key of row i for column c; ties go by resource name
// (the row's index).
func (t *table) sortKey(i int32, c int) int64 {
	r := &t.rows[i]
	switch c {
	case colResource:
		return int64(i)
	case colState:
		return int64(r.sev)
	case colHolders:
		return int64(r.holders)
	case colValidity:
		if r.state() != inspect.StateHeld {
			return -1 // shown as "-": before every lock that has validity left
		}
		return r.validity
	case colSpread:
		return r.spread
	case colToken:
		return r.token
	}
	if mi := c - colMasters; mi >= 0 && mi < len(t.snap.Masters) {
		n := t.src.Node(int(i), mi)
		nd := &n
		switch {
		case nd.Error != "":
			return -3 // down: first, nothing known
		case nd.Seen().NotALock():
			return sortNotALock // shown as its type: after every lock
		case nd.PTTLMs == -1:
			return sortNeverExpires // no-ttl: after every expiring value
		}
		return nd.PTTLMs // -2 absent, else ms left
	}
	return 0
}

// resort rebuilds order for the sort column and direction, then re-filters.
func (t *table) resort() {
	n := len(t.rows)
	order := t.orderSlot(n)
	if t.sortCol == colResource {
		for i := range order {
			order[i] = int32(i) // the rows are in name order
		}
	} else {
		keys := grow(&t.keyBuf, n)
		lo, hi := int64(0), int64(0)
		for i := range t.rows {
			var k int64
			switch t.sortCol {
			case colOwner:
				k = int64(t.ownerRank(i))
			case colLib:
				k = int64(t.rows[i].lib) // locks.LibraryRank
			default:
				k = t.sortKey(int32(i), t.sortCol)
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
				packed[i] = uint64(keys[i]-lo)<<rankBits | uint64(i)
			}
			radixSort(packed, grow(&t.tmpBuf, n), bits.Len64(span)+int(rankBits))
			mask := uint64(1)<<rankBits - 1
			for i, p := range packed {
				order[i] = int32(p & mask)
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
				return int(a - b)
			})
		}
	}
	if t.desc {
		slices.Reverse(t.order)
	}
	t.refilter(false)
}

// ownerRank returns row i's owner position among the distinct owners as shown,
// computed once per snapshot.
func (t *table) ownerRank(i int) int32 {
	if t.ownerRanks == nil {
		set := map[string]int32{}
		for j := range t.rows {
			set[ownerText(&t.rows[j])] = 0
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
			t.ownerRanks[j] = set[ownerText(&t.rows[j])]
		}
	}
	return t.ownerRanks[i]
}

// orderSlot returns a fresh order slice: a command building off the UI path may
// still be reading the current one.
func (t *table) orderSlot(n int) []int32 {
	t.order = make([]int32, n)
	return t.order
}

func (t *table) matches(q inspect.Query, i int32) bool {
	r := &t.rows[i]
	if t.anomaliesOnly && !r.anomalous {
		return false
	}
	lib, state := t.libID(i), r.state()
	lower := func(s string, is bool) string {
		if is {
			return s
		}
		return strings.ToLower(s)
	}
	return q.MatchLower(
		inspect.QueryFields{Resource: r.name, Owner: r.owner, Value: r.value, Library: lib, State: state},
		inspect.QueryFields{Resource: lower(r.name, r.lowerName), Owner: lower(r.owner, r.lowerOwner), Value: lower(r.value, r.lowerValue), Library: lib, State: state})
}

// narrows reports whether filter to only removes rows from what filter from kept: both
// are one plain word (no glob, field or second word), and to contains from.
func narrows(from, to string) bool {
	plain := func(s string) bool { return !strings.ContainsAny(s, "*?[: \t") }
	return from != "" && plain(from) && plain(to) && strings.Contains(strings.ToLower(to), strings.ToLower(from))
}

// refilter rebuilds view from order; narrow means the new filter only removes rows
// from the current view, so the view itself is scanned instead of every row.
func (t *table) refilter(narrow bool) {
	src := t.order
	if narrow {
		src = t.view
	}
	q, err := inspect.ParseQuery(t.filter)
	t.filterErr = err
	switch {
	case err != nil:
		t.view = nil // a filter that does not parse keeps no row; the status line says why
	case t.filter == "" && !t.anomaliesOnly:
		t.view = slices.Clone(t.order) // not in place: see orderSlot
	default:
		out := make([]int32, 0, min(len(src), 1024))
		for _, idx := range src {
			if t.matches(q, idx) {
				out = append(out, idx)
			}
		}
		t.view = out
	}
	t.restoreCursor()
}

// setFilter applies a new filter text, in the query language of inspect.ParseQuery
// (see rebuild for large tables).
func (t *table) setFilter(f string) tea.Cmd {
	f = strings.TrimSpace(f)
	narrow := narrows(t.filter, f)
	t.filter = f
	return t.rebuild(false, narrow)
}

func (t *table) toggleAnomalies() tea.Cmd {
	t.anomaliesOnly = !t.anomaliesOnly
	return t.rebuild(false, t.anomaliesOnly)
}

func (t *table) sortBy(col int) tea.Cmd {
	n := t.nColumns()
	t.sortCol = ((col % n) + n) % n
	t.desc = false
	return t.rebuild(true, false)
}

func (t *table) reverse() tea.Cmd {
	t.desc = !t.desc
	if t.large() {
		return t.rebuild(false, false)
	}
	slices.Reverse(t.order)
	slices.Reverse(t.view)
	t.applied = t.spec()
	t.restoreCursor()
	return nil
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
