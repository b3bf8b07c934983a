package carry

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// Tracker carries rows across polls, for what shows them (the console, dump --watch):
// a resource whose holding masters became unreachable stays in the snapshot instead
// of vanishing, with LastSeen on the node of each such master (where and when it was
// last seen, and its PTTL projected from that sample); a row that only such masters
// held is kept with Uncertain set. It carries by the package's rules, as a Carrier
// does: a carried node is dropped once its projection passes zero or its master
// answers again (with or without the key); a row with no node left that answered or
// was carried leaves.
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
	was      []string // prev's master names
}

// Track returns s with the rows of the previous snapshot carried forward where their
// masters did not answer this time. It is safe for concurrent use (calls are serialised).
func (t *Tracker) Track(s *inspect.Snapshot) *inspect.Snapshot {
	if s == nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	down := downSince(t.was, s.Masters)
	var prev *inspect.Snapshot
	if len(down) > 0 {
		prev = t.previous() // only a poll that carries needs the previous rows
	}
	t.prev, t.prevPlan, t.was = s, nil, names(t.was, s.Masters)
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
	down := downSince(t.was, s.Masters)
	t.was = names(t.was, s.Masters)
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

// snapshotPast is a Tracker's record of a poll: its snapshot, whose carried nodes
// have their LastSeen.
type snapshotPast struct{ s *inspect.Snapshot }

func (p snapshotPast) deadline(ri, mi int) deadline {
	r := &p.s.Resources[ri]
	if mi >= len(r.Nodes) {
		return deadline{}
	}
	n := &r.Nodes[mi]
	if n.LastSeen != nil {
		return lastSeenDeadline(n.LastSeen)
	}
	return nodeDeadline(p.s.Masters[mi].Up, n, p.s.TakenAt)
}

// track carries prev's rows forward into s on the masters down, and returns s.
func track(prev, s *inspect.Snapshot, down []int) *inspect.Snapshot {
	if len(down) == 0 {
		return s
	}
	now := s.TakenAt
	var own []int
	carryFrom(snapshotPast{prev}, len(prev.Resources), down, now, find(prev.Resources, s.Resources),
		func(ri, row int, nodes []int) {
			setLastSeen(&s.Resources[row], &prev.Resources[ri], nodes, prev.TakenAt, now)
		},
		func(ri int, _ []int) { own = append(own, ri) })
	if len(own) == 0 {
		return s
	}
	var nodes []int
	for _, ri := range own {
		// Nothing that answered has it: a row of its own, as last seen. Its strings are
		// copied: the poll's share chunks that this row could keep alive for long, and
		// that serve fills again (Poller.Recycle).
		pr := &prev.Resources[ri]
		r := ownRow(pr.State)
		r.Resource, r.Key, r.Value, r.Owner = strings.Clone(pr.Resource), strings.Clone(pr.Key), strings.Clone(pr.Value), strings.Clone(pr.Owner)
		r.Token, r.Library, r.Kind, r.LibraryEvidence = pr.Token, strings.Clone(pr.Library), strings.Clone(pr.Kind), strings.Clone(pr.LibraryEvidence)
		r.Anomalies, r.Nodes = []inspect.Anomaly{}, make([]inspect.Node, len(s.Masters))
		for i, m := range s.Masters {
			r.Nodes[i] = inspect.Node{Master: m.Name, PTTLMs: -2, Type: inspect.TypeNone}
			if !m.Up {
				r.Nodes[i].Error, r.Nodes[i].ErrorKind = m.Error, m.ErrorKind
			}
		}
		nodes = carriedOn(nodes[:0], snapshotPast{prev}, ri, down, now)
		setLastSeen(&r, pr, nodes, prev.TakenAt, now)
		for _, n := range r.Nodes {
			if n.LastSeen != nil && n.LastSeen.Value == r.Value {
				r.Holders++
			}
		}
		s.Resources = append(s.Resources, r)
	}
	sort.SliceStable(s.Resources, func(a, b int) bool { return s.Resources[a].Resource < s.Resources[b].Resource })
	inspect.Summarize(s)
	s.Events = dropUnseen(s.Events, s.Resources)
	return s
}

// find returns carryFrom's find for prev's rows in rows: a merge when both are in
// name order (as the poller returns them; carryFrom asks in order), a map otherwise.
func find(prev, rows []inspect.Resource) func(ri int) (int, bool) {
	if poll.ByName(prev) && poll.ByName(rows) {
		j := 0
		return func(ri int) (int, bool) {
			name := prev[ri].Resource
			for j < len(rows) && rows[j].Resource < name {
				j++
			}
			return j, j < len(rows) && rows[j].Resource == name
		}
	}
	idx := make(map[string]int, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		idx[rows[i].Resource] = i
	}
	return func(ri int) (int, bool) {
		i, ok := idx[prev[ri].Resource]
		return i, ok
	}
}

// setLastSeen sets LastSeen on r's nodes of the masters nodes (carried, see
// carriedOn), from prev's nodes read at prevAt, projected to now.
func setLastSeen(r *inspect.Resource, prev *inspect.Resource, nodes []int, prevAt, now time.Time) {
	for _, mi := range nodes {
		pn := &prev.Nodes[mi]
		ls := pn.LastSeen
		if ls == nil {
			ls = &inspect.LastSeen{Master: pn.Master, At: prevAt, Value: strings.Clone(pn.Value), SampledPTTLMs: pn.PTTLMs}
		}
		next := *ls
		next.ProjectedPTTLMs = -1
		if next.SampledPTTLMs != -1 {
			next.ProjectedPTTLMs = next.SampledPTTLMs - now.Sub(next.At).Milliseconds()
		}
		if mi < len(r.Nodes) {
			r.Nodes[mi].LastSeen = &next
		}
	}
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
