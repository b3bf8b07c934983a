package history

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

func openTest(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fill writes secs seconds of the workload from start, inside one session, and
// returns what it wrote.
func fill(t *testing.T, s Backend, start time.Time, secs int) []Lifecycle {
	t.Helper()
	w := newWorkload(3, start, 500)
	var all []Lifecycle
	for range secs {
		sec := w.second()
		if err := s.Write(Batch{Ended: sec}); err != nil {
			t.Fatal(err)
		}
		all = append(all, sec...)
	}
	if err := s.Write(Batch{Marks: []Mark{{Kind: MarkSession, At: start.Add(-20 * time.Minute), To: w.at}}}); err != nil {
		t.Fatal(err)
	}
	return all
}

func TestAtNamesTheHolderAtAHoldsMidpoint(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		all := fill(t, s, benchStart, 60)
		rng := rand.New(rand.NewPCG(5, 5))
		for range 300 {
			l := all[rng.IntN(len(all))]
			mid := l.AcquiredAt.Add(l.EndedAt.Sub(l.AcquiredAt) / 2)
			q, _ := inspect.ParseQuery("value:" + l.Value)
			a, err := s.At(Select{Query: q}, mid)
			if err != nil {
				t.Fatal(err)
			}
			if a.Unknown != "" || len(a.Holders) != 1 || a.Holders[0].Value != l.Value || a.Holders[0].Resource != l.Resource {
				t.Fatalf("at %s: %+v, want the holder %s of %s", mid, a, l.Value, l.Resource)
			}
			got := a.Holders[0]
			if !got.AcquiredAt.Equal(l.AcquiredAt) || !got.EndedAt.Equal(l.EndedAt) || got.End != l.End || got.Owner != l.Owner {
				t.Fatalf("read back %+v, wrote %+v", got, l)
			}
			if (got.MarginMs == nil) != (l.MarginMs == nil) || got.MarginMs != nil && *got.MarginMs != *l.MarginMs {
				t.Fatalf("margin read back %v, wrote %v", got.MarginMs, l.MarginMs)
			}
			// Every holder At names was held then: the whole answer, unfiltered.
			all, err := s.At(Select{}, mid)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range all.Holders {
				if h.AcquiredAt.After(mid) || !h.EndedAt.After(mid) {
					t.Fatalf("at %s named %s held %s..%s", mid, h.Value, h.AcquiredAt, h.EndedAt)
				}
			}
		}
	})
}

func TestAtBeforeAnyHoldNamesNoHolder(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		fill(t, s, benchStart, 5)
		a, err := s.At(Select{}, benchStart.Add(-15*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if a.Unknown != "" || len(a.Holders) != 0 {
			t.Fatalf("before any hold: %+v, want no holder and no doubt", a)
		}
		a, err = s.At(Select{}, benchStart.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Unknown, "nothing recorded before") {
			t.Fatalf("before the first session: %+v, want unknown", a)
		}
	})
}

func TestAtInsideAGapIsUnknown(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		fill(t, s, benchStart, 20)
		from, to := benchStart.Add(5*time.Second), benchStart.Add(8*time.Second)
		if err := s.Write(Batch{Marks: []Mark{{Kind: MarkGap, At: from, To: to, Master: "m2", Text: "connection reset"}}}); err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{from, from.Add(time.Second), to} {
			a, err := s.At(Select{}, at)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("feed gap from %s to %s on m2", stamp(from), stamp(to))
			if !strings.HasPrefix(a.Unknown, want) || len(a.Holders) != 0 {
				t.Fatalf("at %s: %+v, want %q and no holder", at, a, want)
			}
		}
		a, err := s.At(Select{}, to.Add(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if a.Unknown != "" || len(a.Holders) == 0 {
			t.Fatalf("after the gap: %+v, want holders", a)
		}
	})
}

func TestExpiredAndLongerThan(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		all := fill(t, s, benchStart, 30)
		end := benchStart.Add(30 * time.Second)
		want := map[string]bool{}
		long := map[string]bool{}
		for _, l := range all {
			if l.End == Expired {
				want[l.Value] = true
			}
			if l.EndedAt.Sub(l.AcquiredAt) > 20*time.Second {
				long[l.Value] = true
			}
		}
		r, err := s.Lifecycles(Filter{Since: end.Add(-24 * time.Hour), Ends: []string{Expired}}, end)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Lifecycles) != len(want) || len(want) == 0 {
			t.Fatalf("expired: %d lifecycles, want %d", len(r.Lifecycles), len(want))
		}
		for _, l := range r.Lifecycles {
			if !want[l.Value] || l.End != Expired {
				t.Fatalf("expired lists %+v", l)
			}
		}
		r, err = s.Lifecycles(Filter{LongerThan: 20 * time.Second}, end)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Lifecycles) != len(long) || len(long) == 0 {
			t.Fatalf("longer than 20s: %d lifecycles, want %d", len(r.Lifecycles), len(long))
		}
		// A window: every lifecycle held at some instant in it, and none other.
		since, until := benchStart.Add(10*time.Second), benchStart.Add(11*time.Second)
		r, err = s.Lifecycles(Filter{Since: since, Until: until}, end)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range all {
			if !l.AcquiredAt.After(until) && !l.EndedAt.Before(since) {
				n++
			}
		}
		if len(r.Lifecycles) != n {
			t.Fatalf("since..until: %d lifecycles, want %d", len(r.Lifecycles), n)
		}
	})
}

