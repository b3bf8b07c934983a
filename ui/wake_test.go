package ui

import (
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect/poll"
)

func isWakeDue(m tea.Msg) bool { _, ok := m.(wakeDueMsg); return ok }

// A change the live feed reports is polled for wakeGap after the last poll ended, not
// at the next poll_interval; wakes in a burst make one poll; none while a poll is in
// flight (it runs after), none while paused, and none after a poll that started since.
func TestWakePollsForTheFeedsChanges(t *testing.T) {
	now := t0
	closed := make(chan struct{})
	close(closed)
	h := newHarnessWith(t, testConfig(), &fakeActions{t: t}, 120, 40, func(o *Options) {
		o.Woken = closed
		o.Now = func() time.Time { return now }
	})
	h.m.wake.ch = nil // the test sends the wakes
	if h.polls != 1 {
		t.Fatalf("after Init: %d polls, want 1", h.polls)
	}
	due := func() (d []time.Duration) {
		for _, tk := range h.ticks {
			if isWakeDue(tk.msg) {
				d = append(d, tk.d)
			}
		}
		return d
	}
	dues := func() int { return len(due()) }
	h.send(wokenMsg{})
	h.send(wokenMsg{})
	if d := due(); h.polls != 1 || len(d) != 1 || d[0] != wakeGap {
		t.Fatalf("two wakes right after a poll: %d polls, due in %v; want 1 poll, one due in %v", h.polls, d, wakeGap)
	}
	now = now.Add(wakeGap)
	h.fire(isWakeDue)
	if h.polls != 2 {
		t.Fatalf("the wake's poll was due: %d polls, want 2", h.polls)
	}

	// A wake while a poll is in flight: polled once it has landed, wakeGap later.
	h.m.poll = func(ctx context.Context) *poll.Stream { h.polls++; return poll.StreamOf(testSnapshot()) }
	inFlight := h.m.startPoll()
	now = now.Add(time.Second)
	h.send(wokenMsg{})
	if h.polls != 2 || dues() != 0 {
		t.Fatalf("a wake with a poll in flight: %d polls, %d due; want none started", h.polls, dues())
	}
	h.run(inFlight)
	if h.polls != 3 || dues() != 1 {
		t.Fatalf("the poll in flight landed: %d polls, %d due; want 3 polls and the wake's due", h.polls, dues())
	}
	now = now.Add(wakeGap)
	h.fire(isWakeDue)
	if h.polls != 4 {
		t.Fatalf("after a wake during a poll: %d polls, want 4", h.polls)
	}

	// Paused: no poll for a wake.
	h.key("p")
	now = now.Add(time.Second)
	h.send(wokenMsg{})
	if h.polls != 4 || dues() != 0 {
		t.Fatalf("paused: %d polls, %d due; want no poll", h.polls, dues())
	}
	h.key("p") // resumed: polls at once

	// A poll that starts before the wake's is due reads the change: no second one.
	now = now.Add(time.Millisecond)
	h.send(wokenMsg{})
	if d := due(); len(d) != 1 || d[0] != wakeGap-time.Millisecond {
		t.Fatalf("a wake 1ms after a poll: due in %v, want once in %v", d, wakeGap-time.Millisecond)
	}
	polls := h.polls
	h.key("r") // a refresh polls at once
	now = now.Add(wakeGap)
	h.fire(isWakeDue)
	if h.polls != polls+1 {
		t.Errorf("a refresh before the wake's poll was due: %d polls, want %d (the refresh alone)", h.polls-polls, 1)
	}

	// A poll that took longer than wakeGap (a million rows built and sorted): the
	// next wake's poll waits as long after it.
	h.m.wake.took = 300 * time.Millisecond
	h.m.wake.ended = now
	h.send(wokenMsg{})
	if d := due(); len(d) != 1 || d[0] != 300*time.Millisecond {
		t.Errorf("after a poll of 300ms: due in %v, want once in 300ms", d)
	}
}

// Where every master is fed (Options.Fed), the interval's whole polls take at most a
// poll.WholeShare of the console's time: one that took 60 ms at a poll_interval of 100 ms
// is followed by the next 240 ms after it began, not 100 ms; a change is then read by
// a Delta at once most of the time, not after the whole poll in flight. Without the
// feed (a master polled), every interval.
func TestIntervalPollsPacedWhenFed(t *testing.T) {
	for _, fed := range []bool{true, false} {
		now := t0
		cfg := testConfig()
		cfg.Inspect.PollInterval = 100 * time.Millisecond
		h := newHarnessWith(t, cfg, &fakeActions{t: t}, 120, 40, func(o *Options) {
			o.Now = func() time.Time { return now }
			o.Fed = func() bool { return fed }
		})
		h.m.poll = func(ctx context.Context) *poll.Stream {
			time.Sleep(60 * time.Millisecond) // judging every row again
			h.polls++
			return poll.StreamOf(testSnapshot())
		}
		start := h.polls
		for range 30 {
			now = now.Add(100 * time.Millisecond)
			h.fire(isPollTick)
		}
		n := h.polls - start
		if fed && (n < 7 || n > 15) {
			t.Errorf("fed: %d whole polls of 60 ms in 30 intervals of 100 ms, want one every 240 ms or more (about 10)", n)
		}
		if !fed && n != 30 {
			t.Errorf("not fed: %d whole polls in 30 intervals, want 30", n)
		}
	}
}
