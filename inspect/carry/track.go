package carry

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// Tracker carries rows across polls, for everything that keeps state between them (the
// console, dump --watch, doctor's sampling, serve): a resource whose holding masters
// became unreachable stays in the snapshot instead of vanishing, with LastSeen on the
// node of each such master (where and when it was last seen, and its PTTL projected
// from that sample); a row that only such masters held is kept with Uncertain set. A carried node is dropped once its projection
// passes zero or its master answers again (with or without the key); a row with no
// node left that answered or was carried leaves.
//
// Use one Tracker per poller: s = tr.Track(poller.Poll(ctx)), before the snapshot is
// shared, or TrackStream(poller.PollStream(ctx)). Track changes s in place and keeps it
// to carry from next time; callers must not modify a snapshot after Track returned it.
// A one-shot read has nothing to carry and needs no Tracker. While every master
// answers and nothing is carried, Track costs one pass over the masters, and
// TrackStream builds no rows.
type Tracker struct {
	mu   sync.Mutex
	prev *inspect.Snapshot
	// prevPlan builds prev's rows when prev came from a Stream that needed no
	// carrying (TrackStream): they are built only if a later poll carries from them.
	prevPlan *poll.RowPlan
}

// carried is what one resource had on unreachable masters, taken from the previous
// snapshot.
type carried struct {
	row   *inspect.Resource // the previous row (read only)
	nodes []int             // masters down now whose previous node held something or was carried
}

// Track returns s with the rows of the previous snapshot carried forward where their
// masters did not answer this time. It is safe for concurrent use (calls are serialised).
func (t *Tracker) Track(s *inspect.Snapshot) *inspect.Snapshot {
	if s == nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	down := downSince(t.prev, s)
	var prev *inspect.Snapshot
	if len(down) > 0 {
		prev = t.previous() // only a poll that carries needs the previous rows
	}
	t.prev, t.prevPlan = s, nil
	return track(prev, s, down)
}

// TrackStream is Track for a poll whose rows are not built yet. When every master
// answers (or there is no previous poll of the same masters), there is nothing to
// carry: it returns nil, st is to be written as it streams, and its rows are built only
// if a later poll has to carry from them. Otherwise it builds st's rows, carries the
// previous ones forward, and returns the whole snapshot, to be written instead of st.
func (t *Tracker) TrackStream(st *poll.Stream) *inspect.Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := st.Snapshot
	down := downSince(t.prev, s)
	if len(down) == 0 {
		t.prev, t.prevPlan = s, st.Plan
		return nil
	}
	prev := t.previous()
	s.Resources = st.Built()
	inspect.Summarize(s)
	t.prev, t.prevPlan = s, nil
	return track(prev, s, down)
}

// previous returns the previous snapshot, with its rows built if a stream left them
// unbuilt. The caller holds t.mu.
func (t *Tracker) previous() *inspect.Snapshot {
	if t.prevPlan != nil {
		p := *t.prev // the stream's snapshot, written already: not changed in place
		p.Resources = t.prevPlan.Rows()
		t.prev, t.prevPlan = &p, nil
	}
	return t.prev
}

// downSince returns the masters that do not answer in s and are the same masters as in
// prev (none without a prev of the same width).
func downSince(prev, s *inspect.Snapshot) []int {
	if prev == nil || len(prev.Masters) != len(s.Masters) {
		return nil
	}
	var down []int
	for i := range s.Masters {
		if !s.Masters[i].Up && prev.Masters[i].Name == s.Masters[i].Name {
			down = append(down, i)
		}
	}
	return down
}

