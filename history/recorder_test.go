package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/live"
)

// clock is a settable clock for a Recorder.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// record feeds events to a recorder on dir's store (its clock at each event's time)
// and closes it; it returns the store, reopened.
func record(t *testing.T, p place, c *clock, events ...live.Event) {
	t.Helper()
	s := p.open(t, false)
	r, err := NewRecorder(s, RecorderOptions{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		c.t = e.At
		r.handle(item{ev: &e})
	}
	c.t = c.t.Add(time.Second + coverLag) // covered up to a second past the last event
	if err := r.flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func ms(v float64) *float64 { return &v }

func TestRecorderPairsAndCounts(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		t0 := benchStart
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		c := &clock{t0}
		record(t, p, c,
			live.Event{At: at(time.Second), Event: live.Acquired, Resource: "a", Key: "lock:a", Value: "w1#00112233445566778899aabbccddeeff", Masters: 3, Quorum: 2},
			live.Event{At: at(2 * time.Second), Event: live.Extended, Resource: "a", Key: "lock:a", Value: "w1#00112233445566778899aabbccddeeff"},
			live.Event{At: at(3 * time.Second), Event: live.Extended, Resource: "a", Key: "lock:a", Value: "w1#00112233445566778899aabbccddeeff"},
			live.Event{At: at(4 * time.Second), Event: live.Released, Resource: "a", Key: "lock:a", Value: "w1#00112233445566778899aabbccddeeff",
				Owner: "w1", Library: "redlockctl", Masters: 3, Quorum: 2, TTLMs: 2000, MarginMs: ms(900.5)},
			live.Event{At: at(5 * time.Second), Event: live.Acquired, Resource: "b", Key: "lock:b", Value: "x", Masters: 2, Quorum: 2},
			live.Event{At: at(7 * time.Second), Event: live.Expired, Resource: "b", Key: "lock:b", Value: "x", Owner: "", Library: "unknown", Masters: 2, Quorum: 2, TTLMs: 2000},
			live.Event{At: at(8 * time.Second), Event: live.Released, Resource: "c", Key: "lock:c", Value: "y", Masters: 2, Quorum: 2},
		)
		s := p.open(t, true)
		r, err := s.Lifecycles(Filter{}, at(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Lifecycles) != 3 {
			t.Fatalf("%d lifecycles, want 3: %+v", len(r.Lifecycles), r.Lifecycles)
		}
		cc, a, b := r.Lifecycles[0], r.Lifecycles[1], r.Lifecycles[2]
		if a.Resource != "a" || a.Extensions != 2 || a.End != Released || *a.HoldMs() != 3000 || *a.MarginMs != 900.5 || a.Owner != "w1" || a.Scope != "redlock" || a.Unseen {
			t.Errorf("a: %+v", a)
		}
		if b.Resource != "b" || b.End != Expired || b.Value != "x" || *b.HoldMs() != 2000 {
			t.Errorf("b: %+v", b)
		}
		// c's acquisition came before the recorder: held from when it started.
		if cc.Resource != "c" || !cc.Unseen || !cc.AcquiredAt.Equal(t0) || cc.HoldMs() != nil {
			t.Errorf("c: %+v", cc)
		}
	})
}

func TestRecorderGapEndsUnknown(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		t0 := benchStart
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		c := &clock{t0}
		record(t, p, c,
			live.Event{At: at(time.Second), Event: live.Acquired, Resource: "a", Key: "lock:a", Value: "v1", Masters: 3, Quorum: 2},
			live.Event{At: at(1500 * time.Millisecond), Event: live.Acquired, Resource: "b", Key: "lock:b", Value: "v2", Masters: 3, Quorum: 2},
			live.Event{At: at(3 * time.Second), Event: live.Gap, Master: "m1", From: at(2 * time.Second), To: at(3 * time.Second), Reason: "EOF"},
			// b ends in the gap, seen by the others: a real end.
			live.Event{At: at(4 * time.Second), Event: live.Released, Resource: "b", Key: "lock:b", Value: "v2", Masters: 3, Quorum: 2},
			// a's end is settled by m1's whole read, at its time.
			live.Event{At: at(6 * time.Second), Event: live.Expired, Resource: "a", Key: "lock:a", Value: "v1", Masters: 3, Quorum: 2},
			live.Event{At: at(6 * time.Second), Event: live.Resync, Master: "m1", Reason: "reconnected"},
		)
		s := p.open(t, true)
		r, err := s.Lifecycles(Filter{}, at(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Lifecycles) != 2 || r.Lifecycles[0].End != Unknown || r.Lifecycles[1].End != Released {
			t.Fatalf("%+v: want a unknown, b released", r.Lifecycles)
		}
		if len(r.Gaps) != 1 || !r.Gaps[0].At.Equal(at(2*time.Second)) || !r.Gaps[0].To.Equal(at(6*time.Second)) {
			t.Fatalf("gaps %+v: want m1's from 2s to 6s", r.Gaps)
		}
		for _, tc := range []struct {
			at      time.Duration
			unknown bool
			holders int
		}{{1200 * time.Millisecond, false, 1}, {1700 * time.Millisecond, false, 2}, {2 * time.Second, true, 0}, {5 * time.Second, true, 0}, {6500 * time.Millisecond, false, 0}, {8 * time.Second, true, 0}} {
			a, err := s.At(Select{}, at(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			if (a.Unknown != "") != tc.unknown || len(a.Holders) != tc.holders {
				t.Errorf("at +%v: %+v, want unknown %v, %d holders", tc.at, a, tc.unknown, tc.holders)
			}
		}
	})
}

func TestRecorderRestartClosesWhatWasOpen(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		t0 := benchStart
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		c := &clock{t0}
		record(t, p, c,
			live.Event{At: at(time.Second), Event: live.Acquired, Resource: "a", Key: "lock:a", Value: "v1", Masters: 3, Quorum: 2},
			live.Event{At: at(5 * time.Second), Event: live.Acquired, Resource: "z", Key: "lock:z", Value: "v9", Masters: 3, Quorum: 2},
		)
		// Still held when the first session stopped, at 6 s.
		s := p.open(t, true)
		a, err := s.At(Select{}, at(3*time.Second))
		if err != nil || len(a.Holders) != 1 || a.Holders[0].End != Held {
			t.Fatalf("at 3s, a session running: %+v %v", a, err)
		}
		s.Close()
		c.t = at(20 * time.Second)
		record(t, p, c,
			live.Event{At: at(25 * time.Second), Event: live.Released, Resource: "a", Key: "lock:a", Value: "v1", Masters: 3, Quorum: 2},
		)
		s = p.open(t, true)
		r, err := s.Lifecycles(Filter{Select: Select{Resources: []string{"a"}}}, at(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Lifecycles) != 2 || r.Lifecycles[0].End != Unknown || !r.Lifecycles[0].EndedAt.Equal(at(6*time.Second)) ||
			!r.Lifecycles[1].Unseen || !r.Lifecycles[1].AcquiredAt.Equal(at(20*time.Second)) {
			t.Fatalf("%+v: want the first session's ended unknown at its last write, the second's seen from its start", r.Lifecycles)
		}
		a, err = s.At(Select{}, at(10*time.Second))
		if err != nil || !strings.Contains(a.Unknown, "not running") {
			t.Fatalf("between sessions: %+v %v, want unknown", a, err)
		}
		a, err = s.At(Select{}, at(3*time.Second))
		if err != nil || len(a.Holders) != 1 || a.Holders[0].Value != "v1" {
			t.Fatalf("at 3s, after the restart: %+v %v", a, err)
		}
	})
}

func TestRecorderRunFlushesEverySecond(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		r, err := NewRecorder(s, RecorderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		now := time.Now()
		r.Observe(live.Event{At: now, Event: live.Acquired, Resource: "a", Key: "lock:a", Value: "v", Masters: 1, Quorum: 1})
		r.Observe(live.Event{At: now.Add(time.Millisecond), Event: live.Released, Resource: "a", Key: "lock:a", Value: "v", Masters: 1, Quorum: 1})
		deadline := time.Now().Add(5 * time.Second)
		for {
			res, err := s.Lifecycles(Filter{}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Lifecycles) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the lifecycle was not written within 5 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestRecorderMarksMastersAndFindings(t *testing.T) {
	eachPlace(t, func(t *testing.T, p place) {
		s := p.open(t, false)
		c := &clock{benchStart}
		r, err := NewRecorder(s, RecorderOptions{Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		clockRate := inspect.Finding{Code: "clock-rate", Master: "m2", Message: "m2's clock runs 2% fast"}
		even := inspect.Finding{Code: "even-n", Message: "4 masters"}
		polls := []struct {
			masters []inspect.Master
			fleet   []inspect.Finding
		}{
			{[]inspect.Master{{Name: "m1", Up: true}, {Name: "m2", Up: true}}, nil},
			{[]inspect.Master{{Name: "m1", Up: true}, {Name: "m2", Up: false, Error: "connection refused"}}, []inspect.Finding{even}},
			{[]inspect.Master{{Name: "m1", Up: true}, {Name: "m2", Up: false}}, []inspect.Finding{even}},
			{[]inspect.Master{{Name: "m1", Up: true}, {Name: "m2", Up: true, Findings: []inspect.Finding{clockRate}}}, nil},
		}
		for i, p := range polls {
			c.t = benchStart.Add(time.Duration(i) * time.Second)
			r.handle(item{masters: p.masters, global: p.fleet})
		}
		if err := r.flush(); err != nil {
			t.Fatal(err)
		}
		marks, err := s.Marks(time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range marks {
			if m.Kind != MarkSession {
				got = append(got, fmt.Sprintf("%d %s %s %s", m.At.Sub(benchStart)/time.Second, m.Kind, m.Master, m.Code))
			}
		}
		want := []string{"1 master-down m2 ", "1 finding  even-n", "3 master-up m2 ", "3 finding m2 clock-rate", "3 finding-cleared  even-n"}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("marks\n%q\nwant\n%q", got, want)
		}
		s.Close()
	})
}
