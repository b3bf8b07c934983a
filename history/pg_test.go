package history

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/history/pgtest"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestPGTwoRecordersStoreEachLifecycleOnce: two recorders (two writers, as two serve
// replicas) record the same lifecycles, each dated by its own feed (a few hundred
// ms apart), flushing at the same moments; one started late (its first
// acquisitions unseen), one lost a span to a gap (its ends there unknown). Every
// lifecycle is stored once, as the record that saw more has it.
func TestPGTwoRecordersStoreEachLifecycleOnce(t *testing.T) {
	srv := pgtest.Start(t)
	u := srv.NewDatabase()
	a, b := openPGTest(t, u, PGOptions{}), openPGTest(t, u, PGOptions{})
	ca, cb := &clock{benchStart}, &clock{benchStart.Add(2 * time.Second)} // b starts 2 s late
	ra, err := NewRecorder(a, RecorderOptions{Now: ca.now})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := NewRecorder(b, RecorderOptions{Now: cb.now})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkload(11, benchStart.Add(3*time.Second), 200)
	rng := rand.New(rand.NewPCG(1, 2))
	var all []Lifecycle
	type evs struct{ a, b []live.Event }
	secs := make([]evs, 12)
	for i := range secs {
		for _, l := range w.second() {
			// Holds under 2 s only, so that each is acquired and ended within the run.
			if l.EndedAt.Sub(l.AcquiredAt) > 2*time.Second {
				continue
			}
			all = append(all, l)
			for side, dst := range []*[]live.Event{&secs[i].a, &secs[i].b} {
				skew := time.Duration(0)
				if side == 1 {
					skew = time.Duration(rng.IntN(600)-300) * time.Millisecond
				}
				*dst = append(*dst,
					live.Event{At: l.AcquiredAt.Add(skew), Event: live.Acquired, Resource: l.Resource, Key: l.Key, Value: l.Value, Masters: 5, Quorum: 3},
					live.Event{At: l.EndedAt.Add(skew), Event: l.End, Resource: l.Resource, Key: l.Key, Value: l.Value, Owner: l.Owner,
						Library: l.Library, Masters: 5, Quorum: 3, TTLMs: l.TTLMs, MarginMs: l.MarginMs})
			}
		}
	}
	// a's feed is cut from +8 s to +9 s: what ended then is settled by the
	// resync, dated at it, unknown; b saw it. b starts at +2 s: what was acquired
	// before is unseen to it; a saw it.
	gapFrom, gapTo := benchStart.Add(8*time.Second), benchStart.Add(9*time.Second)
	bStart := cb.t
	var settled []live.Event // a's ends the gap hid
	feed := func(r *Recorder, c *clock, es []live.Event, from, to time.Time) {
		for _, e := range es {
			if !e.At.Before(from) && e.At.Before(to) {
				if e.Event != live.Acquired && r == ra {
					e.At = gapTo
					settled = append(settled, e)
				}
				continue
			}
			if c.t.Before(e.At) {
				c.t = e.At
			}
			r.handle(item{ev: &e})
		}
	}
	// The events reach the recorders a second at a time, acquisitions first (the
	// workload lists lifecycles by end).
	order := func(es []live.Event) []live.Event {
		var acq, end []live.Event
		for _, e := range es {
			if e.Event == live.Acquired {
				acq = append(acq, e)
			} else {
				end = append(end, e)
			}
		}
		return append(acq, end...)
	}
	for i, s := range secs {
		if i == 5 {
			ra.handle(item{ev: &live.Event{At: gapFrom, Event: live.Gap, Master: "m1", From: gapFrom, Reason: "EOF"}})
		}
		if i == 6 { // the resync comes before what followed it
			for _, e := range settled {
				ra.handle(item{ev: &e})
			}
			ra.handle(item{ev: &live.Event{At: gapTo, Event: live.Resync, Master: "m1", Reason: "reconnected"}})
		}
		feed(ra, ca, order(s.a), gapFrom, gapTo)
		feed(rb, cb, order(s.b), time.Time{}, bStart)
		ca.t, cb.t = ca.t.Add(time.Second), cb.t.Add(time.Second)
		var wg sync.WaitGroup
		for _, r := range []*Recorder{ra, rb} {
			wg.Add(1)
			go func() { defer wg.Done(); r.flush() }()
		}
		wg.Wait()
	}
	if err := ra.flush(); err != nil {
		t.Fatal(err)
	}
	if err := rb.flush(); err != nil {
		t.Fatal(err)
	}

	conn := srv.Conn(u)
	var dups, rows, writers int
	ctx := context.Background()
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT key, value FROM redlockctl_lifecycles GROUP BY 1, 2 HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT writer) FROM redlockctl_lifecycles`).Scan(&rows, &writers); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		rs, _ := conn.Query(ctx, `SELECT key, value, acquired_at, ended_at, unseen, "end", writer FROM redlockctl_lifecycles WHERE (key, value) IN (SELECT key, value FROM redlockctl_lifecycles GROUP BY 1, 2 HAVING count(*) > 1) ORDER BY 1, 2`)
		for rs.Next() {
			v, _ := rs.Values()
			t.Log(v...)
		}
		rs.Close()
	}
	if dups != 0 || rows != len(all) || writers != 2 {
		t.Fatalf("%d rows from %d writers, %d lifecycles stored more than once; want %d rows from 2, none twice", rows, writers, dups, len(all))
	}
	r, err := a.Lifecycles(Filter{}, benchStart.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Lifecycle{}
	for _, l := range r.Lifecycles {
		got[l.Value] = l
	}
	for _, l := range all {
		g, ok := got[l.Value]
		if !ok {
			t.Fatalf("%s of %s not stored", l.Value, l.Resource)
		}
		// What a recorded well beats what b saw late (unseen); what b saw beats
		// what a's gap hid (unknown).
		if g.Unseen || g.End != l.End {
			t.Errorf("%s: stored %+v, want seen and %s (wrote %s..%s)", l.Value, g, l.End, l.AcquiredAt, l.EndedAt)
		}
	}
	// The midpoint of each hold, as stored (dated by whichever writer wrote it
	// first), names its holder once.
	for _, l := range all[:50] {
		l = got[l.Value]
		mid := l.AcquiredAt.Add(l.EndedAt.Sub(l.AcquiredAt) / 2)
		ans, err := b.At(Select{Resources: []string{l.Resource}}, mid)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range ans.Holders {
			if h.Value == l.Value {
				n++
			}
		}
		if ans.Unknown != "" || n != 1 {
			t.Fatalf("at %s: %+v, want %s once", mid, ans, l.Value)
		}
	}
	// Inside a's gap, b was recording: known.
	if ans, err := a.At(Select{}, gapFrom.Add(500*time.Millisecond)); err != nil || ans.Unknown != "" {
		t.Fatalf("inside one writer's gap, the other recording: %+v %v, want an answer", ans, err)
	}
}

// TestTwoServeReplicasOnOnePostgreSQL: two live feeds of the same real
// redis-servers record a workload to one database, as two serve replicas would;
// each lifecycle the workload logged is stored once, though both feeds reported
// its end.
func TestTwoServeReplicasOnOnePostgreSQL(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	srv := pgtest.Start(t)
	u := srv.NewDatabase()
	recA := startRecordingOn(t, servers, openPGTest(t, u, PGOptions{}), "")
	recB := startRecordingOn(t, servers, openPGTest(t, u, PGOptions{}), "")
	time.Sleep(200 * time.Millisecond)
	log := runWorkload(t, servers, 3*time.Second)
	got := waitRecorded(t, recA, log)
	waitCovered(t, recA.store, log)
	waitCovered(t, recB.store, log)
	recA.stop()
	recB.stop()
	for _, rec := range []*recording{recA, recB} {
		ended := map[string]bool{}
		rec.mu.Lock()
		for _, e := range rec.events {
			if e.Event == live.Released || e.Event == live.Expired {
				ended[e.Value] = true
			}
		}
		rec.mu.Unlock()
		for _, h := range log {
			if !ended[h.value] {
				t.Fatalf("a feed did not report the end of %s: the test proves nothing of it", h.value)
			}
		}
	}
	conn := srv.Conn(u)
	var dups, writers int
	ctx := context.Background()
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT key, value FROM redlockctl_lifecycles GROUP BY 1, 2 HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT writer) FROM redlockctl_spans WHERE kind = 'session'`).Scan(&writers); err != nil {
		t.Fatal(err)
	}
	if dups != 0 || writers != 2 {
		t.Fatalf("%d lifecycles stored twice, %d writers; want none twice, 2 writers", dups, writers)
	}
	for _, h := range log {
		if l := got[h.value]; l.Resource != h.resource || h.expires != (l.End == Expired) {
			t.Errorf("%s of %s stored as %+v", h.value, h.resource, l)
		}
	}
	if len(log) < 10 {
		t.Fatalf("the workload logged %d lifecycles: too few to prove anything", len(log))
	}
}

