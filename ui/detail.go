package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

// detail renders the detail of m.detailName, scrolled to m.detailScroll.
func (m *Model) detail(width, height int) []string {
	lines := m.detailLines(width)
	scroll := max(0, min(m.detailScroll, len(lines)-height))
	lines = lines[scroll:]
	if len(lines) > height {
		lines = lines[:height]
	}
	return lines
}

// clampDetailScroll keeps the detail's scroll within its content.
func (m *Model) clampDetailScroll() {
	n := len(m.detailLines(m.width))
	m.detailScroll = max(0, min(m.detailScroll, n-m.bodyHeight()))
}

// detailLines is the whole detail of m.detailName: every master's full value
// (escaped), PTTL and type; the resource's recent history; its fence token.
func (m *Model) detailLines(width int) []string {
	st := m.styles
	var lines []string
	add := func(s ...string) { lines = append(lines, s...) }
	var r *inspect.Resource
	if idx, ok := m.table.rowByName(m.detailName); ok {
		r = m.table.resource(idx)
	}
	for _, l := range wrap(clean(m.detailName), width) {
		add(st.Header.Render(l))
	}
	if r == nil {
		add(st.Warn.Render("not present in the last poll (released or expired)"))
	} else {
		nm := len(m.snap.Masters)
		stateText := st.state(r.State).Render(r.State)
		if r.Uncertain {
			stateText += st.Warn.Render(" (uncertain: unreachable masters could change the verdict)")
		}
		add(fields(width, "key ", quote(r.Key), "state ", stateText)...)
		info := fmt.Sprintf("holders %d/%d (quorum %d)", r.Holders, nm, m.snap.Quorum)
		if r.State == inspect.StateHeld {
			info += fmt.Sprintf("   validity %s   ttl spread %s", fmtMs(r.ValidityMs), fmtMs(r.TTLSpreadMs))
		}
		if r.Token > 0 {
			info += fmt.Sprintf("   fence token %d", r.Token)
		}
		if h := m.held[r.Resource]; h != nil {
			how := "held by this console, kept alive"
			if !h.keepAlive {
				how = "held by this console, not kept alive"
			}
			info += "   " + st.Mark.Render(how)
		}
		add(info)
		add("owner " + clean(r.Owner))
		add(wrapIndent("value ", quote(r.Value), width)...)
		add(m.libraryLines(r, width)...)
		for _, a := range r.Anomalies {
			where := ""
			if a.Master != "" {
				where = " on " + clean(a.Master)
			}
			for _, l := range wrapIndent("! ", fmt.Sprintf("%s%s: %s", clean(a.Code), where, clean(a.Message)), width) {
				add(st.Warn.Render(l))
			}
		}
		add("", st.ColTitle.Render(fit("MASTER", 10)+" "+fitRight("PTTL", 8)+" "+fit("TYPE", 8)+" "+fit("AGREES", 7)+" VALUE"))
		for i := 0; i < nm; i++ {
			name := clean(m.snap.Masters[i].Name)
			_, kind := nodeCell(m.snap, r, i)
			agree := map[int]string{cellSame: "same", cellOther: "OTHER", cellAbsent: "absent", cellDown: "down", cellProjected: "seen"}[kind]
			pttl, typ, val := "", "", ""
			if i < len(r.Nodes) {
				n := r.Nodes[i]
				pttl, typ = fmtPTTL(n.PTTLMs), clean(n.Type)
				switch {
				case n.Error != "":
					val = "error: " + errText(n.ErrorKind, n.Error)
				case n.Value != "" || n.PTTLMs >= -1:
					val = quote(n.Value)
				}
			}
			if ls := lastSeenOf(r, i); ls != nil {
				pttl = "≈" + fmtPTTL(ls.ProjectedPTTLMs)
				val = m.lastSeenText(ls) + ", projected: " + quote(ls.Value)
			} else if kind == cellDown {
				pttl, typ = "", ""
				if val == "" {
					val = "unreachable: " + errText(m.snap.Masters[i].ErrorKind, m.snap.Masters[i].Error)
				}
			}
			prefix := fit(name, 10) + " " + fitRight(pttl, 8) + " " + fit(typ, 8) + " " +
				st.cellStyle(kind).Render(fit(agree, 7)) + " "
			add(wrapIndent(prefix, val, width)...)
		}
	}
	add(m.topologyLines(r, width)...)
	if m.live != nil {
		add("")
		for _, l := range m.live.detailLines(m.detailName, m.liveNow()) {
			add(fit(l, width))
		}
	}
	add("", st.Header.Render("History")+st.Dim.Render(" (changes seen across polls, newest first)"))
	h := m.history[m.detailName]
	if len(h) == 0 {
		add(st.Dim.Render("  nothing seen yet"))
	}
	for i := len(h) - 1; i >= 0; i-- {
		e := h[i]
		line := fmt.Sprintf("  %s  %-13s", e.At.Format("15:04:05.000"), clean(e.Kind))
		if e.Value != "" {
			line += " " + quote(e.Value)
		}
		if e.Detail != "" {
			line += "  " + clean(e.Detail)
		}
		add(line)
	}
	return lines
}

