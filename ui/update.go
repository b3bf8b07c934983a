package ui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

func (m *Model) onSnapshot(st *poll.Stream, built *table) tea.Cmd {
	m.polling = false
	m.now = m.clock()
	m.wake.ended = m.now
	if st == nil {
		m.setStatus("poll returned nothing", true)
		return nil
	}
	m.seq++
	m.snap = st.Snapshot
	m.forgetExpired()
	m.table.mine = m.mineMap()
	return m.polled(m.table.adoptSnapshot(st, m.seq, built))
}

// onDelta takes a wake's poll that was a Delta: the table patched with it (patched,
// in the poll's command), as a whole poll is taken in.
func (m *Model) onDelta(d *poll.Delta, patched *table) tea.Cmd {
	m.polling = false
	m.now = m.clock()
	m.wake.ended, m.wake.deltaEnded = m.now, m.now
	m.seq++
	m.snap = d.Stream.Snapshot
	m.forgetExpired()
	m.table.mine = m.mineMap()
	return m.polled(m.table.adoptDelta(d, m.seq, patched))
}

// polled ends taking a poll in: the detail view records its events, and a refresh
// asked for while it ran polls now. order is the table's command for its order.
func (m *Model) polled(order tea.Cmd) tea.Cmd {
	record := m.detail.record(m.table.events)
	m.table.events = nil
	m.resize() // the masters panel may have grown or shrunk
	if m.pendingRefresh {
		m.pendingRefresh = false
		return tea.Batch(order, record, m.startPoll())
	}
	return tea.Batch(order, record)
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
		return tea.Batch(m.refresh(), m.readStored(true))
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
	if m.detail.shown { // the detail has the focus
		return m.detail.update(msg)
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
			m.detail.open(r.Resource)
			return m.readStored(true)
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
	case key.Matches(msg, m.activity.keys.Toggle): // the pane beside the table
		cmd := m.activity.update(msg)
		m.resize()
		return cmd
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
