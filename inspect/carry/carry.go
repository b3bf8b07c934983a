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
// metrics. Such a consumer sees a row carried as last seen only where it adds a row:
// a row that only masters which stopped answering held (Uncertain, see Tracker),
// counted in the summary by the state it had when last seen. A node carried onto a row
// that answered changes no count, nor does it change the row's figures (they are
// judged from what answered).
//
// Tracking a stream with a Carrier counts exactly what Tracker.TrackStream and a
// recount of the whole snapshot it returns would count, without keeping the previous
// poll, its tables or its rows: the Carrier keeps, for each row of the last tracked
// poll (and each row it carried), a 64-bit hash of its name, its state and, for each
// master, until when what that master held would be carried, to the millisecond (29
// bytes a row at 5 masters, against about 150 bytes of a poll's tables); a node whose
// projection would last more than about 29 days is carried until its master answers.
// The records are filled while the stream's rows are handed out (Each, EachAt), so
// that the poll's tables can be recycled (Poller.Recycle) before the next poll instead
// of being kept beside it. A stream whose rows were not all handed out before the next
// Track carries nothing into the next poll. Names are told apart by their hashes
// alone: at a million rows, a poll with a master down has odds of about 1 in 2×10⁷
// that two of them meet, and then miscounts a row by one.
type Carrier struct {
	mu      sync.Mutex
	seed    maphash.Seed
	seeded  bool
	epoch   int64        // unix ns: records count milliseconds from it (see carryRecs.until)
	masters []string     // the last tracked poll's masters
	last    *poll.Stream // the last tracked poll: its rows fill recs as they are handed out
	recs    carryRecs
}

// carryRecs is what a Carrier keeps of one poll's rows, one record per row (the
// stream's rows in name order, then the rows it carried).
type carryRecs struct {
	n      int      // masters
	hashes []uint64 // the row's resource name, hashed
	states []uint8  // index in carryStates
	// until holds n per row: until when master mi's node is carried if mi stops
	// answering, in milliseconds from the Carrier's epoch, rounded up; 0: nothing to
	// carry; carryNever: no TTL (or one beyond what 32 bits hold).
	until []uint32
}

// carryNever is a record's until for a node carried until its master answers.
const carryNever = math.MaxUint32

// rebaseAfter is how far the epoch may fall behind a poll before records are
// counted from a later one (so that until reaches about 29 days ahead).
const rebaseAfter = 20 * 24 * time.Hour

