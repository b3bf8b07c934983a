package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/carry"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// fedConsole is a console over real masters wired as the CLI wires it with the live
// feed: whole polls are a feed-first poller's streams, a wake's poll its PollDeltaOf,
// both tracked; the feed is up throughout (its changes are passed by hand: Changed).
type fedConsole struct {
	*harness
	p               *poll.Poller
	servers         []*redistest.Server
	now             time.Time // the console's clock
	syncs           int       // how many times the feed has come up
	whole, deltas   int       // polls of each kind
	deltaUnanswered []string  // what the last Delta named
}

func newFedConsole(t *testing.T, servers []*redistest.Server) *fedConsole {
	t.Helper()
	var b strings.Builder
	b.WriteString("name = \"fed\"\n[inspect]\ntimeout = \"300ms\"\npoll_interval = \"1h\"\nreconcile_interval = \"1h\"\n")
	for i, s := range servers {
		fmt.Fprintf(&b, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	cfg := loadConfig(t, b.String())
	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	f := &fedConsole{servers: servers, now: time.Now(), syncs: 1}
	f.p = poll.NewPoller(cfg, pools).FeedFirst(func(int) (bool, int) { return true, f.syncs }, time.Hour, nil)
	t.Cleanup(func() {
		f.p.Close()
		for _, pl := range pools {
			pl.Close()
		}
	})
	var tr carry.Tracker
	f.harness = newHarnessWith(t, cfg, &fakeActions{t: t}, 160, 60, func(o *Options) {
		o.Poll = func(ctx context.Context) *poll.Stream {
			f.whole++
			st := f.p.PollStream(ctx)
			if whole := tr.TrackStream(st); whole != nil {
				return poll.StreamOf(whole)
			}
			return st
		}
		o.Delta = func(ctx context.Context, st *poll.Stream) *poll.Delta {
			f.deltas++
			d := f.p.PollDeltaOf(ctx, st)
			if d != nil && d.Stream != nil && tr.TrackStream(d.Stream) != nil {
				return nil
			}
			if d != nil {
				f.deltaUnanswered = d.Unanswered
			}
			return d
		}
		o.Now = func() time.Time { return f.now }
	})
	f.m.wake.ch = nil // the test sends the wakes
	f.key("r")        // read from the feed from here: a wake's poll can be a Delta
	return f
}

// change runs cmd on every master, or on those given, and reports the keys changed
// to the poller as the live feed would.
func (f *fedConsole) change(t *testing.T, on []*redistest.Server, cmd string, args ...any) {
	t.Helper()
	if on == nil {
		on = f.servers
	}
	doAll(t, on, cmd, args...)
	for _, s := range on {
		f.p.Changed(slices.Index(f.servers, s), []string{args[0].(string)})
	}
}

// doAll runs cmd on every server given.
func doAll(t *testing.T, servers []*redistest.Server, cmd string, args ...any) {
	t.Helper()
	for _, s := range servers {
		if _, err := s.Do(cmd, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// wake is a wake of the live feed after the gap since the last poll, and its poll
// poll.WakeSettle later.
func (f *fedConsole) wake() {
	f.now = f.now.Add(time.Second)
	f.send(wokenMsg{})
	f.now = f.now.Add(poll.WakeSettle)
	f.fire(isWakeDue)
}

// viewNames returns the names of t's view, in order.
func viewNames(t *table) []string {
	var out []string
	for _, i := range t.view {
		out = append(out, t.rows[i].name)
	}
	return out
}

// rebuilt is the view a table built whole from t's poll has with t's settings.
func rebuilt(t *table) []string {
	nt := newTable()
	nt.sortCol, nt.desc, nt.filter, nt.anomaliesOnly = t.sortCol, t.desc, t.filter, t.anomaliesOnly
	nt.setSnapshot(t.src, t.seq)
	return viewNames(nt)
}

// A wake's Delta patches the table in place, with a filter on and the rows sorted by
// validity, then by a master's PTTL descending with anomalies only: a row deleted
// goes, a row changed moves to its new place, a new row comes in at its place (a new
// one the filter excludes is in the rows, not the view), each as a table built whole
// from the same poll has them, and no whole poll runs. What changed is marked.
func TestDeltaPatchesTheTableInPlace(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	for i := range 20 {
		for _, s := range servers {
			// Deadlines 10 s apart: the order by validity is the order of creation.
			if _, err := s.Do("SET", fmt.Sprintf("job:%02d", i), fmt.Sprintf("w%d#%032x", i, i), "PX", 100_000+10_000*i); err != nil {
				t.Fatal(err)
			}
		}
	}
	doAll(t, servers, "SET", "other:1", "o#0123456789abcdef0123456789abcdef", "PX", 600_000)
	f := newFedConsole(t, servers)
	for range colValidity {
		f.key("s")
	}
	f.key("/")
	f.typeText("job")
	f.key("enter")
	tb := f.m.table
	if tb.sortCol != colValidity || tb.filter != "job" || len(tb.view) != 20 {
		t.Fatalf("sorted by column %d, filter %q, %d rows in view: want validity, job, 20", tb.sortCol, tb.filter, len(tb.view))
	}
	whole := f.whole

	f.change(t, nil, "DEL", "job:05")                                                        // out
	f.change(t, nil, "SET", "job:07", "n7#0123456789abcdef0123456789abcdef", "PX", 155_000)  // moves before job:06
	f.change(t, nil, "SET", "job:30", "n30#0123456789abcdef0123456789abcdef", "PX", 125_000) // in, after job:02
	f.change(t, nil, "SET", "other:2", "o#0123456789abcdef0123456789abcdef", "PX", 600_000)  // in the rows, filtered out
	f.wake()
	tb = f.m.table
	if f.whole != whole || f.deltas != 1 {
		t.Fatalf("a wake after changes: %d whole polls, %d Deltas; want the Delta alone", f.whole-whole, f.deltas)
	}
	got := viewNames(tb)
	want := []string{"job:00", "job:01", "job:02", "job:30", "job:03", "job:04", "job:07", "job:06", "job:08"}
	if !slices.Equal(got[:len(want)], want) || len(got) != 20 {
		t.Errorf("the view patched by the Delta: %v\nwant it to begin %v, 20 rows", got, want)
	}
	if w := rebuilt(tb); !slices.Equal(got, w) {
		t.Errorf("the view patched by the Delta: %v\nbuilt whole from the same poll: %v", got, w)
	}
	if _, ok := tb.rowByName("other:2"); !ok {
		t.Error("other:2, set behind the console's back, is not in the rows")
	}
	if _, ok := tb.rowByName("job:05"); ok {
		t.Error("job:05, deleted, is still in the rows")
	}
	if n := f.m.snap.Summary.Resources; n != len(tb.rows) || n != 22 {
		t.Errorf("the header counts %d locks; the table has %d rows; want 22", n, len(tb.rows))
	}
	sc := f.screen()
	for name, changed := range map[string]bool{"job:07": true, "job:30": true, "job:06": false} {
		if line := lineWith(sc, " "+name+" "); (len(line) > 1 && line[1] == '+') != changed {
			t.Errorf("%s marked changed: %q, want %v", name, line, changed)
		}
	}

	// By m2's PTTL, descending, anomalies only: rows come and go with their anomalies.
	for range colMasters + 1 - colValidity {
		f.key("s")
	}
	f.key("o")
	f.key("!")
	if len(f.m.table.view) != 0 {
		t.Fatalf("anomalies only: %v, want none yet", viewNames(f.m.table))
	}
	f.change(t, servers[:1], "SET", "job:10", "x#0123456789abcdef0123456789abcdef", "PX", 300_000) // a stray value on m1
	f.change(t, servers[:1], "SET", "job:15", "x#0123456789abcdef0123456789abcdef", "PX", 300_000)
	f.change(t, nil, "SET", "job:40", "x#0123456789abcdef0123456789abcdef", "PX", 300_000) // held everywhere: no anomaly
	f.wake()
	tb = f.m.table
	if got, want := viewNames(tb), []string{"job:15", "job:10"}; !slices.Equal(got, want) || !slices.Equal(got, rebuilt(tb)) {
		t.Errorf("anomalies only, by m2's PTTL descending: %v, want %v (built whole: %v)", got, want, rebuilt(tb))
	}
	f.change(t, servers[:1], "SET", "job:15", "w15#0000000000000000000000000000000f", "PX", 250_000) // back to its value
	f.wake()
	if got := viewNames(f.m.table); !slices.Equal(got, []string{"job:10"}) {
		t.Errorf("job:15 no longer anomalous: the view %v, want job:10 alone", got)
	}
	if f.whole != whole || f.deltas != 3 {
		t.Errorf("%d whole polls, %d Deltas; want 3 Deltas alone", f.whole-whole, f.deltas)
	}
}

// A master that does not answer a Delta's read is said so on the status line, and a
// whole poll follows at once: the header counts it down.
func TestDeltaUnansweredIsShown(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	doAll(t, servers, "SET", "job:1", "w#0123456789abcdef0123456789abcdef", "PX", 600_000)
	f := newFedConsole(t, servers)
	whole := f.whole
	servers[1].Pause()
	defer servers[1].Resume()
	for mi := range servers {
		f.p.Changed(mi, []string{"job:1"})
	}
	f.wake()
	if !slices.Equal(f.deltaUnanswered, []string{"m2"}) || f.whole != whole+1 {
		t.Fatalf("a Delta while m2 is paused: unanswered %v, %d whole polls after; want m2, and one", f.deltaUnanswered, f.whole-whole)
	}
	sc := f.screen()
	if !strings.Contains(sc, "m2 did not answer the read of the live feed's changes: polled whole") || !strings.Contains(sc, "masters 2/3 up") {
		t.Errorf("m2 did not answer a Delta, then the whole poll: the screen does not say so:\n%s", sc)
	}
}

// A wake's poll is paced by what a Delta costs, not by the last whole poll: a Delta
// starts at once after a whole poll, however long that took, and wakeGap after the
// last Delta, or as long after it as that Delta took when it took more; where no
// Delta can be had, the whole poll for the wake is paced by the last whole poll's
// cost, as without Deltas.
func TestWakePacesDeltasByTheirCost(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.Options{})
	doAll(t, servers, "SET", "job:1", "w#0123456789abcdef0123456789abcdef", "PX", 600_000)
	f := newFedConsole(t, servers)
	due := func() (d []time.Duration) {
		for _, tk := range f.ticks {
			if isWakeDue(tk.msg) {
				d = append(d, tk.d)
			}
		}
		return d
	}
	f.m.wake.took = 2 * time.Second // the last whole poll: a million rows built and sorted
	f.send(wokenMsg{})
	if d := due(); f.deltas != 0 || len(d) != 1 || d[0] != poll.WakeSettle {
		t.Fatalf("a wake right after a whole poll of 2s: %d Deltas, due in %v; want one in %v (the write's other masters)", f.deltas, d, poll.WakeSettle)
	}
	f.now = f.now.Add(poll.WakeSettle)
	f.fire(isWakeDue)
	if d := due(); f.deltas != 1 || len(d) != 0 || f.m.wake.deltaTook <= 0 {
		t.Fatalf("a wake right after a whole poll of 2s, settled: %d Deltas, due in %v; want one", f.deltas, d)
	}
	f.send(wokenMsg{})
	if d := due(); len(d) != 1 || d[0] != wakeGap {
		t.Fatalf("a wake right after a Delta of %v: due in %v, want in %v", f.m.wake.deltaTook, d, wakeGap)
	}
	f.now = f.now.Add(wakeGap)
	f.fire(isWakeDue)
	took := 300 * time.Millisecond
	f.m.wake.deltaTook = took // as if the Delta had taken that long
	f.send(wokenMsg{})
	if d := due(); f.deltas != 2 || len(d) != 1 || d[0] != took {
		t.Fatalf("a wake right after a Delta of %v: %d Deltas, due in %v; want 2, due in %v", took, f.deltas, d, took)
	}
	f.now = f.now.Add(took)
	f.fire(isWakeDue)

	// No Delta to be had (the feed resynced): the wake's is a whole poll, paced by
	// the last whole poll's cost.
	f.syncs++
	deltas, whole := f.deltas, f.whole
	f.now = f.now.Add(time.Second)
	f.m.wake.ended = f.now.Add(-wakeGap)
	f.send(wokenMsg{})
	f.now = f.now.Add(poll.WakeSettle)
	f.fire(isWakeDue)
	if d := due(); f.deltas != deltas+1 || f.whole != whole || len(d) != 1 || d[0] != 2*time.Second-wakeGap-poll.WakeSettle {
		t.Fatalf("no Delta to be had: %d Deltas tried, %d whole polls, due in %v; want one tried, none, due in %v", f.deltas-deltas, f.whole-whole, d, 2*time.Second-wakeGap-poll.WakeSettle)
	}
	f.now = f.now.Add(2 * time.Second)
	f.fire(isWakeDue)
	if f.whole != whole+1 {
		t.Errorf("the wake's whole poll: %d, want 1", f.whole-whole)
	}
}

// The table's rows keep their validity as of the last whole poll; a Delta's rows,
// taken later, come in by their deadlines: a lock with 5 s left 8 s after the poll
// goes between one that had 10 s and one that had 20 s then.
func TestDeltaSortsByDeadline(t *testing.T) {
	row := func(name string, validity int64) inspect.Resource {
		v := name + "#" + hex32(len(name))
		r := res(name, inspect.StateHeld, v, 3, same(v, validity, validity, validity)...)
		r.ValidityMs = validity
		return r
	}
	snap := func(at time.Time, rows ...inspect.Resource) *inspect.Snapshot {
		s := &inspect.Snapshot{TakenAt: at, Quorum: 2, Complete: true, Resources: rows}
		for i := 1; i <= 3; i++ {
			s.Masters = append(s.Masters, inspect.Master{Name: fmt.Sprintf("m%d", i), Up: true})
		}
		summarize(s)
		return s
	}
	later := t0.Add(8 * time.Second)
	c := row("c", 5000)
	d := &poll.Delta{TakenAt: later, Stream: poll.StreamOf(snap(later, row("a", 2000), row("b", 12000), c)), Judged: []int{2}, Built: []inspect.Resource{c}}
	var first *poll.Stream
	h := newHarnessWith(t, testConfig(), &fakeActions{t: t}, 120, 40, func(o *Options) {
		o.Poll = func(context.Context) *poll.Stream {
			first = poll.StreamOf(snap(t0, row("a", 10000), row("b", 20000)))
			return first
		}
		o.Delta = func(_ context.Context, st *poll.Stream) *poll.Delta {
			if st != first {
				t.Errorf("a Delta asked of another stream than the table's")
			}
			return d
		}
		o.Now = func() time.Time { return later }
	})
	for range colValidity {
		h.key("s")
	}
	h.m.wake.ended = later.Add(-time.Second)
	h.send(wokenMsg{})
	later = later.Add(poll.WakeSettle)
	h.fire(isWakeDue)
	if got := viewNames(h.m.table); !slices.Equal(got, []string{"a", "c", "b"}) {
		t.Errorf("by validity after the Delta: %v, want a, c, b (by deadline)", got)
	}
}

// The interval's whole poll is not lost to a Delta in flight when it is due: it runs
// once the Delta is in.
func TestTickDuringADeltaPollsWhole(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.Options{})
	f := newFedConsole(t, servers)
	whole := f.whole
	f.now = f.now.Add(time.Second)
	inFlight := f.m.startPollFor(true)
	f.send(tickMsg(f.now))
	if f.whole != whole {
		t.Fatalf("a tick with a Delta in flight: %d whole polls at once, want none", f.whole-whole)
	}
	f.run(inFlight)
	if f.deltas != 1 || f.whole != whole+1 {
		t.Errorf("the Delta in flight landed: %d Deltas, %d whole polls; want one of each", f.deltas, f.whole-whole)
	}
}
