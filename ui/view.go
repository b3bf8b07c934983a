package ui

import (
	"fmt"
	"strings"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/crashtest"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// fixedLines are the header, status and help lines.
const fixedLines = 3

// minTable is the fewest lines the table keeps before the masters panel shrinks to
// its summary line.
const minTable = 6

// resize gives each pane its size for the terminal's: the masters panel what leaves
// the table minTable lines, the table and the activity pane what the panel leaves,
// the detail the body.
func (m *Model) resize() {
	m.help.SetWidth(m.width)
	m.filterInput.setWidth(max(10, m.width-20))
	m.masters.SetSize(m.width, m.height-fixedLines-minTable)
	tableH := m.tableHeight(len(m.masters.lines()))
	m.activity.SetSize(m.width, tableH)
	m.table.setHeight(tableH - m.activity.height() - 1)
	m.detail.SetSize(m.width, m.bodyHeight())
}

// tableHeight is the height of the table and the activity pane (the table's title
// included): what a masters panel of panelLines leaves.
func (m *Model) tableHeight(panelLines int) int {
	return max(2, m.height-fixedLines-panelLines)
}

// bodyHeight is the height below the header and above the status line.
func (m *Model) bodyHeight() int { return max(1, m.height-fixedLines) }

// View renders the console at its size: exactly height lines, none wider than width.
func (m *Model) View() tea.View {
	crashtest.Point("view")
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeNone
	v.WindowTitle = "redlockctl: " + clean(m.cfg.Name)
	return v
}

// render returns the console's screen as a string.
func (m *Model) render() string {
	m.liveAt = m.liveNow()
	lines := make([]string, 0, m.height)
	lines = append(lines, m.header())
	var helpLine string
	switch {
	case m.dialog != nil:
		body := m.dialog.view(&m.common, m.width)
		lines = append(lines, placeCenter(body, m.width, m.bodyHeight())...)
		helpLine = m.help.ShortHelpView(m.dialog.keys(&m.common))
	case m.showHelp:
		lines = append(lines, m.fullHelp(m.width, m.bodyHeight())...)
		helpLine = m.styles.Dim.Render("any key: close help")
	case m.detail.shown:
		lines = append(lines, m.detail.lines()...)
		helpLine = m.help.ShortHelpView(m.ShortHelp())
	default:
		panel := m.masters.lines()
		lines = append(lines, panel...)
		m.table.live, m.table.liveNow = m.live, m.liveNow()
		tableH := m.tableHeight(len(panel))
		lines = append(lines, m.table.render(m.styles, m.width, tableH-m.activity.height())...)
		lines = append(lines, m.activity.lines()...)
		helpLine = m.help.ShortHelpView(m.ShortHelp())
	}
	lines = append(lines, m.statusLine(), helpLine)
	if len(lines) > m.height {
		// Keep the header, the status and help lines; cut the body.
		lines = append(lines[:m.height-2], lines[len(lines)-2:]...)
	}
	if n := m.height - len(lines); n > 0 {
		tail := []string{lines[len(lines)-2], lines[len(lines)-1]}
		lines = append(append(lines[:len(lines)-2], make([]string, n)...), tail...)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > m.width {
			lines[i] = ansi.Truncate(l, m.width, "…")
		}
	}
	return strings.Join(lines, "\n")
}

// statusLine shows the filter, sort, row position and the last message.
func (m *Model) statusLine() string {
	t := m.table
	if m.filtering {
		line := m.filterInput.View() + m.styles.Dim.Render(fmt.Sprintf("  %d/%d of %d", min(t.cursor+1, len(t.view)), len(t.view), len(t.rows)))
		if t.filterErr != nil {
			line += "  " + m.styles.Crit.Render("filter: "+clean(t.filterErr.Error()))
		}
		if t.pending {
			line += m.styles.Dim.Render(" · sorting…")
		}
		return line
	}
	var parts []string
	if t.snap != nil {
		col := colNames[min(t.sortCol, colMasters-1)]
		if t.sortCol >= colMasters && t.sortCol-colMasters < len(t.snap.Masters) {
			col = "PTTL " + clean(t.snap.Masters[t.sortCol-colMasters].Name)
		}
		dir := "↑"
		if t.desc {
			dir = "↓"
		}
		pos := 0
		if len(t.view) > 0 {
			pos = t.cursor + 1
		}
		parts = append(parts, fmt.Sprintf("%d/%d", pos, len(t.view)))
		if len(t.view) != len(t.rows) {
			parts[0] += fmt.Sprintf(" of %d", len(t.rows))
		}
		parts = append(parts, "sort "+col+dir)
		if t.pending {
			parts = append(parts, "sorting…")
		}
	}
	if t.filter != "" {
		parts = append(parts, "filter "+quote(m.filterInput.Value()))
		if t.filterErr != nil {
			parts = append(parts, "filter: "+clean(t.filterErr.Error()))
		}
	}
	if t.anomaliesOnly {
		parts = append(parts, "anomalies only")
	}
	if n := len(m.held); n > 0 {
		parts = append(parts, fmt.Sprintf("holding %d", n))
	}
	if ls := m.rowLastSeen(t.current()); ls != "" {
		parts = append(parts, ls)
	}
	line := m.styles.Dim.Render(strings.Join(parts, " · "))
	if m.status != "" {
		st := m.styles.OK
		if m.statErr {
			st = m.styles.Crit
		}
		line += "  " + st.Render(m.status)
	}
	return line
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
