package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
)

// Answer is who held what at an instant.
type Answer struct {
	At      time.Time   `json:"at"`
	Holders []Lifecycle `json:"holders"`
	// Unknown says why the instant cannot be answered (a feed gap, nothing
	// recording), with its span; then Holders is empty.
	Unknown string `json:"unknown,omitempty"`
}

// Select chooses lifecycles by resource and filter.
type Select struct {
	// Resources are resource names or globs (Redis syntax) matched against the
	// whole name; none: every resource. Matched before anything else is decoded.
	Resources []string
	Query     inspect.Query // the filter language, on what is left
}

// At returns the lifecycles sel selects that were held at t, or why that is
// unknown.
func (s *Store) At(sel Select, t time.Time) (Answer, error) {
	q := sel.Query
	a := Answer{At: t, Holders: []Lifecycle{}}
	at := us(t)
	err := s.eng.view(func(r kvReader) error {
		if why := unknownAt(r, at); why != "" {
			a.Unknown = why
			return nil
		}
		for c := byte(0); c < classes; c++ {
			lo := putTime([]byte{pBlock, c}, at-blockSpan.Microseconds())
			hi := putTime([]byte{pBlock, c}, sat(at, classSpan(c)))
			if err := s.scanBlocks(r, lo, hi, &sel, sel.keep(func(start, end int64) bool { return start <= at && at < end }), func(l *Lifecycle) {
				if match(q, l, "held") {
					a.Holders = append(a.Holders, owned(l))
				}
			}); err != nil {
				return err
			}
		}
		return s.scanOpen(r, &sel, sel.keep(func(start, _ int64) bool { return start <= at }), func(l *Lifecycle) {
			if match(q, l, "held") {
				a.Holders = append(a.Holders, owned(l))
			}
		})
	})
	sortLifecycles(a.Holders)
	return a, err
}

// unknownAt says why the instant at (µs) cannot be answered: no session was
// recording then, or a master's feed was cut. "" when it can be.
func unknownAt(r kvReader, at int64) string {
	var sessions []Mark
	r.scan([]byte{pSession}, []byte{pSession + 1}, func(_, v []byte) bool {
		var m Mark
		if json.Unmarshal(v, &m) == nil {
			sessions = append(sessions, m)
		}
		return true
	})
	covered := false
	var before, after *Mark
	for i := range sessions {
		m := &sessions[i]
		switch {
		case us(m.At) <= at && at <= us(m.To):
			covered = true
		case us(m.To) < at:
			before = m
		case after == nil:
			after = m
		}
	}
	if !covered {
		switch {
		case before != nil && after != nil:
			return fmt.Sprintf("nothing recorded from %s to %s (the recorder was not running)", stamp(before.To), stamp(after.At))
		case before != nil:
			return fmt.Sprintf("nothing recorded after %s (the latest record)", stamp(before.To))
		case after != nil:
			return fmt.Sprintf("nothing recorded before %s (the first record)", stamp(after.At))
		}
		return "nothing recorded: the store is empty"
	}
	var gaps []string
	r.scan([]byte{pGap}, putTime([]byte{pGap}, at+1), func(_, v []byte) bool {
		var m Mark
		if json.Unmarshal(v, &m) == nil && us(m.At) <= at && (m.To.IsZero() || at <= us(m.To)) {
			to := "now (still cut)"
			if !m.To.IsZero() {
				to = stamp(m.To)
			}
			g := fmt.Sprintf("feed gap from %s to %s on %s", stamp(m.At), to, m.Master)
			if m.Text != "" {
				g += " (" + m.Text + ")"
			}
			gaps = append(gaps, g)
		}
		return true
	})
	return strings.Join(gaps, "; ")
}

func stamp(t time.Time) string { return t.UTC().Format(TimeFormat) }

// sat is a+b, saturated.
func sat(a, b int64) int64 {
	if a > 0 && b > 1<<63-1-a {
		return 1<<63 - 1
	}
	return a + b
}

func match(q inspect.Query, l *Lifecycle, state string) bool {
	return q.Empty() || q.Match(inspect.QueryFields{Resource: l.Resource, Owner: l.Owner, Value: l.Value, Library: l.Library, State: state})
}

