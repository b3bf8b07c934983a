package ui

import (
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

// layout is the widths of the table's columns for one terminal width.
type layout struct {
	resource, state, owner, holders, validity, spread, token, lib, cell int
	masters                                                             int
	live                                                                int // the LIVE column (0: hidden)
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
		for _, c := range []int{l.owner, l.spread, l.token, l.lib, l.live} {
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
	}{{&l.owner, 14, 18}, {&l.spread, 7, 12}, {&l.token, 6, 12}, {&l.lib, 12, 12}} {
		*add.w = add.n
		if width-used() < add.min+4 {
			*add.w = 0
		}
	}
	if t.live != nil {
		// acquisitions/s, hold p99, expiries: "12/s 4.1ms ✗3"
		if l.live = 16; width-used() < minRes {
			l.live = 0
		}
	}
	l.resource = max(minRes, width-used())
	// Single-instance rows name their master in LIB ("redis-py? single-instance on
	// m3"): the column widens for them first, down to a resource column of 28.
	if l.lib > 0 && l.resource > 28 && t.snap != nil && t.snap.Summary.SingleSummary != (inspect.SingleSummary{}) {
		grow := min(l.resource-28, len(" single-instance on m3"))
		l.lib += grow
		l.resource -= grow
	}
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
	if l.lib > 0 {
		b.WriteString(" " + h(colLib, colNames[colLib], l.lib, false))
	}
	if l.live > 0 {
		b.WriteString(" " + fit("LIVE /s p99", l.live))
	}
	if t.snap != nil {
		for i, m := range t.snap.Masters {
			b.WriteString(" " + h(colMasters+i, clean(m.Name), l.cell, true))
		}
	}
	return st.ColTitle.Render(b.String())
}

// nodeCell returns the text and kind of master i's cell for r.
func nodeCell(s *inspect.Snapshot, r *inspect.Resource, i int) (string, int) {
	if i < len(r.Nodes) && r.Nodes[i].LastSeen != nil {
		return "≈" + fmtPTTL(r.Nodes[i].LastSeen.ProjectedPTTLMs), cellProjected
	}
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
	case n.Seen().NotALock():
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
	case cellProjected:
		return st.CellProjected
	}
	return st.CellDown
}

// ownerText is r's OWNER cell: its owner, or its quoted value when no owner was
// parsed (a value another library wrote).
func ownerText(r *row) string {
	if r.owner == "" && r.value != "" {
		return quote(r.value)
	}
	return clean(r.owner)
}

// renderRow renders row i; the cursor row is rendered plain then reversed, so that
// it reads the same without colour.
func (t *table) renderRow(st Styles, l layout, i int32, selected bool) string {
	r, res := &t.rows[i], t.resource(i)
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
	if t.seq-int(r.changedAt) < changedPolls {
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
	b.WriteString(" " + fit(clean(r.name), l.resource))
	b.WriteString(" " + style(st.state(res.State), fit(res.State, l.state)))
	if l.owner > 0 {
		b.WriteString(" " + fit(ownerText(r), l.owner))
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
	timeStyle := func(text string) string { return text } // validity and PTTLs count down
	if t.stale {
		timeStyle = func(text string) string { return style(st.Stale, text) }
	}
	b.WriteString(" " + timeStyle(fitRight(validity, l.validity)))
	if l.spread > 0 {
		b.WriteString(" " + fitRight(spread, l.spread))
	}
	if l.token > 0 {
		b.WriteString(" " + fitRight(token, l.token))
	}
	if l.lib > 0 {
		b.WriteString(" " + fit(libText(res), l.lib))
	}
	if l.live > 0 {
		text, expired := t.live.cell(res.Resource, t.liveNow)
		if expired {
			b.WriteString(" " + style(st.Crit, fit(text, l.live)))
		} else {
			b.WriteString(" " + fit(text, l.live))
		}
	}
	for i := 0; i < nm; i++ {
		text, kind := nodeCell(t.snap, res, i)
		if t.stale && kind != cellDown && kind != cellAbsent {
			b.WriteString(" " + timeStyle(fitRight(text, l.cell)))
			continue
		}
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
		lines = append(lines, t.renderRow(st, l, t.view[i], i == t.cursor))
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}

// libText is a row's LIB cell: its library, and for a single-instance lock the
// master(s) it is judged on ("redis-py? single-instance on m3").
func libText(res *inspect.Resource) string {
	text := clean(res.Library)
	if res.Scope == locks.ScopeSingle && len(res.Instances) > 0 {
		text = strings.TrimSpace(text + " single-instance on " + clean(strings.Join(res.Instances, ",")))
	}
	return text
}
