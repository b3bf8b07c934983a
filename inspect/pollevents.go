package inspect

import (
	"sort"
	"time"
)

// events compares rows with the previous poll's and remembers them for the next.
// The first poll only remembers: what it sees was not seen to happen.
func (p *Poller) events(now time.Time, pollMs float64, rows []Resource) []Event {
	var evs []Event
	seen := make(map[string]Reading, len(rows))
	tolerance := p.params.spreadLimit(0) + PollNoise(&Snapshot{PollMs: p.prevPollMs}, &Snapshot{PollMs: pollMs})
	for i := range rows {
		r := &rows[i]
		cur := ReadingOf(r, now)
		if p.primed {
			if e, ok := Change(r.Resource, p.prev[r.Resource], cur, now, tolerance); ok {
				evs = append(evs, e)
			}
		}
		seen[r.Resource] = cur
	}
	if p.primed {
		for name, prev := range p.prev {
			if _, ok := seen[name]; !ok && prev.Value != "" {
				if e, ok := Change(name, prev, Reading{}, now, tolerance); ok {
					evs = append(evs, e)
				}
			}
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].Resource < evs[b].Resource })
	p.prev, p.primed, p.prevPollMs = seen, true, pollMs
	return evs
}