// keeper is what decodeBlock asks of a record before decoding it: its times and
// its key's name id.
type keeper func(start, end int64, key uint32) bool

// keep returns the keeper of times (nil: any) and sel's resources, which the
// scan's names give (see scanBlocks).
func (sel Select) keep(times func(start, end int64) bool) func(names func(uint32) (string, error)) keeper {
	return func(names func(uint32) (string, error)) keeper {
		if len(sel.Resources) == 0 {
			if times == nil {
				return nil
			}
			return func(start, end int64, _ uint32) bool { return times(start, end) }
		}
		memo := map[uint32]bool{}
		return func(start, end int64, key uint32) bool {
			if times != nil && !times(start, end) {
				return false
			}
			ok, seen := memo[key]
			if !seen {
				rk, _ := names(key)
				res, _, _ := strings.Cut(rk, "\x00")
				ok = matchResource(sel.Resources, res)
				memo[key] = ok
			}
			return ok
		}
	}
}

// hashes returns the hashes of sel's resources for the blocks' filters; nil when
// any resource will do, or one is a glob.
func (sel *Select) hashes() []uint64 {
	if sel == nil || len(sel.Resources) == 0 {
		return nil
	}
	out := make([]uint64, 0, len(sel.Resources))
	for _, r := range sel.Resources {
		if strings.ContainsAny(r, "*?[") {
			return nil
		}
		out = append(out, resourceHash(r))
	}
	return out
}

// matchResource reports whether resource is one of names (or matches one, a glob).
func matchResource(names []string, resource string) bool {
	for _, n := range names {
		if n == resource || strings.ContainsAny(n, "*?[") && config.MatchGlob(n, resource) {
			return true
		}
	}
	return false
}

// scanBlocks calls fn for the records keep (given the scan's names; nil: all)
// accepts in the blocks from lo to hi.
func (s *Store) scanBlocks(r kvReader, lo, hi []byte, sel *Select, keep func(names func(uint32) (string, error)) keeper, fn func(*Lifecycle)) error {
	hashes := sel.hashes()
	var err error
	s.namesMu.RLock()
	known := s.names
	s.namesMu.RUnlock()
	var miss map[uint32]string
	defer func() { s.learn(miss) }()
	names := func(id uint32) (string, error) {
		if int(id) < len(known) && (id == 0 || known[id] != "") {
			return known[id], nil
		}
		if n, ok := miss[id]; ok {
			return n, nil
		}
		n, err := readName(r, id)
		if miss == nil {
			miss = map[uint32]string{}
		}
		miss[id] = n
		return n, err
	}
	var k keeper
	if keep != nil {
		k = keep(names)
	}
	r.scan(lo, hi, func(_, v []byte) bool {
		if hashes != nil && !blockMayHold(v, hashes) {
			return true
		}
		err = decodeBlock(v, k, names, func(l *Lifecycle) bool { fn(l); return true })
		return err == nil
	})
	return err
}

func (s *Store) scanOpen(r kvReader, sel *Select, keep func(names func(uint32) (string, error)) keeper, fn func(*Lifecycle)) error {
	return s.scanBlocks(r, []byte{pOpen}, []byte{pOpen + 1}, sel, keep, fn)
}

// Filter selects lifecycles for Lifecycles.
type Filter struct {
	Select
	// Since and Until bound the lifecycles to those held at some instant between
	// them (zero: unbounded).
	Since, Until time.Time
	Ends         []string      // only these ends (Held: not ended yet); nil: any
	LongerThan   time.Duration // only those held longer (so far, for one not ended)
	Limit        int           // at most this many, the earliest acquired first; 0: no limit
}

// Result is the lifecycles a Filter selects.
type Result struct {
	Lifecycles []Lifecycle `json:"lifecycles"`
	// Truncated says Limit cut the list.
	Truncated bool `json:"truncated,omitempty"`
	// Gaps are the feed gaps and times not recorded within the window: lifecycles
	// there may be missing, and those they cut end unknown.
	Gaps []Mark `json:"gaps,omitempty"`
}

