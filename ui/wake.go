package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// wakeGap is the least time between the end of a poll and a poll for a change the
// live feed reported: changes in a burst are read together.
const wakeGap = 100 * time.Millisecond

// wakeState is how a feed-first console polls for the changes its live feed reports
// (Options.Woken): a poll reads only the keys that changed, so a change shows within
// about wakeGap instead of at the next poll_interval. A poll for a wake waits for
// the one in flight, and starts no sooner after the last one ended than wakeGap, or
// than that poll took (its rows are built and sorted whole: at a million keys, the
// console then spends at most half its time on polls).
type wakeState struct {
	ch     <-chan struct{}
	wanted bool          // a change was reported that no poll started since has read
	timer  bool          // a wakeDueMsg is on its way
	took   time.Duration // how long the last poll took, with its rows' build
	ended  time.Time     // when the last poll's snapshot was taken in
}

type (
	wokenMsg   struct{}
	wakeDueMsg struct{}
)

// waitWoken waits for the feed's next wake (none when ch is nil or closed).
func waitWoken(ch <-chan struct{}) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return nil
		}
		return wokenMsg{}
	}
}

// wakePoll starts the poll a wake asked for, or schedules it when the gap since the
// last poll is not over; nothing while paused, while a poll is in flight (this runs
// again when it ends), or when no wake is wanted.
func (m *Model) wakePoll() tea.Cmd {
	w := &m.wake
	if !w.wanted || w.timer || m.paused || m.polling {
		return nil
	}
	if wait := w.ended.Add(max(wakeGap, w.took)).Sub(m.clock()); wait > 0 {
		w.timer = true
		return m.after(wait, func(time.Time) tea.Msg { return wakeDueMsg{} })
	}
	w.wanted = false
	return m.startPoll()
}
