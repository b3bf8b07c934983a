package ui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
)

func (m *Model) onSnapshot(st *inspect.Stream, built *table) tea.Cmd {
	m.polling = false
	m.now = m.clock()
	if st == nil {
		m.setStatus("poll returned nothing", true)
		return nil
	}
	m.seq++
	m.snap = st.Snapshot
	m.forgetExpired()
	m.table.mine = m.mineMap()
	order := m.table.adoptSnapshot(st, m.seq, built)
	if len(m.pendingEvents) == 0 {
		m.pendingEvents = m.table.events
	} else {
		m.pendingEvents = append(m.pendingEvents, m.table.events...)
	}
	m.table.events = nil
	record := m.recordHistory()
	m.resize() // the masters panel may have grown or shrunk
	if m.pendingRefresh {
		m.pendingRefresh = false
		return tea.Batch(order, record, m.startPoll())
	}
	return tea.Batch(order, record)
}

// historyChunk is how many events one message adds to the history: a poll in which a
// million rows changed is recorded over many messages, none of which holds a
// keystroke up for long.
const historyChunk = 5000

// historyMsg asks for the next chunk of pending events to be recorded.
type historyMsg struct{}

// recordHistory adds a chunk of the pending events to the history, and returns a
// command asking for the next one while some are left.
func (m *Model) recordHistory() tea.Cmd {
	n := min(len(m.pendingEvents), historyChunk)
	for _, e := range m.pendingEvents[:n] {
		h := append(m.history[e.Resource], e)
		if len(h) > historyPerResource {
			h = h[len(h)-historyPerResource:]
		}
		m.history[e.Resource] = h
	}
	if m.pendingEvents = m.pendingEvents[n:]; len(m.pendingEvents) > 0 {
		return func() tea.Msg { return historyMsg{} }
	}
	m.pendingEvents = nil
	if len(m.history) > 4*len(m.table.rows)+1000 {
		m.pruneHistory()
	}
	return nil
}

// pruneHistory drops the history of resources absent from the current snapshot.
func (m *Model) pruneHistory() {
	for name := range m.history {
		if _, ok := m.table.rowByName(name); !ok {
			delete(m.history, name)
		}
	}
}

// forgetExpired drops the locks acquired without keep-alive whose validity has passed.
func (m *Model) forgetExpired() {
	now := m.clock()
	for r, h := range m.held {
		if !h.keepAlive && !now.Before(h.expires) {
			delete(m.held, r)
		}
	}
	m.table.mine = m.mineMap()
}

func (m *Model) mineMap() map[string]string {
	out := make(map[string]string, len(m.held))
	for r, h := range m.held {
		out[r] = h.value
	}
	return out
}

