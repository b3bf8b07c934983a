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
