package carry

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// Carrier is a Tracker for a consumer that reads only a poll's counts: serve's
// metrics. It carries by the same rules (see Tracker), but keeps, of the last poll,
// what the rules read and no row. Such a consumer sees a row carried only where one is
// added: a row that only masters which stopped answering held (Uncertain), counted by
// the state it had when last seen. A node carried onto a row that answered changes no
// count, nor does it change the row's figures (they are judged from what answered).
//
// Tracking a stream with a Carrier counts what Tracker.TrackStream and a recount of
// the whole snapshot it returns would count (to the millisecond), without keeping the
// previous poll, its tables or its rows: the Carrier keeps, for each row of the last
// tracked poll (and each row it carried), a 64-bit hash of its name, its state and,
// for each master, the deadline of its node (29 bytes a row at 5 masters, against
// about 150 bytes of a poll's tables). Deadlines are counted in whole milliseconds
// from an epoch, rounded up: where a poll is not taken on a whole millisecond from
// it, a node may be carried up to 1 ms longer than by a Tracker; a node whose
// projection would last more than about 29 days is carried until its master answers.
// The records are filled while the stream's rows are handed out (Each, EachAt), so
// that the poll's tables can be recycled (Poller.Recycle) before the next poll
// instead of being kept beside it. A stream whose rows were not all handed out before
// the next Track carries nothing into the next poll. Names are told apart by their
// hashes alone: at a million rows, a poll with a master down has odds of about 1 in
// 2×10⁷ that two of them meet, and then miscounts a row by one.
type Carrier struct {
	mu     sync.Mutex
	seed   maphash.Seed
	seeded bool
	was    []string     // the last tracked poll's master names
	last   *poll.Stream // the last tracked poll: its rows fill recs as they are handed out
	recs   carryRecs
}

// carryRecs is what a Carrier keeps of one poll's rows, one record per row (the
// stream's rows in name order, then the rows it carried): the past it carries from.
type carryRecs struct {
	n      int       // masters
	epoch  time.Time // until counts milliseconds from it
	hashes []uint64  // the row's resource name, hashed
	states []uint8   // index in carryStates
	// until holds n per row: master mi's deadline, in milliseconds from epoch,
	// rounded up; 0: nothing to carry; carryNever: no TTL (or one beyond what 32
	// bits hold).
	until []uint32
}

// carryNever is a record's until for a node carried until its master answers.
const carryNever = math.MaxUint32

// rebaseAfter is how far the epoch may fall behind a poll before records are
// counted from a later one (so that until reaches about 29 days ahead).
const rebaseAfter = 20 * 24 * time.Hour

// record returns the until that keeps d.
func (r *carryRecs) record(d deadline) uint32 {
	return r.recordAfter(r.msSince(d.at), d.ms)
}

// msSince is how many milliseconds at is after the epoch, rounded up.
func (r *carryRecs) msSince(at time.Time) int64 {
	since := at.Sub(r.epoch)
	ms := int64(since / time.Millisecond)
	if since%time.Millisecond > 0 {
		ms++
	}
	return ms
}

// recordAfter is record of a deadline of ms milliseconds after a time since
// milliseconds after the epoch (msSince).
func (r *carryRecs) recordAfter(since, ms int64) uint32 {
	switch {
	case ms == -1 || ms >= carryNever:
		return carryNever
	case ms <= 0:
		return 0
	}
	u := since + ms
	if u >= carryNever {
		return carryNever
	}
	return uint32(max(u, 1))
}

// deadline returns the deadline record ri keeps of master mi.
func (r *carryRecs) deadline(ri, mi int) deadline {
	switch u := r.until[ri*r.n+mi]; u {
	case 0:
		return deadline{}
	case carryNever:
		return deadline{ms: -1}
	default:
		return deadline{at: r.epoch, ms: int64(u)}
	}
}

// rebase moves the epoch to just before now when it has fallen rebaseAfter behind
// (or was not set), and recounts the records from it: what has passed by then is
// carried no more.
func (r *carryRecs) rebase(now time.Time) {
	if r.epoch.IsZero() {
		r.epoch = now.Add(-time.Millisecond)
		return
	}
	since := now.Sub(r.epoch)
	if since < rebaseAfter {
		return
	}
	k := since.Milliseconds() - 1
	r.epoch = r.epoch.Add(time.Duration(k) * time.Millisecond)
	for i, u := range r.until {
		switch {
		case u == 0 || u == carryNever:
		case int64(u) <= k:
			r.until[i] = 0
		default:
			r.until[i] = u - uint32(k)
		}
	}
}

// carryStates are the states a record stores, by index; 0 is any other state (counted
// nowhere but in Summary.Resources, as CountRows counts it).
var carryStates = []string{"", inspect.StateHeld, inspect.StatePartial, inspect.StateSplit, inspect.StateNoTTL, inspect.StateForeign, inspect.StateFree, inspect.StateSemaphore, inspect.StateBookkeeping}

func carryState(s string) uint8 {
	if i := slices.Index(carryStates, s); i > 0 {
		return uint8(i)
	}
	return 0
}