// Lifecycles returns the lifecycles f selects, in the order they were acquired.
func (s *Store) Lifecycles(f Filter, now time.Time) (Result, error) {
	since, until := int64(-1<<63), int64(1<<63-1)
	if !f.Since.IsZero() {
		since = us(f.Since)
	}
	if !f.Until.IsZero() {
		until = us(f.Until)
	}
	longer := f.LongerThan.Microseconds()
	var res Result
	var list lifecycles
	// With a limit L, a record acquired after cut (µs) cannot be among the first L:
	// it is refused on its times, before anything else of it is decoded. cut is the
	// latest acquisition among the first L kept (whatever comes later, L are acquired
	// by then), and the L-th earliest once the list, twice L long, is cut to L. The
	// ends index and the blocks come in the order of their ends, about that of
	// acquisition, so that few are decoded beyond L.
	cut, latest := int64(1<<63-1), int64(-1<<63)
	keep := func(l *Lifecycle) {
		start, end := us(l.AcquiredAt), us(l.EndedAt)
		if l.End == Held {
			end = us(now)
		}
		if start > until || end < since || end-start <= longer && longer > 0 {
			return
		}
		if f.Ends != nil && !slices.Contains(f.Ends, l.End) {
			return
		}
		if len(f.Resources) > 0 && !matchResource(f.Resources, l.Resource) || !match(f.Query, l, cmpOr(l.End, "held")) {
			return
		}
		list.add(l)
		latest = max(latest, start)
		if list.n == f.Limit {
			cut = min(cut, latest)
		}
		if f.Limit > 0 && list.n >= 2*f.Limit {
			first := list.sorted(f.Limit)
			list = lifecycles{}
			for i := range first {
				list.add(&first[i])
			}
			res.Truncated = true
			cut = us(first[f.Limit-1].AcquiredAt)
		}
	}
	window := f.Select.keep(func(start, end int64) bool {
		return start <= cut && start <= until && end >= since && (longer <= 0 || end-start > longer)
	})
	err := s.eng.view(func(r kvReader) error {
		if f.Ends != nil && !slices.Contains(f.Ends, Released) {
			// Every end but a release is also under pEnded, by its end.
			lo := putTime([]byte{pEnded}, since)
			if err := s.scanBlocks(r, lo, []byte{pEnded + 1}, &f.Select, window, keep); err != nil {
				return err
			}
		} else {
			for c := byte(0); c < classes; c++ {
				if longer > 0 && classSpan(c) <= longer {
					continue
				}
				lo := putTime([]byte{pBlock, c}, max(since, -1<<62)-blockSpan.Microseconds())
				hi := putTime([]byte{pBlock, c}, sat(until, classSpan(c)))
				if err := s.scanBlocks(r, lo, hi, &f.Select, window, keep); err != nil {
					return err
				}
			}
		}
		if f.Ends == nil || slices.Contains(f.Ends, Held) {
			open := f.Select.keep(func(start, _ int64) bool { return start <= cut })
			if err := s.scanOpen(r, &f.Select, open, keep); err != nil {
				return err
			}
		}
		res.Gaps = gapsWithin(r, since, until)
		return nil
	})
	res.Lifecycles = list.sorted(f.Limit)
	if f.Limit > 0 && list.n > f.Limit {
		res.Truncated = true
	}
	return res, err
}

// lifecycles gathers a listing's records in chunks, so that a list of a million is
// never copied to grow, and sorts them once into one slice.
type lifecycles struct {
	chunks [][]Lifecycle // each chunkLen long but the last
	n      int
}

const chunkLen = 4096

// add appends a copy of l that owns its value (see owned).
func (c *lifecycles) add(l *Lifecycle) { c.push(owned(l)) }

// push appends l.
func (c *lifecycles) push(l Lifecycle) {
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == chunkLen {
		c.chunks = append(c.chunks, make([]Lifecycle, 0, min(chunkLen, max(16, c.n))))
	}
	k := len(c.chunks) - 1
	c.chunks[k] = append(c.chunks[k], l)
	c.n++
}

func (c *lifecycles) at(i int32) *Lifecycle { return &c.chunks[i/chunkLen][i%chunkLen] }