// track carries prev's rows forward into s on the masters down, and returns s.
func track(prev, s *inspect.Snapshot, down []int) *inspect.Snapshot {
	if len(down) == 0 {
		return s
	}
	// What the previous snapshot had on the masters that are down now, in its order.
	var need []*carried
	for ri := range prev.Resources {
		r := &prev.Resources[ri]
		var c *carried
		for _, mi := range down {
			if mi >= len(r.Nodes) {
				continue
			}
			n := &r.Nodes[mi]
			if n.LastSeen == nil && (!prev.Masters[mi].Up || n.Error != "" || n.PTTLMs == -2 || n.Type != inspect.TypeString) {
				continue
			}
			if c == nil {
				c = &carried{row: r}
				need = append(need, c)
			}
			c.nodes = append(c.nodes, mi)
		}
	}
	if len(need) == 0 {
		return s
	}
	// Match them with this snapshot's rows: a merge when both are in name order (as
	// the poller returns them), a map otherwise.
	var left []*carried
	if poll.ByName(prev.Resources) && poll.ByName(s.Resources) {
		j := 0
		for _, c := range need {
			for j < len(s.Resources) && s.Resources[j].Resource < c.row.Resource {
				j++
			}
			if j < len(s.Resources) && s.Resources[j].Resource == c.row.Resource {
				carry(&s.Resources[j], c, prev, s.TakenAt)
				continue
			}
			left = append(left, c)
		}
	} else {
		idx := make(map[string]*carried, len(need))
		for _, c := range need {
			idx[c.row.Resource] = c
		}
		for ri := range s.Resources {
			if c := idx[s.Resources[ri].Resource]; c != nil {
				delete(idx, c.row.Resource)
				carry(&s.Resources[ri], c, prev, s.TakenAt)
			}
		}
		for _, c := range need {
			if idx[c.row.Resource] != nil {
				left = append(left, c)
			}
		}
	}
	changed := false
	for _, c := range left {
		// Nothing that answered has it: a row of its own, as last seen. Its strings are
		// copied: the poll's share chunks that this row could keep alive for long, and
		// that serve fills again (Poller.Recycle).
		r := inspect.Resource{Resource: strings.Clone(c.row.Resource), Key: strings.Clone(c.row.Key), State: c.row.State,
			Value: strings.Clone(c.row.Value), Owner: strings.Clone(c.row.Owner), Token: c.row.Token,
			Library: strings.Clone(c.row.Library), Kind: strings.Clone(c.row.Kind), LibraryEvidence: strings.Clone(c.row.LibraryEvidence),
			Uncertain: true, Anomalies: []inspect.Anomaly{}, Nodes: make([]inspect.Node, len(s.Masters))}
		for i, m := range s.Masters {
			r.Nodes[i] = inspect.Node{Master: m.Name, PTTLMs: -2, Type: inspect.TypeNone}
			if !m.Up {
				r.Nodes[i].Error, r.Nodes[i].ErrorKind = m.Error, m.ErrorKind
			}
		}
		if n := carry(&r, c, prev, s.TakenAt); n == 0 {
			continue
		}
		r.Holders = 0
		for _, n := range r.Nodes {
			if n.LastSeen != nil && n.LastSeen.Value == r.Value {
				r.Holders++
			}
		}
		s.Resources = append(s.Resources, r)
		changed = true
	}
	if changed {
		sort.SliceStable(s.Resources, func(a, b int) bool { return s.Resources[a].Resource < s.Resources[b].Resource })
		inspect.Summarize(s)
		s.Events = dropUnseen(s.Events, s.Resources)
	}
	return s
}

// carry sets LastSeen on r's nodes of the masters in c, projected to now; it returns
// how many it set (a projection that passed zero is not set).
func carry(r *inspect.Resource, c *carried, prev *inspect.Snapshot, now time.Time) int {
	set := 0
	for _, mi := range c.nodes {
		pn := &c.row.Nodes[mi]
		ls := pn.LastSeen
		if ls == nil {
			ls = &inspect.LastSeen{Master: pn.Master, At: prev.TakenAt, Value: strings.Clone(pn.Value), SampledPTTLMs: pn.PTTLMs}
		}
		next := *ls
		if next.SampledPTTLMs == -1 {
			next.ProjectedPTTLMs = -1
		} else {
			next.ProjectedPTTLMs = next.SampledPTTLMs - now.Sub(next.At).Milliseconds()
			if next.ProjectedPTTLMs <= 0 {
				continue
			}
		}
		if mi < len(r.Nodes) {
			r.Nodes[mi].LastSeen = &next
			set++
		}
	}
	return set
}

// dropUnseen removes "released" and "expired" events of rows that are carried: nobody
// saw them go.
func dropUnseen(evs []inspect.Event, rows []inspect.Resource) []inspect.Event {
	if len(evs) == 0 {
		return evs
	}
	carriedRows := map[string]bool{}
	for i := range rows {
		for _, n := range rows[i].Nodes {
			if n.LastSeen != nil {
				carriedRows[rows[i].Resource] = true
				break
			}
		}
	}
	out := evs[:0]
	for _, e := range evs {
		if carriedRows[e.Resource] && (e.Kind == "released" || e.Kind == "expired") {
			continue
		}
		out = append(out, e)
	}
	return out
}
