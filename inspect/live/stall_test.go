package live

import (
	"testing"
	"time"
)

// Marks answered late against each master's fastest are a span reported stalled, once
// every master's mark is on time again; marks late by the link's own latency are not.
func TestLateMarksAreStalled(t *testing.T) {
	tr, rec := newTestTracker(3)
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	mark := func(mi int, sent, rtt time.Duration) { tr.Late(mi, t0.Add(sent), t0.Add(sent+rtt)) }
	// Master 2 is on a slow link (30 ms), steadily: never late.
	for i := range 4 {
		at := ms(50 * i)
		mark(0, at, ms(1))
		mark(1, at, ms(1))
		mark(2, at, ms(30))
	}
	if len(rec.events) != 0 {
		t.Fatalf("marks on time reported %v", rec.kinds())
	}
	// The feed reads late: every master's mark at 200 ms comes back 40 ms late.
	mark(0, ms(200), ms(41))
	mark(1, ms(200), ms(41))
	mark(2, ms(200), ms(70))
	if len(rec.events) != 0 {
		t.Fatalf("reported %v while the masters are still late", rec.kinds())
	}
	mark(0, ms(250), ms(1))
	mark(1, ms(250), ms(1))
	if len(rec.events) != 0 {
		t.Fatalf("reported %v while master 2 is still late", rec.kinds())
	}
	mark(2, ms(250), ms(30))
	if len(rec.events) != 1 || rec.events[0].Event != Stalled {
		t.Fatalf("events %v, want one stalled", rec.kinds())
	}
	e := rec.events[0]
	if !e.From.Equal(t0.Add(ms(150))) || !e.To.Equal(t0.Add(ms(270))) {
		t.Errorf("stalled from %v to %v, want from the last marks before (150 ms) to the latest late answer (270 ms)", e.From.Sub(t0), e.To.Sub(t0))
	}
	// Late for longer than lateEvery: reported while it goes on.
	for i := range 25 {
		at := ms(300 + 50*i)
		mark(0, at, ms(20))
	}
	if len(rec.events) < 2 {
		t.Errorf("a feed late for 1.25 s reported %d spans, want one at least every %v", len(rec.events)-1, lateEvery)
	}
}