// TestPGRetentionDropsTheOldestDay: max_age drops whole days, the oldest; the
// dropped lifecycles are counted; what is left answers as before.
func TestPGRetentionDropsTheOldestDay(t *testing.T) {
	srv := pgtest.Start(t)
	u := srv.NewDatabase()
	s := openPGTest(t, u, PGOptions{MaxAge: 36 * time.Hour})
	day := benchStart // midnight UTC
	perDay := map[int][]Lifecycle{}
	for d := range 3 {
		w := newWorkload(uint64(d), day.Add(time.Duration(d)*24*time.Hour+12*time.Hour), 300)
		for range 3 {
			perDay[d] = append(perDay[d], w.second()...)
		}
		if err := s.Write(Batch{Ended: perDay[d], Marks: []Mark{
			{Kind: MarkSession, At: day.Add(time.Duration(d)*24*time.Hour + 11*time.Hour), To: day.Add(time.Duration(d)*24*time.Hour + 13*time.Hour)},
			{Kind: MarkMasterDown, At: day.Add(time.Duration(d)*24*time.Hour + 12*time.Hour), Master: "m1"},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	conn := srv.Conn(u)
	parts := func() []string {
		rows, err := conn.Query(context.Background(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'redlockctl_lifecycles'::regclass ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			out = append(out, n)
		}
		return out
	}
	if p := parts(); strings.Join(p, " ") != "redlockctl_lifecycles_20261101 redlockctl_lifecycles_20261102 redlockctl_lifecycles_20261103" {
		t.Fatalf("partitions %q: want one a day", p)
	}
	// Each day's rows are in its table of their end, the released ones in the
	// table of their duration class.
	want := map[string]int{}
	for _, ls := range perDay {
		for _, l := range ls {
			name, _, _ := pgDay(l.EndedAt)
			if l.End != Released {
				want[name+"_other"]++
				continue
			}
			i, _ := slices.BinarySearch(pgReleasedClasses, int(classOf(l.EndedAt.Sub(l.AcquiredAt).Microseconds()))+1)
			want[fmt.Sprintf("%s_released_%d", name, i)]++
		}
	}
	rows, err := conn.Query(context.Background(), `SELECT tableoid::regclass::text, count(*) FROM redlockctl_lifecycles GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		got[name] = n
	}
	rows.Close()
	if !maps.Equal(got, want) || len(got) < 9 {
		t.Fatalf("rows by table %v, want %v", got, want)
	}
	// On the third day at noon, 36 h back is the second day's midnight: the first
	// day, wholly older, goes.
	tr, err := s.Trim(day.Add(60 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Lifecycles != len(perDay[0]) || !tr.Before.Equal(day.Add(24*time.Hour)) {
		t.Fatalf("trim: %+v, want %d lifecycles before %s", tr, len(perDay[0]), day.Add(24*time.Hour))
	}
	if p := parts(); strings.Join(p, " ") != "redlockctl_lifecycles_20261102 redlockctl_lifecycles_20261103" {
		t.Fatalf("partitions after trim %q: want the first day gone", p)
	}
	r, err := s.Lifecycles(Filter{}, day.Add(72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lifecycles) != len(perDay[1])+len(perDay[2]) {
		t.Fatalf("%d lifecycles left, want %d", len(r.Lifecycles), len(perDay[1])+len(perDay[2]))
	}
	for _, l := range r.Lifecycles {
		if l.EndedAt.Before(day.Add(24 * time.Hour)) {
			t.Fatalf("kept %+v of the first day", l)
		}
	}
	marks, err := s.Marks(time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range marks {
		if m.At.Before(day.Add(24 * time.Hour)) {
			t.Fatalf("kept mark %+v of the first day", m)
		}
	}
	if len(marks) != 4 {
		t.Fatalf("%d marks left, want the 2 days' 4", len(marks))
	}
	used, err := s.Used()
	if err != nil || used <= 0 {
		t.Fatalf("used %d %v", used, err)
	}
}

// TestPGBadURLSaysWhatWithoutThePassword: a URL that does not parse, a server
// that does not answer, a wrong password: clear errors, never the password.
func TestPGBadURLSaysWhatWithoutThePassword(t *testing.T) {
	srv := pgtest.Start(t)
	u := srv.NewDatabase()
	const secret = "hunter2-secret"
	for _, tc := range []struct {
		url, password, want string
	}{
		{"postgres://redlockctl:" + secret + "@[::1/db", "", "is not a PostgreSQL URL"},
		{"mysql://redlockctl:" + secret + "@127.0.0.1/db", "", "is not a PostgreSQL URL"},
		{"postgres://redlockctl:" + secret + "@127.0.0.1:1/db?connect_timeout=2", "", "postgres://redlockctl@127.0.0.1:1/db"},
		{u, secret, "password authentication failed"},
		{strings.Replace(u, "redlockctl@", "redlockctl:"+secret+"@", 1), "", "password authentication failed"},
	} {
		p, err := OpenPG(tc.url, tc.password, PGOptions{WriteTimeout: 5 * time.Second})
		if err == nil {
			p.Close()
			t.Fatalf("%s: opened", tc.want)
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("error %q: want %q and never the password", err, tc.want)
		}
	}
	// Read-only on a database no serve recorded to.
	if _, err := OpenPG(u, pgtest.Password, PGOptions{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "no history here yet") {
		t.Errorf("read-only on an empty database: %v", err)
	}
}

// TestPGReusedValueIsTwoLifecycles: a library that reuses its value (an owner's
// constant) takes the lock again 300 ms after releasing it; both writers record
// both lifecycles, dated 50 ms apart: two records, not one.
func TestPGReusedValueIsTwoLifecycles(t *testing.T) {
	srv := pgtest.Start(t)
	u := srv.NewDatabase()
	a, b := openPGTest(t, u, PGOptions{}), openPGTest(t, u, PGOptions{})
	at := func(d time.Duration) time.Time { return benchStart.Add(d) }
	two := func(skew time.Duration) []Lifecycle {
		mk := func(from, to time.Duration) Lifecycle {
			return Lifecycle{Resource: "r", Key: "r", Value: "host-1:thread-7", Owner: "host-1", Library: "redisson", Scope: "redlock",
				Masters: 3, Quorum: 2, AcquiredAt: at(from + skew), EndedAt: at(to + skew), End: Released}
		}
		return []Lifecycle{mk(0, 5*time.Second), mk(5300*time.Millisecond, 8*time.Second)}
	}
	if err := a.Write(Batch{Ended: two(0)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(Batch{Ended: two(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := srv.Conn(u).QueryRow(context.Background(), "SELECT count(*) FROM redlockctl_lifecycles").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d records (%v), want the two lifecycles once each", n, err)
	}
}