// until returns a record's until of a deadline in unix ns (math.MaxInt64: none).
func (c *Carrier) until(deadline int64) uint32 {
	switch deadline {
	case 0:
		return 0
	case math.MaxInt64:
		return carryNever
	}
	u := (deadline - c.epoch + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	if u >= carryNever {
		return carryNever
	}
	return uint32(max(u, 1))
}

// carries reports whether a node of until u is still carried at now (unix ns).
func (c *Carrier) carries(u uint32, now int64) bool {
	return u == carryNever || u != 0 && now < c.epoch+int64(u)*int64(time.Millisecond)
}

// rebase moves the epoch to just before now when it has fallen rebaseAfter behind,
// and recounts recs from it: what has passed by then is carried no more.
func (c *Carrier) rebase(recs *carryRecs, now int64) {
	if c.epoch == 0 {
		c.epoch = now - int64(time.Millisecond)
		return
	}
	if now-c.epoch < int64(rebaseAfter) {
		return
	}
	k := (now-c.epoch)/int64(time.Millisecond) - 1
	c.epoch += k * int64(time.Millisecond)
	for i, u := range recs.until {
		switch {
		case u == 0 || u == carryNever:
		case int64(u) <= k:
			recs.until[i] = 0
		default:
			recs.until[i] = u - uint32(k)
		}
	}
}

// carryStates are the states a record stores, by index; 0 is any other state (counted
// nowhere but in Summary.Resources, as countRows counts it).
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
	now := s.TakenAt.UnixNano()
	c.rebase(&prev, now)
	var down []int
	if prev.n == n && len(c.masters) == n {
		for i := range s.Masters {
			if !s.Masters[i].Up && s.Masters[i].Name == c.masters[i] {
				down = append(down, i)
			}
		}
	}
	c.masters = c.masters[:0]
	for _, m := range s.Masters {
		c.masters = append(c.masters, m.Name)
	}
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

	// Which previous rows have something to carry on a master down now, and which of
	// them this poll has a row of.
	present := make([]uint64, 0, rows)
	st.EachName(func(name string) { present = append(present, maphash.String(c.seed, name)) })
	slices.Sort(present)
	carrying := func(ri int) bool {
		for _, mi := range down {
			if c.carries(prev.until[ri*n+mi], now) {
				return true
			}
		}
		return false
	}
	var onto []carryPair
	var left []int32
	for ri, h := range prev.hashes {
		if !carrying(ri) {
			continue
		}
		if _, ok := slices.BinarySearch(present, h); ok {
			onto = append(onto, carryPair{h, int32(ri)})
		} else {
			left = append(left, int32(ri))
		}
	}
	present = nil
	slices.SortFunc(onto, func(a, b carryPair) int { return cmp.Compare(a.hash, b.hash) })

	// The rows only masters down now held: counted, and kept (with what is carried)
	// to carry from next time. This poll's rows get their records as they are built.
	c.recs.reset(rows+len(left), n)
	st.Carried = inspect.Summary{}
	one := []inspect.Resource{{}}
	for k, ri := range left {
		i := rows + k
		c.recs.hashes[i], c.recs.states[i] = prev.hashes[ri], prev.states[ri]
		for _, mi := range down {
			if u := prev.until[int(ri)*n+mi]; c.carries(u, now) {
				c.recs.until[i*n+mi] = u
			}
		}
		one[0].State = carryStates[prev.states[ri]] // Scope unset, as Tracker's carried row
		inspect.CountRows(&st.Carried, one)
	}
	st.Observe = c.observer(st, down, onto, prev.until)
}

// observer returns what records the rows of st as they are handed out: each row's
// name, state, and until when each master's node is carried if that master stops
// answering (what it holds now, or what a down master's node carries from the previous
// poll: onto, records of prevUntil).
func (c *Carrier) observer(st *poll.Stream, down []int, onto []carryPair, prevUntil []uint32) func(lo int, rows []inspect.Resource) {
	recs, seed := &c.recs, c.seed
	s := st.Snapshot
	n := recs.n
	now := s.TakenAt.UnixNano()
	up := make([]bool, n)
	for i := range up {
		up[i] = s.Masters[i].Up
	}
	return func(lo int, rows []inspect.Resource) {
		for j := range rows {
			r := &rows[j]
			i := lo + j
			h := maphash.String(seed, r.Resource)
			recs.hashes[i], recs.states[i] = h, carryState(r.State)
			until := recs.until[i*n : (i+1)*n]
			for mi := range min(n, len(r.Nodes)) {
				nd := &r.Nodes[mi]
				if !up[mi] || nd.Error != "" || nd.PTTLMs == -2 || nd.Type != inspect.TypeString {
					until[mi] = 0
					continue
				}
				until[mi] = c.until(deadline(now, nd.PTTLMs))
			}
			if len(onto) == 0 {
				continue
			}
			k, ok := slices.BinarySearchFunc(onto, h, func(p carryPair, h uint64) int { return cmp.Compare(p.hash, h) })
			if !ok {
				continue
			}
			ri := int(onto[k].rec)
			for _, mi := range down {
				if u := prevUntil[ri*n+mi]; c.carries(u, now) {
					until[mi] = u
				}
			}
		}
	}
}

// deadline is until when a node sampled at now (unix ns) with PTTL pttl (ms; -1: no
// TTL) is carried: its projection, pttl less the whole milliseconds since, stays above
// zero while the time is before it (math.MaxInt64: for ever; 0: never).
func deadline(now, pttl int64) int64 {
	switch {
	case pttl == -1:
		return math.MaxInt64
	case pttl < 0:
		return 0 // not a PTTL Redis returns: nothing to carry
	case pttl > (math.MaxInt64-now)/int64(time.Millisecond):
		return math.MaxInt64
	}
	return now + pttl*int64(time.Millisecond)
}