// reset makes r hold rows records of n masters, reusing its memory.
func (r *carryRecs) reset(rows, n int) {
	r.n = n
	r.hashes = growLen(r.hashes, rows)
	r.states = growLen(r.states, rows)
	r.until = growLen(r.until, rows*n)
	clear(r.until)
}

// growLen returns s with length n, its contents undefined.
func growLen[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return make([]T, n)
}

// carryPair is a row of the previous poll (by record) that a row of this poll carries
// nodes onto.
type carryPair struct {
	hash uint64
	rec  int32
}

// Track prepares st, a poll of the Carrier's poller that no one has read yet, the way
// Tracker.TrackStream would track it: where masters that answered the last tracked
// poll do not answer st, the rows that only they held (as last seen, their projected
// PTTL not yet passed) are added to the counts of st's summary that Each and EachAt
// recount. st's rows are not changed. Call it once per poll, before st's rows are
// handed out; it is safe for concurrent use (calls are serialised).
func (c *Carrier) Track(st *poll.Stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seeded {
		c.seed, c.seeded = maphash.MakeSeed(), true
	}
	s := st.Snapshot
	n := len(s.Masters)
	var prev carryRecs
	if c.last != nil && c.last.Passed.Load() {
		prev = c.recs
	}
	if c.last != nil {
		c.last.Observe = nil
	}
	c.recs = carryRecs{}
	now := s.TakenAt
	prev.rebase(now)
	var down []int
	if prev.n == n {
		down = downSince(c.was, s.Masters)
	}
	c.was = names(c.was, s.Masters)
	c.last = st
	rows := st.Len()
	if len(down) == 0 {
		// Nothing to carry: the previous records' memory takes this poll's.
		c.recs = prev
		c.recs.reset(rows, n)
		st.Carried = inspect.Summary{}
		st.Observe = c.observer(st, nil, nil, nil)
		return
	}

	// Which previous rows are carried, and onto which this poll has a row of.
	present := make([]uint64, 0, rows)
	st.EachName(func(name string) { present = append(present, maphash.String(c.seed, name)) })
	slices.Sort(present)
	var onto []carryPair
	var left []int32
	carryFrom(&prev, len(prev.hashes), down, now, func(ri int) (int, bool) {
		_, ok := slices.BinarySearch(present, prev.hashes[ri])
		return 0, ok
	}, func(ri, _ int, _ []int) {
		onto = append(onto, carryPair{prev.hashes[ri], int32(ri)})
	}, func(ri int, _ []int) {
		left = append(left, int32(ri))
	})
	present = nil
	slices.SortFunc(onto, func(a, b carryPair) int { return cmp.Compare(a.hash, b.hash) })

	// The rows of their own: counted, and kept (with what is carried) to carry from
	// next time. This poll's rows get their records as they are handed out.
	c.recs = carryRecs{epoch: prev.epoch}
	c.recs.reset(rows+len(left), n)
	st.Carried = inspect.Summary{}
	one := []inspect.Resource{{}}
	var nodes []int
	for k, ri := range left {
		i := rows + k
		c.recs.hashes[i], c.recs.states[i] = prev.hashes[ri], prev.states[ri]
		nodes = carriedOn(nodes[:0], &prev, int(ri), down, now)
		for _, mi := range nodes {
			c.recs.until[i*n+mi] = prev.until[int(ri)*n+mi]
		}
		one[0] = ownRow(carryStates[prev.states[ri]])
		inspect.CountRows(&st.Carried, one)
	}
	// The observer keeps of prev only what it reads: the deadlines.
	prev.hashes, prev.states = nil, nil
	st.Observe = c.observer(st, down, onto, &prev)
}

// observer returns what records the rows of st as they are handed out: each row's
// name, state, and each master's deadline (nodeDeadline of what it answered, or, for a
// master down whose node of the previous poll is carried onto the row (onto, records
// of prev), that node's).
func (c *Carrier) observer(st *poll.Stream, down []int, onto []carryPair, prev *carryRecs) func(lo int, rows []inspect.Resource) {
	recs, seed := &c.recs, c.seed
	s := st.Snapshot
	n := recs.n
	now := s.TakenAt
	since := recs.msSince(now) // every node read now: record, once
	up := make([]bool, n)
	for i := range up {
		up[i] = s.Masters[i].Up
	}
	return func(lo int, rows []inspect.Resource) {
		var buf [8]int // chunks are handed out on several goroutines at once
		nodes := buf[:0]
		for j := range rows {
			r := &rows[j]
			i := lo + j
			h := maphash.String(seed, r.Resource)
			recs.hashes[i], recs.states[i] = h, carryState(r.State)
			until := recs.until[i*n : (i+1)*n]
			for mi := range min(n, len(r.Nodes)) {
				until[mi] = recs.recordAfter(since, nodeDeadline(up[mi], &r.Nodes[mi], now).ms)
			}
			if len(onto) == 0 {
				continue
			}
			k, ok := slices.BinarySearchFunc(onto, h, func(p carryPair, h uint64) int { return cmp.Compare(p.hash, h) })
			if !ok {
				continue
			}
			ri := int(onto[k].rec)
			nodes = carriedOn(nodes[:0], prev, ri, down, now)
			for _, mi := range nodes {
				until[mi] = prev.until[ri*n+mi]
			}
		}
	}
}