// refresh polls now, or right after the poll in flight.
func (m *Model) refresh() tea.Cmd {
	if m.polling {
		m.pendingRefresh = true
		return nil
	}
	return m.startPoll()
}

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statErr = s, isErr
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		if _, asking := m.dialog.(*quitDialog); !asking {
			m.dialog = nil // ctrl+c quits from anywhere (asking first when holding locks)
			m.filtering = false
			return m.quit()
		}
	}
	if m.dialog != nil {
		return m.dialog.update(&m.common, msg)
	}
	if m.filtering {
		switch msg.String() {
		case "enter":
			m.filtering = false
			m.filterInput.Blur()
			return nil
		case "esc":
			m.filtering = false
			m.filterInput.SetValue("")
			m.filterInput.Blur()
			return m.table.setFilter("")
		}
		m.filterInput.Update(msg)
		return m.table.setFilter(m.filterInput.Value())
	}
	if m.showHelp {
		m.showHelp = false
		if key.Matches(msg, m.keys.Quit) {
			return m.quit()
		}
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp = true
		return nil
	case key.Matches(msg, k.Pause):
		m.paused = !m.paused
		m.table.stale = m.paused
		if m.paused {
			m.pausedAt = m.now
			m.setStatus("polling paused", false)
		} else {
			m.setStatus("polling resumed", false)
			if m.live != nil {
				m.resumeLive()
			}
			return m.refresh()
		}
		return nil
	case key.Matches(msg, k.Refresh):
		return m.refresh()
	case key.Matches(msg, k.Acquire):
		name := ""
		if r := m.focused(); r != nil {
			name = r.Resource
		}
		m.dialog = newAcquireDialog(name, m.defaultTTL())
		return nil
	case key.Matches(msg, k.Extend):
		r := m.focused()
		if r == nil || r.Value == "" || r.State == inspect.StateForeign {
			m.setStatus("extend: no lock value on this row", true)
			return nil
		}
		if !m.actionable(r, "extend") {
			return nil
		}
		if !stringLock(r) {
			m.setStatus(fmt.Sprintf("extend: a %s %s lock is a hash; its holder renews it (redlockctl extends string locks only)", clean(r.Library), clean(r.Kind)), true)
			return nil
		}
		m.dialog = newExtendDialog(*r, m.defaultTTL())
		return nil
	case key.Matches(msg, k.Release):
		r := m.focused()
		if r == nil || m.held[r.Resource] == nil {
			m.setStatus("x releases a lock this console holds; D force-releases any lock", true)
			return nil
		}
		req := actionReq{kind: "release", resource: r.Resource, value: m.held[r.Resource].value}
		m.dialog = &pendingDialog{req: req}
		return m.actionCmd(req)
	case key.Matches(msg, k.ForceRelease):
		r := m.focused()
		if r == nil || r.State == inspect.StateFree {
			m.setStatus("force-release: no lock on this row", true)
			return nil
		}
		// No actionable check: a force-release acts on the row's exact key (its decoded
		// release plan names it), wherever the key lives.
		m.dialog = newForceDialog(m.snap, *r)
		return nil
	}
	if m.mode == modeDetail {
		switch {
		case key.Matches(msg, k.Back):
			m.mode = modeTable
		case key.Matches(msg, k.Up):
			m.detailScroll = max(0, m.detailScroll-1)
		case key.Matches(msg, k.Down):
			m.detailScroll++
		case key.Matches(msg, k.PageUp):
			m.detailScroll = max(0, m.detailScroll-m.bodyHeight())
		case key.Matches(msg, k.PageDown):
			m.detailScroll += m.bodyHeight()
		case key.Matches(msg, k.Top):
			m.detailScroll = 0
		case key.Matches(msg, k.Bottom):
			m.detailScroll = len(m.detailLines(m.width)) // clamped to the last page below
		}
		m.clampDetailScroll()
		return nil
	}
	t := m.table
	switch {
	case key.Matches(msg, k.Up):
		t.moveTo(t.cursor - 1)
	case key.Matches(msg, k.Down):
		t.moveTo(t.cursor + 1)
	case key.Matches(msg, k.PageUp):
		t.moveTo(t.cursor - t.height)
	case key.Matches(msg, k.PageDown):
		t.moveTo(t.cursor + t.height)
	case key.Matches(msg, k.Top):
		t.moveTo(0)
	case key.Matches(msg, k.Bottom):
		t.moveTo(len(t.view) - 1)
	case key.Matches(msg, k.Detail):
		if r := t.current(); r != nil {
			m.mode = modeDetail
			m.detailName = r.Resource
			m.detailScroll = 0
		}
	case key.Matches(msg, k.Back):
		if t.filter != "" || t.anomaliesOnly {
			m.filterInput.SetValue("")
			t.anomaliesOnly = false
			return t.setFilter("")
		}
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.filterInput.Focus()
		return nil
	case key.Matches(msg, k.Anomalies):
		return t.toggleAnomalies()
	case key.Matches(msg, k.Activity):
		if m.live != nil {
			m.showPane = !m.showPane
			m.resize()
		} else {
			m.setStatus("no live feed in this console (--no-live)", false)
		}
		return nil
	case key.Matches(msg, k.SortNext):
		return t.sortBy(t.sortCol + 1)
	case key.Matches(msg, k.SortPrev):
		return t.sortBy(t.sortCol - 1)
	case key.Matches(msg, k.Reverse):
		return t.reverse()
	}
	return nil
}

// stringLock reports whether r's holding value is a string value (an owner-checked
// PEXPIRE extends it), not a hash lock's holder field.
func stringLock(r *inspect.Resource) bool {
	for i := range r.Nodes {
		if n := &r.Nodes[i]; n.Value == r.Value && n.Error == "" && n.Type != "" && n.Type != inspect.TypeString && n.Type != inspect.TypeNone {
			return false
		}
	}
	return true
}
