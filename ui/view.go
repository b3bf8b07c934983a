package ui

import (
	"fmt"
	"strings"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/crashtest"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// resize recomputes the table height for the terminal size.
func (m *Model) resize() {
	m.help.SetWidth(m.width)
	m.filterInput.setWidth(max(10, m.width-20))
	_, tableH := m.bodyLayout()
	m.table.setHeight(tableH - m.paneHeight(tableH) - 1)
}

// bodyLayout returns the masters panel lines and the table height (title included).
func (m *Model) bodyLayout() ([]string, int) {
	fixed := 3 // header, status, help
	panel := m.mastersPanel(m.width)
	if m.height-fixed-len(panel) < 6 {
		panel = []string{m.summaryLine()}
		if m.snap == nil {
			panel = nil
		}
	}
	return panel, max(2, m.height-fixed-len(panel))
}

// bodyHeight is the height below the header and above the status line.
func (m *Model) bodyHeight() int { return max(1, m.height-3) }

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
	case m.mode == modeDetail:
		lines = append(lines, m.detail(m.width, m.bodyHeight())...)
		helpLine = m.help.ShortHelpView(detailKeys(m.keys).ShortHelp())
	default:
		panel, tableH := m.bodyLayout()
		lines = append(lines, panel...)
		m.table.live, m.table.liveNow = m.live, m.liveNow()
		paneH := m.paneHeight(tableH)
		lines = append(lines, m.table.render(m.styles, m.width, tableH-paneH)...)
		if paneH > 0 {
			lines = append(lines, m.activityPane(paneH)...)
		}
		helpLine = m.help.ShortHelpView(m.keys.ShortHelp())
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

// paneHeight is the activity pane's share of the table's height (0 when hidden).
func (m *Model) paneHeight(tableH int) int {
	if !m.showPane || m.live == nil || tableH < 8 {
		return 0
	}
	return tableH / 3
}

// activityPane renders the live events (filtered as the table is) in height lines.
func (m *Model) activityPane(height int) []string {
	title := m.styles.ColTitle.Render(fit(fmt.Sprintf("ACTIVITY (%s; L hides)", m.live.status()), m.width))
	q, _ := inspect.ParseQuery(m.table.filter)
	lines := append([]string{title}, m.live.paneLines(q, m.width, height-1)...)
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}
