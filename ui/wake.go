package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect/poll"
)

// wakeGap is the least time from the end of a Delta to the next, and from the end of
// a poll to a whole poll for a wake: changes in a burst are read together.
const wakeGap = 100 * time.Millisecond

// wakeState is how a feed-first console polls for the changes its live feed reports
// (Options.Woken). A poll for a wake is a Delta (Options.Delta), which reads only the
// keys that changed and patches the table with their rows, so that a change shows at
// once; where none can be had (the feed has just come up or resynced, a master is
// read whole), a whole poll. A poll for a wake waits for the one in flight. A Delta
// starts no sooner after the last Delta ended than wakeGap, or than that Delta took
// (Deltas take at most half the console's time); a whole poll no sooner after the
// last poll ended than wakeGap, or than the last whole poll took (its rows built and
// sorted: at a million keys, the console then spends at most half its time on them).
type wakeState struct {
	ch         <-chan struct{}
	wanted     bool          // a change was reported that no poll started since has read
	wantedAt   time.Time     // when the first of them was
	timer      bool          // a wakeDueMsg is on its way
	noDelta    bool          // no Delta could be had since the last whole poll
	took       time.Duration // how long the last whole poll took, with its rows' build
	ended      time.Time     // when the last poll was taken in
	deltaTook  time.Duration // how long the last Delta took, with the table's patch
	deltaEnded time.Time     // when it was taken in
	fed        bool          // the last whole poll kept every master's rows from its feed (Options.Fed)
	wholeAt    time.Time     // when the last whole poll started
}

// paced reports whether the interval's whole poll is put off at now, by
// poll.NextWhole: the last kept every master's rows from its feed, and began less than
// poll.WholeShare times its duration ago.
func (w *wakeState) paced(now time.Time) bool {
	return now.Before(w.wholeAt.Add(poll.NextWhole(0, w.took, w.fed)))
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
	delta := m.delta != nil && m.table.src != nil && !w.noDelta
	due := w.ended.Add(max(wakeGap, w.took))
	if delta {
		due = w.deltaEnded.Add(max(wakeGap, w.deltaTook))
	}
	if settled := w.wantedAt.Add(poll.WakeSettle); settled.After(due) {
		due = settled
	}
	if wait := due.Sub(m.clock()); wait > 0 {
		w.timer = true
		return m.after(wait, func(time.Time) tea.Msg { return wakeDueMsg{} })
	}
	w.wanted = false
	return m.startPollFor(delta)
}
