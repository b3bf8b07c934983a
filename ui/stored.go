package ui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/history"
)

// HistoryReader reads a resource's recent lifecycles from the history store
// (Options.History). It is called inside a command, with a deadline, never two at
// once; the lifecycles come in the order they were acquired.
type HistoryReader func(ctx context.Context, resource string) (history.Result, error)

// storedTimeout bounds one read of the history store.
const storedTimeout = 10 * time.Second

// storedRefresh is how often the detail view reads its resource's stored history
// again while it is shown (on a poll tick; `r` reads it at once).
const storedRefresh = 5 * time.Second

// storedShown is how many recorded lifecycles the detail view lists, newest first.
const storedShown = 10

// storedMsg is one read of the history store for the detail view.
type storedMsg struct {
	resource string
	at       time.Time // when it was asked
	res      history.Result
	err      error
}

// stored is the detail view's record of its resource's stored history: the last
// read, and whether one is in flight.
type stored struct {
	resource string // the resource read ("": none yet)
	at       time.Time
	res      history.Result
	err      error
	reading  bool
}

// readStored returns a command reading the stored history of the resource the
// detail shows, or nil when there is no store, the detail is closed, a read is in
// flight, or (unless now) the last read is younger than storedRefresh.
func (m *Model) readStored(now bool) tea.Cmd {
	p := m.detail
	s := &p.stored
	if m.storedRead == nil || !p.shown || s.reading {
		return nil
	}
	at := m.clock()
	if !now && s.resource == p.name && at.Sub(s.at) < storedRefresh {
		return nil
	}
	if s.resource != p.name {
		*s = stored{resource: p.name}
	}
	s.reading = true
	read, resource := m.storedRead, p.name
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), storedTimeout)
		defer cancel()
		res, err := read(ctx, resource)
		return storedMsg{resource: resource, at: at, res: res, err: err}
	}
}

// onStored keeps a read of the history store, and reads the resource shown now
// if it is another (opened while the read was in flight).
func (m *Model) onStored(msg storedMsg) tea.Cmd {
	s := &m.detail.stored
	if msg.resource != s.resource {
		return nil // a read from before the last was dropped (see readStored)
	}
	s.reading, s.at, s.res, s.err = false, msg.at, msg.res, msg.err
	return m.readStored(false)
}

// storedLines is the detail's part from the history store: the resource's last
// recorded lifecycles, newest first, and the gaps that may hide others.
func (p *detailPane) storedLines(width int) []string {
	st := p.c.styles
	s := &p.stored
	lines := []string{"", st.Header.Render("Recorded") + st.Dim.Render(" (the history store: last holders, newest first)")}
	switch {
	case s.resource != p.name || s.at.IsZero() && s.err == nil:
		return append(lines, st.Dim.Render("  reading…"))
	case s.err != nil:
		for _, l := range wrapIndent("  ", "history store: "+clean(s.err.Error()), width) {
			lines = append(lines, st.Warn.Render(l))
		}
		return lines
	}
	ls := s.res.Lifecycles
	if len(ls) == 0 {
		lines = append(lines, st.Dim.Render("  no lifecycle recorded"))
	}
	for i := len(ls) - 1; i >= 0 && i >= len(ls)-storedShown; i-- {
		l := &ls[i]
		hold := "-"
		if h := l.HoldMs(); h != nil {
			hold = fmtHoldMs(*h)
		}
		end := l.End
		if end == history.Held {
			end = "held"
		}
		line := fmt.Sprintf("  %s  %-14s %8s  %s", l.AcquiredAt.Local().Format("01-02 15:04:05.000"), end, hold, clean(l.Owner))
		if l.Value != "" {
			line += "  " + quote(l.Value)
		}
		lines = append(lines, fit(line, width))
	}
	if n := len(ls) - storedShown; n > 0 {
		lines = append(lines, st.Dim.Render(fmt.Sprintf("  … %d earlier (redlockctl history %s)", n, clean(p.name))))
	}
	for _, g := range s.res.Gaps {
		to := "now"
		if !g.To.IsZero() {
			to = g.To.Local().Format("01-02 15:04:05")
		}
		text := fmt.Sprintf("%s from %s to %s", g.Kind, g.At.Local().Format("01-02 15:04:05"), to)
		if g.Master != "" {
			text += " on " + g.Master
		}
		for _, l := range wrapIndent("  ! ", clean(text)+": holders there unknown", width) {
			lines = append(lines, st.Warn.Render(l))
		}
	}
	return lines
}