// sorted returns the first limit (0: all) in the order of acquisition, then key
// and value: an index sorted on acquisition times, the records copied once.
func (c *lifecycles) sorted(limit int) []Lifecycle {
	type ord struct {
		at int64 // ns
		i  int32
	}
	idx := make([]ord, 0, c.n)
	for i := range int32(c.n) {
		idx = append(idx, ord{c.at(i).AcquiredAt.UnixNano(), i})
	}
	slices.SortFunc(idx, func(a, b ord) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		x, y := c.at(a.i), c.at(b.i)
		if d := strings.Compare(x.Key, y.Key); d != 0 {
			return d
		}
		return strings.Compare(x.Value, y.Value)
	})
	if limit > 0 && len(idx) > limit {
		idx = idx[:limit]
	}
	out := make([]Lifecycle, len(idx))
	for j, o := range idx {
		out[j] = *c.at(o.i)
	}
	return out
}

// gapsWithin returns the gaps that overlap [since, until] and the spans between
// sessions there.
func gapsWithin(r kvReader, since, until int64) []Mark {
	var out []Mark
	r.scan([]byte{pGap}, []byte{pGap + 1}, func(_, v []byte) bool {
		var m Mark
		if json.Unmarshal(v, &m) == nil && us(m.At) <= until && (m.To.IsZero() || us(m.To) >= since) {
			out = append(out, m)
		}
		return true
	})
	var prev *Mark
	r.scan([]byte{pSession}, []byte{pSession + 1}, func(_, v []byte) bool {
		var m Mark
		if json.Unmarshal(v, &m) != nil {
			return true
		}
		if prev == nil && since > -1<<63 && since < us(m.At) {
			out = append(out, Mark{Kind: "not-recorded", At: fromUs(since), To: m.At, Text: "nothing recorded before the first session"})
		}
		if prev != nil && us(prev.To) <= until && us(m.At) >= since {
			out = append(out, Mark{Kind: "not-recorded", At: prev.To, To: m.At, Text: "the recorder was not running"})
		}
		prev = &m
		return true
	})
	slices.SortFunc(out, func(a, b Mark) int { return a.At.Compare(b.At) })
	return out
}

// Marks returns the marks (gaps, resyncs, sessions, master transitions, findings,
// force-releases) from since to until (zero: unbounded), in time order.
func (s *Store) Marks(since, until time.Time) ([]Mark, error) {
	lo, hi := int64(-1<<63), int64(1<<63-1)
	if !since.IsZero() {
		lo = us(since)
	}
	if !until.IsZero() {
		hi = us(until)
	}
	out := []Mark{}
	err := s.eng.view(func(r kvReader) error {
		for _, p := range []byte{pGap, pSession, pMark} {
			r.scan([]byte{p}, []byte{p + 1}, func(_, v []byte) bool {
				var m Mark
				if json.Unmarshal(v, &m) == nil && us(m.At) <= hi && (us(m.At) >= lo || !m.To.IsZero() && us(m.To) >= lo) {
					out = append(out, m)
				}
				return true
			})
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b Mark) int { return a.At.Compare(b.At) })
	return out, err
}

// sortLifecycles orders ls by acquisition (then key and value), sorting indexes
// rather than the large records themselves.
func sortLifecycles(ls []Lifecycle) {
	// The order of (acquisition second, nanosecond, index) triples, compared as
	// integers (a million lifecycles are sorted in a fraction of the time their
	// times' Compare takes), then the lifecycles moved into it in place, each once.
	type ord struct {
		sec  int64
		nsec int32
		i    int32
	}
	idx := make([]ord, len(ls))
	for i := range ls {
		idx[i] = ord{ls[i].AcquiredAt.Unix(), int32(ls[i].AcquiredAt.Nanosecond()), int32(i)}
	}
	slices.SortFunc(idx, func(x, y ord) int {
		if x.sec != y.sec {
			return cmp.Compare(x.sec, y.sec)
		}
		if x.nsec != y.nsec {
			return cmp.Compare(x.nsec, y.nsec)
		}
		a, b := &ls[x.i], &ls[y.i]
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	// Position p gets ls[idx[p].i]: follow each cycle of the permutation.
	for p := range idx {
		if idx[p].i < 0 {
			continue
		}
		tmp := ls[p]
		q := p
		for {
			src := int(idx[q].i)
			idx[q].i = -1
			if src == p {
				ls[q] = tmp
				break
			}
			ls[q] = ls[src]
			q = src
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
