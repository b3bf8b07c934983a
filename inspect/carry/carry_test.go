package carry

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// TestCarrierCountsAsTracker (real masters): a Carrier's stream counts what a Tracker
// counts of the whole snapshots of the same polls, poll after poll, while m1 stops
// answering: solo and brief (held on m1 only) are carried as rows of their own; gone
// (held everywhere) is carried onto its row while m2 and m3 still have it, and as a
// row of its own once they lose it; brief leaves once its projected PTTL has passed;
// once m1 answers again nothing is carried. The counts are also checked against what
// the keys say, so that both paths being wrong the same way fails too.
func TestCarrierCountsAsTracker(t *testing.T) {
	servers, p := trackedMasters(t)
	hex := "#0123456789abcdef0123456789abcdef"
	set := func(i int, args ...any) {
		t.Helper()
		if _, err := servers[i].Do("SET", args...); err != nil {
			t.Fatal(err)
		}
	}
	for i := range servers {
		set(i, "all", "a"+hex, "PX", 60000)
		set(i, "gone", "g"+hex, "PX", 60000)
	}
	set(0, "solo", "s"+hex, "PX", 60000)
	set(0, "brief", "b"+hex, "PX", 1500)

	var c Carrier
	var tr Tracker
	// poll polls once, tracks the stream with c and the whole snapshot of the same
	// poll with tr, and returns both summaries after checking that they agree.
	poll := func(what string) inspect.Summary {
		t.Helper()
		st := p.PollStream(context.Background())
		c.Track(st)
		rows := 0
		if err := st.Each(func(rs []inspect.Resource, out []byte) ([]byte, error) { rows += len(rs); return out, nil }, func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		whole := *st.Snapshot
		whole.Resources = st.Built()
		inspect.Summarize(&whole)
		ws := tr.Track(&whole).Summary
		if got := st.Snapshot.Summary; got != ws {
			t.Fatalf("%s: the Carrier's stream counts %+v, the Tracker %+v", what, got, ws)
		}
		if rows != st.Len() {
			t.Fatalf("%s: Each handed out %d rows of %d", what, rows, st.Len())
		}
		return st.Snapshot.Summary
	}
	sum := poll("all up")
	if sum.Resources != 4 || sum.Held != 2 || sum.Partial != 2 {
		t.Fatalf("all up: %+v, want 4 rows (all and gone held, solo and brief partial)", sum)
	}
	paused := time.Now()
	servers[0].Pause()
	defer servers[0].Resume()
	if sum = poll("m1 paused"); sum.MastersUp != 2 || sum.Resources != 4 || sum.Partial != 2 {
		t.Fatalf("m1 paused: %+v, want solo and brief carried (4 rows, 2 partial)", sum)
	}
	for i := 1; i < 3; i++ {
		if _, err := servers[i].Do("DEL", "gone"); err != nil {
			t.Fatal(err)
		}
	}
	if sum = poll("gone deleted on m2, m3"); sum.Resources != 4 || sum.Held != 2 || sum.Partial != 2 {
		t.Fatalf("gone deleted where it answers: %+v, want it carried from m1 as held (4 rows, 2 held)", sum)
	}
	time.Sleep(time.Until(paused.Add(1600 * time.Millisecond)))
	if sum = poll("brief's projection passed"); sum.Resources != 3 || sum.Partial != 1 {
		t.Fatalf("brief's projected PTTL passed: %+v, want 3 rows (brief gone)", sum)
	}
	servers[0].Resume()
	for range 10 { // its read from before the pause may still hold it for a poll
		if sum = poll("m1 resumed"); sum.MastersUp == 3 {
			break
		}
	}
	if sum.MastersUp != 3 || sum.Resources != 3 {
		t.Fatalf("m1 answers again: %+v, want all, gone and solo as read", sum)
	}
	st := p.PollStream(context.Background())
	c.Track(st)
	if st.Carried != (inspect.Summary{}) {
		t.Fatalf("every master answers: the Carrier counts %+v carried", st.Carried)
	}
}

// TestCarrierNeedsTheRowsHandedOut (real masters): a stream whose rows were never
// handed out left the Carrier nothing to carry from; the next stream's rows, handed
// out, are carried from.
func TestCarrierNeedsTheRowsHandedOut(t *testing.T) {
	servers, p := trackedMasters(t)
	if _, err := servers[0].Do("SET", "solo", "s#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	var c Carrier
	noop := func(rs []inspect.Resource, out []byte) ([]byte, error) { return out, nil }
	emit := func([]byte) error { return nil }
	c.Track(p.PollStream(context.Background())) // never handed out
	servers[0].Pause()
	defer servers[0].Resume()
	st := p.PollStream(context.Background())
	c.Track(st)
	if st.Carried != (inspect.Summary{}) {
		t.Fatalf("carried %+v from a poll whose rows were never handed out", st.Carried)
	}
	servers[0].Resume()
	for range 10 { // its read from before may still hold m1 for a poll
		st = p.PollStream(context.Background())
		c.Track(st)
		if err := st.Each(noop, emit); err != nil {
			t.Fatal(err)
		}
		if st.Snapshot.Summary.MastersUp == 3 {
			break
		}
	}
	if st.Len() != 1 {
		t.Fatalf("m1 resumed: %d rows, want solo", st.Len())
	}
	servers[0].Pause()
	st = p.PollStream(context.Background())
	c.Track(st)
	if st.Carried.Resources != 1 || st.Carried.Partial != 1 {
		t.Fatalf("m1 paused after a poll handed out: carried %+v, want solo (1 partial row)", st.Carried)
	}
}

// TestCarrierUntil: a record counts milliseconds from its epoch, rounded up, so that
// a node is carried while the time is before its deadline (to the millisecond); no
// TTL, or one beyond 32 bits of milliseconds, is carried until its master answers;
// moving the epoch 20 days on keeps what is still carried, and drops what has passed.
func TestCarrierUntil(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	var r carryRecs
	r.rebase(start)
	carries := func(u uint32, now time.Time) bool {
		r.n, r.until = 1, []uint32{u}
		return r.deadline(0, 0).carries(now)
	}
	soon := r.record(deadline{at: start, ms: 1500})
	for _, at := range []struct {
		now  time.Time
		want bool
	}{{start, true}, {start.Add(1499 * ms), true}, {start.Add(1500 * ms), false}} {
		if got := carries(soon, at.now); got != at.want {
			t.Errorf("a 1500 ms PTTL, %v on: carried %v, want %v", at.now.Sub(start), got, at.want)
		}
	}
	if u := r.record(deadline{at: start, ms: -1}); u != carryNever || !carries(u, start.Add(400*24*time.Hour)) {
		t.Errorf("no TTL: until %d, want carried for ever", u)
	}
	if u := r.record(nodeDeadline(true, &inspect.Node{PTTLMs: -2, Type: inspect.TypeNone}, start)); u != 0 || carries(u, start) {
		t.Errorf("PTTL -2: until %d, want nothing carried", u)
	}
	if u := r.record(deadline{at: start, ms: int64(60 * 24 * time.Hour / ms)}); u != carryNever {
		t.Errorf("a 60-day PTTL: until %d, want %d (carried until its master answers)", u, uint32(carryNever))
	}
	if u := r.record(deadline{at: start.Add(ms / 2), ms: 10}); !carries(u, start.Add(10*ms+ms/2-1)) || carries(u, start.Add(11*ms)) {
		t.Errorf("read half a millisecond past the epoch: until %d, want carried to the millisecond after its deadline", u)
	}
	long := r.record(deadline{at: start, ms: int64(25 * 24 * time.Hour / ms)})
	r.n, r.until = 3, []uint32{soon, long, carryNever}
	later := start.Add(21 * 24 * time.Hour)
	r.rebase(later)
	if !r.epoch.After(start) || !r.epoch.Before(later) {
		t.Fatalf("rebase 21 days on: epoch %v, want between %v and %v", r.epoch, start, later)
	}
	got := slices.Clone(r.until)
	if got[0] != 0 || !carries(got[1], later) || carries(got[1], start.Add(25*24*time.Hour)) || got[2] != carryNever {
		t.Errorf("after the rebase: %v; want the passed node dropped, the 25-day one carried until its deadline, the TTL-less one for ever", got)
	}
}
