package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// ActivityKeyMap is the keys of the live activity pane.
type ActivityKeyMap struct {
	Toggle key.Binding // show or hide the pane
}

// DefaultActivityKeyMap returns the activity pane's keys.
func DefaultActivityKeyMap() ActivityKeyMap {
	return ActivityKeyMap{Toggle: key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "live activity"))}
}

// ShortHelp is the pane's part of the help line.
func (k ActivityKeyMap) ShortHelp() []key.Binding { return enabled(k.Toggle) }

// FullHelp is the pane's part of the `?` help.
func (k ActivityKeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// activityPane is the live activity pane under the table: the live feed's last
// events (common.live), filtered as the table is, newest at the bottom. Its own state
// is whether it is shown and the body it shares with the table: it takes a third of
// it, when the body has at least 8 lines. Without a live feed its key is unbound and
// it never shows.
type activityPane struct {
	c     *common
	keys  ActivityKeyMap
	shown bool
	width int
	body  int // the lines of the table and the pane together
}

func newActivityPane(c *common) *activityPane {
	p := &activityPane{c: c, keys: DefaultActivityKeyMap()}
	if c.live == nil {
		p.keys.Toggle.Unbind()
	}
	return p
}

// SetSize sets the width and the lines the pane shares with the table.
func (p *activityPane) SetSize(width, body int) { p.width, p.body = width, body }

// ShortHelp is the pane's keys.
func (p *activityPane) ShortHelp() []key.Binding { return p.keys.ShortHelp() }

// FullHelp is the pane's keys.
func (p *activityPane) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

// update shows or hides the pane on its key; it changes nothing else.
func (p *activityPane) update(msg tea.Msg) tea.Cmd {
	if kp, ok := msg.(tea.KeyPressMsg); ok && key.Matches(kp, p.keys.Toggle) && p.c.live != nil {
		p.shown = !p.shown
	}
	return nil
}

// height is the pane's share of the body: 0 when hidden, without a feed, or when the
// body is under 8 lines.
func (p *activityPane) height() int {
	if !p.shown || p.c.live == nil || p.body < 8 {
		return 0
	}
	return p.body / 3
}

// View renders the pane in height() lines: a title with the feed's status, then the
// live events matching the table's filter.
func (p *activityPane) View() string { return strings.Join(p.lines(), "\n") }

func (p *activityPane) lines() []string {
	height := p.height()
	if height == 0 {
		return nil
	}
	title := p.c.styles.ColTitle.Render(fit(fmt.Sprintf("ACTIVITY (%s; %s hides)", p.c.live.status(), p.keys.Toggle.Help().Key), p.width))
	q, _ := inspect.ParseQuery(p.c.table.filter)
	lines := append([]string{title}, p.events(q, p.width, height-1)...)
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}

// events are the live record's last height events matching q (gaps always), oldest
// first, each cut to width.
func (p *activityPane) events(q inspect.Query, width, height int) []string {
	var out []string
	recent := p.c.live.recent
	for i := len(recent) - 1; i >= 0 && len(out) < height; i-- {
		e := recent[i]
		if !e.Match(q) {
			continue
		}
		var sb strings.Builder
		report.WriteEvent(&sb, "table", e)
		out = append(out, fit(strings.TrimRight(sb.String(), "\n"), width))
	}
	slices.Reverse(out)
	return out
}
