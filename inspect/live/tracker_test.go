package live

import (
	"testing"
	"time"
)

// recorder collects what a tracker emits and asks to read.
type recorder struct {
	events []Event
	reads  []string
}

func newTestTracker(n int) (*Tracker, *recorder) {
	rec := &recorder{}
	names := make([]string, n)
	for i := range names {
		names[i] = string(rune('a' + i))
	}
	tr := NewTracker(names, n/2+1, func(k string) string { return k },
		func(e Event) { rec.events = append(rec.events, e) },
		func(mi int, key string) { rec.reads = append(rec.reads, key) })
	return tr, rec
}

func (r *recorder) kinds() []string {
	var out []string
	for _, e := range r.events {
		out = append(out, e.Event)
	}
	return out
}

func TestOneLifecyclePerLockOnFiveMasters(t *testing.T) {
	tr, rec := newTestTracker(5)
	t0 := time.Unix(1000, 0)
	for cycle := 0; cycle < 3; cycle++ {
		at := t0.Add(time.Duration(cycle) * 10 * time.Millisecond)
		for m := 0; m < 5; m++ {
			tr.Invalidate(m, "k", at.Add(time.Duration(m)*100*time.Microsecond))
		}
		for m := 0; m < 5; m++ {
			tr.Invalidate(m, "k", at.Add(2*time.Millisecond+time.Duration(m)*100*time.Microsecond))
		}
	}
	got := rec.kinds()
	want := []string{Acquired, Released, Acquired, Released, Acquired, Released}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	if e := rec.events[1]; e.Masters != 5 || e.HeldMs == nil || *e.HeldMs != 2 {
		t.Errorf("released %+v: want masters 5, held 2ms", e)
	}
	tr.Tick(t0.Add(2 * time.Second))
	if tr.Keys() != 0 {
		t.Errorf("%d keys still tracked after every lock ended", tr.Keys())
	}
}

// A read that finds a lock gone before its masters' feeds delivered the change (the
// read's own GET expired the key, and Redis sent the invalidation on the feed's
// connection, which another goroutine reads) ends the lifecycle once: the late
// invalidations are read, not taken for a new acquisition.
func TestReadBeforeItsInvalidationInventsNoLifecycle(t *testing.T) {
	tr, rec := newTestTracker(5)
	t0 := time.Unix(1000, 0)
	for m := 0; m < 5; m++ {
		tr.Mark(m, t0)
		tr.Invalidate(m, "k", t0.Add(time.Duration(m)*100*time.Microsecond))
	}
	read := t0.Add(500 * time.Millisecond)
	for m := 0; m < 5; m++ {
		tr.ReadDone(m, "k", read, Entry{})
	}
	for m := 0; m < 5; m++ {
		tr.Invalidate(m, "k", read.Add(time.Millisecond)) // the feed delivers it now
	}
	for m := 0; m < 5; m++ {
		tr.ReadDone(m, "k", read.Add(2*time.Millisecond), Entry{})
	}
	if got := rec.kinds(); len(got) != 2 || got[0] != Acquired || got[1] != Released {
		t.Fatalf("events %v, want one acquired and one released", got)
	}
	// A set the feed delivers after it caught up with the read is a new lifecycle.
	later := read.Add(100 * time.Millisecond)
	for m := 0; m < 5; m++ {
		tr.Mark(m, later)
		tr.Invalidate(m, "k", later.Add(time.Millisecond))
	}
	if got := rec.kinds(); len(got) != 3 || got[2] != Acquired {
		t.Fatalf("events %v, want a second acquisition once the feeds caught up", got)
	}
}

// A master that evicts a lock's key as soon as it is set (maxmemory with allkeys-lru)
// removes it before the other masters' sets have come: the lifecycle is not over while
// their feeds may still bring them, and it ends once, when it expires.
func TestEvictedAtOnceBeforeLateSetsIsNoRelease(t *testing.T) {
	tr, rec := newTestTracker(5)
	t0 := time.Unix(1000, 0)
	for m := 0; m < 5; m++ {
		tr.Mark(m, t0)
	}
	us := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Microsecond) }
	for m := 0; m < 3; m++ {
		tr.Invalidate(m, "k", us(100+m))
	}
	tr.Invalidate(0, "k", us(110)) // m0 evicted it
	for m := 3; m < 5; m++ {
		tr.Invalidate(m, "k", us(300+m)) // the lagging masters' sets, which a read settles
	}
	for m := 3; m < 5; m++ {
		tr.ReadDone(m, "k", us(1500), Entry{Present: true, Value: "v", PTTLMs: 500, Type: "string"})
	}
	tr.Tick(us(200_000))
	if got := rec.kinds(); len(got) != 1 || got[0] != Acquired {
		t.Fatalf("events %v, want only the acquisition while four masters hold it: %+v", got, rec.events)
	}
	for m := 1; m < 5; m++ { // the tracker's reads after ReadDelay
		tr.ReadDone(m, "k", us(200_000), Entry{Present: true, Value: "v", PTTLMs: 300, Type: "string"})
	}
	for m := 1; m < 5; m++ {
		tr.Invalidate(m, "k", us(400_000+m)) // released on the four (read where its TTL is known)
	}
	for m := 1; m < 5; m++ {
		tr.ReadDone(m, "k", us(401_000), Entry{})
	}
	tr.Tick(us(700_000))
	if got := rec.kinds(); len(got) != 2 || got[1] != Released || rec.events[1].Masters != 5 {
		t.Fatalf("events %v (%+v), want one end, after the four removals", got, rec.events)
	}
	// Without lagging masters (every feed delivered past the removal), the end is at once.
	for m := 0; m < 5; m++ {
		tr.Mark(m, us(800_000))
		tr.Invalidate(m, "k", us(800_100+m))
	}
	for m := 0; m < 3; m++ {
		tr.Invalidate(m, "k", us(840_000+m))
	}
	if got := rec.kinds(); len(got) != 4 || got[3] != Released {
		t.Fatalf("events %v, want the second lifecycle released at its third removal", got)
	}
}