// wrapIndent renders prefix+text, wrapping text under itself when too wide.
func wrapIndent(prefix, text string, width int) []string {
	pw := ansi.StringWidth(prefix)
	parts := wrap(text, max(10, width-pw))
	out := make([]string, len(parts))
	for i, p := range parts {
		if i == 0 {
			out[i] = prefix + p
		} else {
			out[i] = strings.Repeat(" ", pw) + p
		}
	}
	return out
}

// libraryLines shows whose lock the row is and, for another library's lock, what its
// decoder read: holder fields, a fair lock's waiters in queue order, companion keys,
// how the holder renews it and how redlockctl would release it.
func (m *Model) libraryLines(r *inspect.Resource, width int) []string {
	st := m.styles
	if r.Library == "" {
		return nil
	}
	lib := r.Library
	if r.Kind != "" {
		lib += " " + r.Kind
	}
	out := wrapIndent("library ", clean(lib+": "+r.LibraryEvidence), width)
	if sc := ScopeText(r); sc != "" {
		out = append(out, wrapIndent("scope   ", clean(sc), width)...)
	}
	if r.Library == locks.Redlockctl {
		return out
	}
	l, ok := r.Decoded(m.snap.TakenAt)
	if !ok {
		return out
	}
	for _, f := range l.Fields {
		out = append(out, wrapIndent("  "+clean(f.Name)+": ", clean(f.Value), width)...)
	}
	for _, c := range l.Companions {
		out = append(out, wrapIndent("  "+clean(c.Role)+": ", quote(c.Key), width)...)
	}
	if l.Renewal != "" {
		out = append(out, wrapIndent("renewal ", clean(l.Renewal), width)...)
	}
	if l.Release.Unsupported != "" {
		out = append(out, wrapIndent("release ", "not by redlockctl: "+clean(l.Release.Unsupported), width)...)
	} else if l.Release.Protocol != "" {
		out = append(out, wrapIndent("release ", clean(l.Release.Protocol+": "+l.Release.Summary), width)...)
	}
	if l.Recreates != "" {
		for _, s := range wrapIndent("! ", clean(l.Recreates)+": a force-release lasts only while its holder is stopped", width) {
			out = append(out, st.Warn.Render(s))
		}
	}
	return out
}

// lastSeenOf is the LastSeen of r's node i (nil if none).
func lastSeenOf(r *inspect.Resource, i int) *inspect.LastSeen {
	if i < len(r.Nodes) {
		return r.Nodes[i].LastSeen
	}
	return nil
}

// lastSeenText says where and when an unreachable master last held a value:
// "last seen on m3, 4.2 s ago".
func (m *Model) lastSeenText(ls *inspect.LastSeen) string {
	ago := max(0, m.now.Sub(ls.At))
	return fmt.Sprintf("last seen on %s, %.1f s ago", clean(ls.Master), ago.Seconds())
}

// rowLastSeen is the last-seen text of a row with nodes carried from unreachable
// masters ("" for a row without), for the status line.
func (m *Model) rowLastSeen(r *inspect.Resource) string {
	if r == nil {
		return ""
	}
	for i := range r.Nodes {
		if ls := r.Nodes[i].LastSeen; ls != nil {
			return "? " + clean(r.Resource) + ": " + m.lastSeenText(ls) + ", pttl ≈" + fmtPTTL(ls.ProjectedPTTLMs) + " projected"
		}
	}
	return ""
}

// ScopeText says how a row is judged when it is not by the Redlock quorum:
// "single-instance on m3" (or on several masters, each its own lock), and a
// semaphore's permits ("held 3/5 permits", "held 1 permits, 2 available"); "" for a
// Redlock-scope lock.
func ScopeText(r *inspect.Resource) string {
	var parts []string
	if r.Scope == locks.ScopeSingle && len(r.Instances) > 0 {
		parts = append(parts, "single-instance on "+strings.Join(r.Instances, ","))
	}
	if r.State == inspect.StateSemaphore {
		p := fmt.Sprintf("held %d permits", r.Permits)
		if r.PermitLimit > 0 {
			p = fmt.Sprintf("held %d/%d permits", r.Permits, r.PermitLimit)
		}
		if r.AvailablePermits != nil {
			p += fmt.Sprintf(", %d available", *r.AvailablePermits)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}
