package poll

import (
	"sort"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
)

// events compares rows with the previous poll's and remembers them for the next.
// The first poll only remembers: what it sees was not seen to happen.
func (p *Poller) events(now time.Time, pollMs float64, rows []inspect.Resource) []inspect.Event {
	var evs []inspect.Event
	seen := make(map[string]verdict.Reading, len(rows))
	tolerance := p.params.SpreadLimit(0) + verdict.PollNoise(&inspect.Snapshot{PollMs: p.prevPollMs}, &inspect.Snapshot{PollMs: pollMs})
	for i := range rows {
		r := &rows[i]
		cur := verdict.ReadingOf(r, now)
		if p.primed {
			if e, ok := verdict.Change(r.Resource, p.prev[r.Resource], cur, now, tolerance); ok {
				evs = append(evs, e)
			}
		}
		seen[r.Resource] = cur
	}
	if p.primed {
		for name, prev := range p.prev {
			if _, ok := seen[name]; !ok && prev.Value != "" {
				if e, ok := verdict.Change(name, prev, verdict.Reading{}, now, tolerance); ok {
					evs = append(evs, e)
				}
			}
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].Resource < evs[b].Resource })
	p.prev, p.primed, p.prevPollMs = seen, true, pollMs
	return evs
}
