package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// DetailKeyMap is the keys of the detail view.
type DetailKeyMap struct {
	Back                                    key.Binding // back to the table
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding // scroll
}

// DefaultDetailKeyMap returns the detail view's keys.
func DefaultDetailKeyMap() DetailKeyMap {
	return DetailKeyMap{
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "bottom")),
	}
}

// ShortHelp is the detail's own keys for the help line.
func (k DetailKeyMap) ShortHelp() []key.Binding { return enabled(k.Back, k.Up, k.Down) }

// FullHelp is every key of the detail.
func (k DetailKeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{enabled(k.Back, k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom)}
}

// historyPerResource bounds the events kept per resource.
const historyPerResource = 20

// historyChunk is how many events one message adds to the history: a poll in which a
// million rows changed is recorded over many messages, none of which holds a
// keystroke up for long.
const historyChunk = 5000

// historyMsg asks the detail pane for the next chunk of pending events to be recorded.
type historyMsg struct{}

// detailPane is the detail view of one resource: every master's value, PTTL and type,
// its library, anomalies, topology, live lifecycles and the history of its changes.
// It owns which resource it shows, whether it is shown, its scroll and the history of
// changes seen across polls (the last historyPerResource per resource, kept while the
// pane is closed); it draws the last poll and the live record from common. While
// shown it has the focus: the Model routes it the keys no global binding takes.
type detailPane struct {
	c             *common
	keys          DetailKeyMap
	shown         bool
	name          string // the resource shown
	scroll        int
	width, height int
	history       map[string][]inspect.Event
	// pending are events of the last polls not recorded in history yet (recordChunk).
	pending []inspect.Event
	stored  stored // the history store's lifecycles of the resource shown (Options.History)
	// storedOn says a history store is configured (Options.History).
	storedOn bool
}

func newDetailPane(c *common) *detailPane {
	return &detailPane{c: c, keys: DefaultDetailKeyMap(), history: map[string][]inspect.Event{}}
}

// open shows the detail of resource, from its top.
func (p *detailPane) open(resource string) { p.shown, p.name, p.scroll = true, resource, 0 }

// SetSize sets the width and the lines the detail is drawn in.
func (p *detailPane) SetSize(width, height int) {
	p.width, p.height = width, max(1, height)
}

// ShortHelp is the help line while the detail has the focus: its keys with the
// console's (common) that act on the resource shown.
func (p *detailPane) ShortHelp() []key.Binding {
	k := p.c.keys
	return enabled(p.keys.Back, k.Help, k.Quit, p.keys.Up, p.keys.Down, k.Extend, k.Release, k.ForceRelease, k.Refresh)
}

// FullHelp is the detail's help, one group.
func (p *detailPane) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

// update scrolls or closes the detail on its keys, and records the history's next
// chunk on historyMsg.
func (p *detailPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case historyMsg:
		return p.recordChunk()
	case tea.KeyPressMsg:
		k := p.keys
		switch {
		case key.Matches(msg, k.Back):
			p.shown = false
			return nil
		case key.Matches(msg, k.Up):
			p.scroll = max(0, p.scroll-1)
		case key.Matches(msg, k.Down):
			p.scroll++
		case key.Matches(msg, k.PageUp):
			p.scroll = max(0, p.scroll-p.height)
		case key.Matches(msg, k.PageDown):
			p.scroll += p.height
		case key.Matches(msg, k.Top):
			p.scroll = 0
		case key.Matches(msg, k.Bottom):
			p.scroll = len(p.all(p.width)) // clamped to the last page below
		}
		p.clampScroll()
	}
	return nil
}

// clampScroll keeps the scroll within the content.
func (p *detailPane) clampScroll() {
	p.scroll = max(0, min(p.scroll, len(p.all(p.width))-p.height))
}

// View renders the lines() of the detail as one block.
func (p *detailPane) View() string { return strings.Join(p.lines(), "\n") }

// lines is the detail's window: its height of lines from the scroll.
func (p *detailPane) lines() []string {
	lines := p.all(p.width)
	scroll := max(0, min(p.scroll, len(lines)-p.height))
	lines = lines[scroll:]
	if len(lines) > p.height {
		lines = lines[:p.height]
	}
	return lines
}