func TestRetentionDropsTheOldestFirst(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{MaxSize: 2 << 20, MaxAge: time.Hour})
	all := fill(t, s, benchStart, 120) // 60,000 lifecycles, about 3 MB
	used, _ := s.Used()
	if used <= 2<<20 {
		t.Fatalf("the store takes %d bytes: the test wants more than max_size", used)
	}
	tr, err := s.Trim(benchStart.Add(2 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	used, _ = s.Used()
	if used > 2<<20 || tr.Lifecycles == 0 {
		t.Fatalf("after trim: %d bytes, %d dropped; want at most %d", used, tr.Lifecycles, 2<<20)
	}
	r, err := s.Lifecycles(Filter{}, benchStart.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lifecycles)+tr.Lifecycles != len(all) {
		t.Fatalf("%d kept + %d dropped != %d written", len(r.Lifecycles), tr.Lifecycles, len(all))
	}
	// Oldest first: every lifecycle kept ended after every one dropped.
	kept := map[string]bool{}
	for _, l := range r.Lifecycles {
		kept[l.Value] = true
	}
	var lastDropped, firstKept time.Time
	for _, l := range all {
		if kept[l.Value] {
			if firstKept.IsZero() || l.EndedAt.Before(firstKept) {
				firstKept = l.EndedAt
			}
		} else if l.EndedAt.After(lastDropped) {
			lastDropped = l.EndedAt
		}
	}
	if !lastDropped.Before(firstKept) {
		t.Fatalf("dropped one that ended %s, kept one that ended %s", lastDropped, firstKept)
	}
	// Age: an hour later, everything goes.
	tr, err = s.Trim(benchStart.Add(2 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Lifecycles != len(r.Lifecycles) {
		t.Fatalf("max_age dropped %d, want the %d left", tr.Lifecycles, len(r.Lifecycles))
	}
}

// A limit keeps the earliest acquired, exactly the head of the whole list, and says
// it cut; held lifecycles compete for it too.
func TestLimitKeepsTheEarliestAcquired(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		fill(t, s, benchStart, 60)
		end := benchStart.Add(60 * time.Second)
		held := []Lifecycle{
			{Resource: "held:early", Key: "held:early", Value: "h#1", AcquiredAt: benchStart.Add(-time.Hour), End: Held, Masters: 3, Quorum: 2},
			{Resource: "held:late", Key: "held:late", Value: "h#2", AcquiredAt: end.Add(-time.Second), End: Held, Masters: 3, Quorum: 2},
		}
		if err := s.Write(Batch{Open: held}); err != nil {
			t.Fatal(err)
		}
		for _, f := range []Filter{{}, {Ends: []string{Expired}}, {LongerThan: 10 * time.Second}, {Since: benchStart.Add(20 * time.Second)}} {
			whole, err := s.Lifecycles(f, end)
			if err != nil {
				t.Fatal(err)
			}
			if whole.Truncated || len(whole.Lifecycles) < 50 {
				t.Fatalf("%+v: %d lifecycles, truncated %v", f, len(whole.Lifecycles), whole.Truncated)
			}
			for _, limit := range []int{1, 7, 100, len(whole.Lifecycles) / 3, len(whole.Lifecycles) - 1, len(whole.Lifecycles), len(whole.Lifecycles) + 1} {
				f.Limit = limit
				got, err := s.Lifecycles(f, end)
				if err != nil {
					t.Fatal(err)
				}
				n := min(limit, len(whole.Lifecycles))
				if len(got.Lifecycles) != n || got.Truncated != (limit < len(whole.Lifecycles)) {
					t.Fatalf("%+v: %d lifecycles, truncated %v; want %d of %d", f, len(got.Lifecycles), got.Truncated, n, len(whole.Lifecycles))
				}
				for i := range n {
					if g, w := got.Lifecycles[i], whole.Lifecycles[i]; g.Value != w.Value || !g.AcquiredAt.Equal(w.AcquiredAt) {
						t.Fatalf("%+v: #%d is %s at %v, want %s at %v", f, i, g.Value, g.AcquiredAt, w.Value, w.AcquiredAt)
					}
				}
			}
		}
	})
}
