package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// Bounds of what the console keeps of the live feed.
const (
	liveRecent  = 1000             // events in the activity pane
	liveHolds   = 512              // hold times per resource, for its percentiles
	liveLast    = 8                // lifecycles per resource, for the detail view
	liveRate    = 10 * time.Second // acquisitions per second are counted over this
	liveBatch   = 100 * time.Millisecond
	liveMaxRows = 20000 // resources with live statistics (the least recent go first)
)

// liveMsg carries the events the feed sent since the last one.
type liveMsg struct {
	events []live.Event
	closed bool // the feed stopped: nothing more will come
}

// waitLive reads the feed's channel off the UI path: the first event, then whatever
// else arrives within liveBatch, as one message.
func waitLive(ch <-chan live.Event) tea.Cmd {
	return func() tea.Msg {
		e, ok := <-ch
		if !ok {
			return liveMsg{closed: true}
		}
		evs := []live.Event{e}
		deadline := time.After(liveBatch)
		for len(evs) < 4096 {
			select {
			case e, ok := <-ch:
				if !ok {
					return liveMsg{events: evs, closed: true}
				}
				evs = append(evs, e)
			case <-deadline:
				return liveMsg{events: evs}
			}
		}
		return liveMsg{events: evs}
	}
}

// liveRes is what the console knows of one resource's lifecycles.
type liveRes struct {
	acqs     []time.Time // acquisitions within liveRate
	acquired int
	holds    []float64 // ms, the last liveHolds
	sorted   []float64 // holds, sorted (nil: to be sorted again); drawn every frame
	expired  int
	last     []live.Event // the last liveLast end events
	seen     time.Time
}

// liveBoard is the console's record of the live feed.
type liveBoard struct {
	res    map[string]*liveRes
	recent []live.Event
	gaps   int
	feeds  map[string]string // master -> "gap" / "degraded" while not fed
}

func newLiveBoard() *liveBoard {
	return &liveBoard{res: map[string]*liveRes{}, feeds: map[string]string{}}
}

func (b *liveBoard) add(e live.Event) {
	b.recent = append(b.recent, e)
	if len(b.recent) > liveRecent {
		b.recent = slices.Delete(b.recent, 0, len(b.recent)-liveRecent)
	}
	switch e.Event {
	case live.Gap:
		b.gaps++
		b.feeds[e.Master] = "gap"
		return
	case live.Resync:
		delete(b.feeds, e.Master)
		return
	case live.Degraded:
		b.feeds[e.Master] = "degraded"
		return
	case live.Stalled:
		return // said in the activity pane; no resource of its own
	}
	r := b.res[e.Resource]
	if r == nil {
		if len(b.res) >= liveMaxRows {
			b.evict()
		}
		r = &liveRes{}
		b.res[e.Resource] = r
	}
	r.seen = e.At
	switch e.Event {
	case live.Acquired:
		r.acquired++
		r.acqs = append(r.acqs, e.At)
		r.trim(e.At)
		return
	case live.Expired:
		r.expired++
	case live.Released, live.ForceReleased, live.Evicted:
	default:
		return
	}
	if e.HeldMs != nil {
		r.sorted = nil
		r.holds = append(r.holds, *e.HeldMs)
		if len(r.holds) > liveHolds {
			r.holds = slices.Delete(r.holds, 0, len(r.holds)-liveHolds)
		}
	}
	r.last = append(r.last, e)
	if len(r.last) > liveLast {
		r.last = slices.Delete(r.last, 0, len(r.last)-liveLast)
	}
}

// evict drops the resource seen least recently.
func (b *liveBoard) evict() {
	var oldest string
	var at time.Time
	for k, r := range b.res {
		if oldest == "" || r.seen.Before(at) {
			oldest, at = k, r.seen
		}
	}
	delete(b.res, oldest)
}

func (r *liveRes) trim(now time.Time) {
	i := 0
	for i < len(r.acqs) && now.Sub(r.acqs[i]) > liveRate {
		i++
	}
	r.acqs = r.acqs[i:]
}

// rate is acquisitions per second over the last liveRate.
func (r *liveRes) rate(now time.Time) float64 {
	r.trim(now)
	return float64(len(r.acqs)) / liveRate.Seconds()
}

// quantile of the kept hold times (ms); -1 when none.
func (r *liveRes) quantile(q float64) float64 {
	if len(r.holds) == 0 {
		return -1
	}
	if r.sorted == nil {
		r.sorted = slices.Clone(r.holds)
		slices.Sort(r.sorted)
	}
	s := r.sorted
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// cell is the table's LIVE column for a resource: acquisitions/s, hold p99, expiries.
func (b *liveBoard) cell(resource string, now time.Time) (string, bool) {
	r := b.res[resource]
	if r == nil {
		return "", false
	}
	s := fmt.Sprintf("%s/s", trimFloat(r.rate(now)))
	if p := r.quantile(0.99); p >= 0 {
		s += " " + fmtHoldMs(p)
	}
	if r.expired > 0 {
		s += fmt.Sprintf(" ✗%d", r.expired)
	}
	return s, r.expired > 0
}

// status is the header's word on the feed: "live", or which masters are in a gap
// and which are polled instead (degraded).
func (b *liveBoard) status() string {
	if len(b.feeds) == 0 {
		return "live"
	}
	if b.feeds["all"] == "stopped" {
		return "live feed stopped (see the activity pane)"
	}
	var gaps, polled []string
	for m, s := range b.feeds {
		if s == "gap" {
			gaps = append(gaps, m)
		} else {
			polled = append(polled, m)
		}
	}
	slices.Sort(gaps)
	slices.Sort(polled)
	var parts []string
	if len(gaps) > 0 {
		parts = append(parts, "gap on "+strings.Join(gaps, ","))
	}
	if len(polled) > 0 {
		parts = append(parts, "polled "+strings.Join(polled, ","))
	}
	return "live: " + strings.Join(parts, "; ")
}

func fmtHoldMs(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fs", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

func trimFloat(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