// record adds a poll's events to the history, a chunk now and the rest by historyMsg.
func (p *detailPane) record(events []inspect.Event) tea.Cmd {
	if len(p.pending) == 0 {
		p.pending = events
	} else {
		p.pending = append(p.pending, events...)
	}
	return p.recordChunk()
}

// recordChunk adds a chunk of the pending events to the history, and returns a
// command asking for the next one while some are left.
func (p *detailPane) recordChunk() tea.Cmd {
	n := min(len(p.pending), historyChunk)
	for _, e := range p.pending[:n] {
		h := append(p.history[e.Resource], e)
		if len(h) > historyPerResource {
			h = h[len(h)-historyPerResource:]
		}
		p.history[e.Resource] = h
	}
	if p.pending = p.pending[n:]; len(p.pending) > 0 {
		return func() tea.Msg { return historyMsg{} }
	}
	p.pending = nil
	if len(p.history) > 4*len(p.c.table.rows)+1000 {
		p.pruneHistory()
	}
	return nil
}

// pruneHistory drops the history of resources absent from the current poll.
func (p *detailPane) pruneHistory() {
	for name := range p.history {
		if _, ok := p.c.table.rowByName(name); !ok {
			delete(p.history, name)
		}
	}
}

// all is the whole detail of the pane's resource: every master's full value
// (escaped), PTTL and type; the resource's recent history; its fence token.
func (p *detailPane) all(width int) []string {
	c := p.c
	st := c.styles
	var lines []string
	add := func(s ...string) { lines = append(lines, s...) }
	var r *inspect.Resource
	if idx, ok := c.table.rowByName(p.name); ok {
		r = c.table.resource(idx)
	}
	for _, l := range wrap(clean(p.name), width) {
		add(st.Header.Render(l))
	}
	if r == nil {
		add(st.Warn.Render("not present in the last poll (released or expired)"))
	} else {
		nm := len(c.snap.Masters)
		stateText := st.state(r.State).Render(r.State)
		if r.Uncertain {
			stateText += st.Warn.Render(" (uncertain: unreachable masters could change the verdict)")
		}
		add(fields(width, "key ", quote(r.Key), "state ", stateText)...)
		info := fmt.Sprintf("holders %d/%d (quorum %d)", r.Holders, nm, c.snap.Quorum)
		if r.State == inspect.StateHeld {
			info += fmt.Sprintf("   validity %s   ttl spread %s", fmtMs(r.ValidityMs), fmtMs(r.TTLSpreadMs))
		}
		if r.Token > 0 {
			info += fmt.Sprintf("   fence token %d", r.Token)
		}
		if h := c.held[r.Resource]; h != nil {
			how := "held by this console, kept alive"
			if !h.keepAlive {
				how = "held by this console, not kept alive"
			}
			info += "   " + st.Mark.Render(how)
		}
		add(info)
		add("owner " + clean(r.Owner))
		add(wrapIndent("value ", quote(r.Value), width)...)
		add(p.libraryLines(r, width)...)
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
			name := clean(c.snap.Masters[i].Name)
			_, kind := nodeCell(c.snap, r, i)
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
				val = c.lastSeenText(ls) + ", projected: " + quote(ls.Value)
			} else if kind == cellDown {
				pttl, typ = "", ""
				if val == "" {
					val = "unreachable: " + errText(c.snap.Masters[i].ErrorKind, c.snap.Masters[i].Error)
				}
			}
			prefix := fit(name, 10) + " " + fitRight(pttl, 8) + " " + fit(typ, 8) + " " +
				st.cellStyle(kind).Render(fit(agree, 7)) + " "
			add(wrapIndent(prefix, val, width)...)
		}
	}
	add(p.topologyLines(r, width)...)
	if c.live != nil {
		add("")
		for _, l := range p.liveLines() {
			add(fit(l, width))
		}
	}
	if p.storedOn {
		add(p.storedLines(width)...)
	}
	add("", st.Header.Render("History")+st.Dim.Render(" (changes seen across polls, newest first)"))
	h := p.history[p.name]
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
func (p *detailPane) libraryLines(r *inspect.Resource, width int) []string {
	st := p.c.styles
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
	l, ok := r.Decoded(p.c.snap.TakenAt)
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
func (c *common) lastSeenText(ls *inspect.LastSeen) string {
	ago := max(0, c.now.Sub(ls.At))
	return fmt.Sprintf("last seen on %s, %.1f s ago", clean(ls.Master), ago.Seconds())
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

// liveLines describe the resource's lifecycles from the live record: acquisitions and
// expiries, hold-time percentiles and histogram, the last lifecycles.
func (p *detailPane) liveLines() []string {
	now := p.c.liveAt
	r := p.c.live.res[p.name]
	if r == nil {
		return []string{"Live: no lifecycle seen since the console started"}
	}
	lines := []string{fmt.Sprintf("Live: %d acquired (%s/s), %d expired while held", r.acquired, trimFloat(r.rate(now)), r.expired)}
	if len(r.holds) > 0 {
		lines = append(lines, fmt.Sprintf("  held (last %d): p50 %s  p90 %s  p99 %s  max %s", len(r.holds),
			fmtHoldMs(r.quantile(0.5)), fmtHoldMs(r.quantile(0.9)), fmtHoldMs(r.quantile(0.99)), fmtHoldMs(r.quantile(1))))
		lines = append(lines, histogramLines(r.holds)...)
	}
	if len(r.last) > 0 {
		lines = append(lines, "  last lifecycles:")
		for i := len(r.last) - 1; i >= 0; i-- {
			var sb strings.Builder
			report.WriteEvent(&sb, "table", r.last[i])
			lines = append(lines, "    "+strings.TrimRight(sb.String(), "\n"))
		}
	}
	return lines
}

// histogramLines draws hold times in power-of-4 buckets from 1 ms.
func histogramLines(holds []float64) []string {
	bounds := []float64{1, 4, 16, 64, 256, 1024, 4096, 16384}
	counts := make([]int, len(bounds)+1)
	for _, h := range holds {
		i, _ := slices.BinarySearch(bounds, h)
		counts[i]++
	}
	most := slices.Max(counts)
	var lines []string
	for i, c := range counts {
		if c == 0 {
			continue
		}
		label := "> " + fmtHoldMs(bounds[len(bounds)-1])
		if i < len(bounds) {
			label = "≤ " + fmtHoldMs(bounds[i])
		}
		bar := strings.Repeat("█", max(1, c*30/most))
		lines = append(lines, fmt.Sprintf("    %8s %s %d", label, bar, c))
	}
	return lines
}

// topologyLines is the detail's part about Sentinel groups and clusters: the master a
// group was read at, and every shard of a cluster (address, up, clock, slots,
// findings), marking the one that holds the resource's key.
func (p *detailPane) topologyLines(r *inspect.Resource, width int) []string {
	st := p.c.styles
	var lines []string
	for _, ms := range p.c.snap.Masters {
		switch ms.Via {
		case "sentinel":
			lines = append(lines, "", fit(clean(ms.Name)+" via sentinel "+clean(ms.SentinelMasterName)+": master "+clean(ms.Addr), width))
		case "cluster":
			slot := -1
			if r != nil {
				slot = topology.Slot(r.Key)
			}
			head := clean(ms.Name) + ": cluster of " + strconv.Itoa(len(ms.Shards)) + " shards"
			if slot >= 0 {
				head += fmt.Sprintf(" (key in slot %d)", slot)
			}
			lines = append(lines, "", st.Header.Render(fit(head, width)))
			for _, sh := range ms.Shards {
				mark := "  "
				if slot >= 0 && inSlots(sh.Slots, slot) {
					mark = "> "
				}
				line := mark + fit(clean(sh.Addr), 21) + " "
				if !sh.Up {
					line += st.Crit.Render("down") + " " + clean(sh.Error)
					lines = append(lines, fit(line, width))
					continue
				}
				rate := "?"
				if sh.ClockRatePPM != nil {
					rate = fmt.Sprintf("%+.0fppm", *sh.ClockRatePPM)
				}
				line += st.OK.Render("up  ") + fmt.Sprintf(" %7s %+9.1fms %9s  slots %s", fmt.Sprintf("%.1fms", sh.RTTMs), sh.ClockOffsetMs, rate, clean(sh.Slots))
				for _, f := range sh.Findings {
					b := "[" + clean(f.Code) + "]"
					if f.Severity == inspect.SeverityCrit {
						b = st.Crit.Render(b)
					} else {
						b = st.Warn.Render(b)
					}
					line += " " + b
				}
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// inSlots reports whether slot is in ranges such as "0-5460,10923".
func inSlots(ranges string, slot int) bool {
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}
