package poll

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// fedPoller is a feed-first poller over servers whose feed state the test sets (up,
// syncs), with the keys a feed would report passed by hand (Changed), and the
// mismatches it logs.
type fedPoller struct {
	*Poller
	mu     sync.Mutex
	up     bool
	syncs  int
	logged []string
}

func newFedPoller(t *testing.T, servers []*redistest.Server, every time.Duration, edits ...func(*config.Config)) *fedPoller {
	c := testConfig(t, servers, func(c *config.Config) {
		c.Inspect.ScanCount = 10
		for _, edit := range edits {
			edit(c)
		}
	})
	f := &fedPoller{Poller: newPoller(t, c), up: true, syncs: 1}
	f.FeedFirst(func(int) (bool, int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.up, f.syncs
	}, every, func(master, key, kind string) {
		f.mu.Lock()
		f.logged = append(f.logged, master+" "+key+" "+kind)
		f.mu.Unlock()
	})
	return f
}

// poll is one PollStream whose rows are all handed out (as serve's tally does), and
// the rows.
func (f *fedPoller) poll(t *testing.T) (*Stream, []inspect.Resource) {
	t.Helper()
	st := f.PollStream(context.Background())
	var mu sync.Mutex // chunks of rows are built on several goroutines at once
	var rows []inspect.Resource
	st.Each(func(rs []inspect.Resource, out []byte) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			r.Nodes = append([]inspect.Node(nil), r.Nodes...)
			rows = append(rows, r)
		}
		return out, nil
	}, func([]byte) error { return nil })
	return st, rows
}

// pollFed polls whole, then fed for the first time, and returns a third poll: the
// first of a fed poller's streams that the tests patch.
func (f *fedPoller) pollFed(t *testing.T) (*Stream, []inspect.Resource) {
	t.Helper()
	f.poll(t)
	f.poll(t) // fed from here
	return f.poll(t)
}

// streamRow builds st's row of resource name.
func streamRow(st *Stream, name string) (inspect.Resource, bool) {
	for i := range st.Len() {
		if r := st.Row(i); r.Resource == name {
			return r, true
		}
	}
	return inspect.Resource{}, false
}

func findRow(rows []inspect.Resource, name string) *inspect.Resource {
	for i := range rows {
		if rows[i].Resource == name {
			return &rows[i]
		}
	}
	return nil
}

// A fed master's rows follow the keys its feed reports changed, read alone; a held
// key's PTTL counts down from the deadline read then; the clock is read, the keys
// are not scanned.
func TestFeedFirstReadsOnlyChangedKeys(t *testing.T) {
	servers := startLocks(t, 50, "lock:k%d")
	f := newFedPoller(t, servers, time.Hour)
	f.poll(t) // whole: the column is read under syncs 1
	if !f.FullDue() {
		t.Error("read whole with every feed up: no whole poll due to start feeding")
	}
	f.poll(t) // fed from here
	if f.FullDue() {
		t.Error("fed and tallied: a whole poll due")
	}
	if fed := f.Fed(); len(fed) != 3 || !fed[0] || !fed[1] || !fed[2] {
		t.Fatalf("fed %v, want every master fed", fed)
	}
	before := commands(t, servers[0])
	time.Sleep(300 * time.Millisecond)
	_, rows := f.poll(t)
	r := findRow(rows, "lock:k7")
	if r == nil || r.State != inspect.StateHeld {
		t.Fatalf("lock:k7: %+v, want held", r)
	}
	if p := r.Nodes[0].PTTLMs; p > 600000-300 || p < 600000-5000 {
		t.Errorf("lock:k7's PTTL %d ms, want counted down from 600000 by the time since it was read", p)
	}
	after := commands(t, servers[0])
	if after["scan"] != before["scan"] || after["mget"] != before["mget"] {
		t.Errorf("a fed poll with no change scanned or read keys: scan %d -> %d, mget %d -> %d", before["scan"], after["scan"], before["mget"], after["mget"])
	}
	if after["time"] <= before["time"] {
		t.Errorf("a fed poll read no clock")
	}

	// Changed behind the poller's back, reported by the feed: a release on every
	// master, a new lock, an extension.
	do(t, servers, "DEL", "lock:k1")
	do(t, servers, "SET", "lock:new", "v#"+hex32, "PX", 30000)
	do(t, servers, "PEXPIRE", "lock:k2", 900000)
	for mi := range servers {
		f.Changed(mi, []string{"lock:k1", "lock:new", "lock:k2"})
	}
	_, rows = f.poll(t)
	if r := findRow(rows, "lock:k1"); r != nil {
		t.Errorf("lock:k1 released, still a row: %+v", r)
	}
	if r := findRow(rows, "lock:new"); r == nil || r.State != inspect.StateHeld {
		t.Errorf("lock:new: %+v, want held", r)
	}
	if r := findRow(rows, "lock:k2"); r == nil || r.Nodes[1].PTTLMs < 890000 {
		t.Errorf("lock:k2 extended to 900 s: %+v", r)
	}
	if len(rows) != 50 {
		t.Errorf("%d rows, want 50", len(rows))
	}
	if m := f.Mismatches(); m[0][0]+m[0][1]+m[0][2]+m[0][3] != 0 {
		t.Errorf("mismatches %v, want none: every change was reported", m)
	}
}

// commands returns the calls of each command the server has served (INFO
// commandstats), lower case.
func commands(t *testing.T, s *redistest.Server) map[string]int64 {
	t.Helper()
	v, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(v.([]byte)), "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		var n int64
		fmt.Sscanf(rest, "%d", &n)
		out[name] = n
	}
	return out
}

// startLocks starts 3 masters holding n locks, named by format and the lock's index,
// for 10 minutes.
func startLocks(t *testing.T, n int, format string) []*redistest.Server {
	t.Helper()
	servers := redistest.StartN(t, 3, redistest.Options{})
	for i := range n {
		do(t, servers, "SET", fmt.Sprintf(format, i), "w#"+hex32, "PX", 600000)
	}
	return servers
}

// A Delta carries exactly the change of the counts a whole poll finds.
func TestFeedFirstDeltaMatchesWholePoll(t *testing.T) {
	servers := startLocks(t, 30, "lock:k%d")
	do(t, servers[:1], "SET", "lock:partial", "p#"+hex32, "PX", 600000)
	f := newFedPoller(t, servers, time.Hour)
	f.poll(t)
	st, _ := f.poll(t)
	sum := st.Snapshot.Summary
	if d := f.PollDelta(context.Background()); d == nil || d.Rows != (inspect.Summary{}) {
		t.Fatalf("a delta of nothing: %+v, want an empty one", d)
	}
	do(t, servers, "DEL", "lock:k3")                                   // held -> gone
	do(t, servers[1:], "SET", "lock:partial", "p#"+hex32, "PX", 60000) // partial -> held
	do(t, servers[:2], "SET", "lock:two", "t#"+hex32, "PX", 60000)     // a new held one
	do(t, servers[:1], "SET", "lock:k4", "x#"+hex32, "PX", 60000)      // held, a stray value
	for mi := range servers {
		f.Changed(mi, []string{"lock:k3", "lock:partial", "lock:two", "lock:k4"})
	}
	d := f.PollDelta(context.Background())
	if d == nil {
		t.Fatal("no delta")
	}
	got := sum
	got.Resources += d.Rows.Resources
	got.Held += d.Rows.Held
	got.Partial += d.Rows.Partial
	st, _ = f.poll(t)
	want := st.Snapshot.Summary
	if got.Resources != want.Resources || got.Held != want.Held || got.Partial != want.Partial {
		t.Errorf("last counts + delta: %d rows, %d held, %d partial; a whole poll: %d, %d, %d",
			got.Resources, got.Held, got.Partial, want.Resources, want.Held, want.Partial)
	}
	if d.Anomalies[inspect.AnomalyStray] != 1 {
		t.Errorf("delta anomalies %v, want one more stray value", d.Anomalies)
	}
}

// A master silent during a Delta is named in it (a silence between two whole polls
// is seen nowhere else), the Delta carries nothing more, and a whole poll is due.
func TestFeedFirstDeltaNamesSilentMaster(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	do(t, servers, "SET", "lock:k", "w#"+hex32, "PX", 600000)
	f := newFedPoller(t, servers, time.Hour)
	f.poll(t)
	f.poll(t)
	if d := f.PollDelta(context.Background()); d == nil || len(d.Unanswered) != 0 {
		t.Fatalf("a delta with every master answering: %+v, want an empty one", d)
	}
	servers[1].Pause()
	for mi := range servers {
		f.Changed(mi, []string{"lock:k"})
	}
	d := f.PollDelta(context.Background())
	servers[1].Resume()
	if d == nil || !slices.Equal(d.Unanswered, []string{"m2"}) || d.Rows != (inspect.Summary{}) || len(d.Configured) != 0 {
		t.Fatalf("a delta while m2 is paused: %+v, want one naming m2 and nothing else", d)
	}
	if !f.FullDue() {
		t.Error("no whole poll due after a delta a master did not answer")
	}
	st, _ := f.poll(t)
	for _, m := range st.Snapshot.Masters {
		if !m.Up {
			t.Errorf("after the pause, %s down: %s", m.Name, m.Error)
		}
	}
}

// PollDeltaOf a stream whose rows the caller still builds (the console's) writes a
// copy of its tables: the stream keeps its rows while the Delta is read, and the
// Delta's Stream has the rows a whole poll then finds, reached from the stream's by
// Dropped and Judged. A Delta of a stream that is not the last is refused.
func TestFeedFirstDeltaOfPatchesTheStream(t *testing.T) {
	servers := startLocks(t, 30, "lock:k%02d")
	do(t, servers[:1], "SET", "lock:partial", "p#"+hex32, "PX", 600000)
	f := newFedPoller(t, servers, time.Hour)
	st, before := f.pollFed(t)
	rowsOf := func(st *Stream) []inspect.Resource {
		out := make([]inspect.Resource, st.Len())
		for i := range out {
			out[i] = st.Row(i)
		}
		return out
	}
	do(t, servers, "DEL", "lock:k03")                                                                          // gone
	do(t, servers[1:], "SET", "lock:partial", "p#"+hex32, "PX", 600000)                                        // partial -> held
	do(t, servers, "SET", "lock:k10b", "n#"+hex32, "PX", 60000)                                                // new, between k10 and k11
	do(t, servers[:1], "SET", "lock:k20", "x#"+hex32, "PX", 60000)                                             // held, a stray value
	do(t, servers, "SET", "lock:zz", "z#"+hex32, "PX", 60000)                                                  // new, last
	do(t, servers, "SET", "lock:aa", "a#"+hex32, "PX", 60000)                                                  // new, first
	changed := []string{"lock:k03", "lock:partial", "lock:k10b", "lock:k20", "lock:zz", "lock:aa", "lock:k05"} // k05: reported, unchanged
	for mi := range servers {
		f.Changed(mi, changed)
	}
	done := make(chan struct{})
	go func() { // st's rows are built while the Delta is read (go test -race)
		defer close(done)
		for range 5 {
			rowsOf(st)
		}
	}()
	d := f.PollDeltaOf(context.Background(), st)
	<-done
	if d == nil || d.Stream == nil {
		t.Fatalf("PollDeltaOf: %+v, want a Delta with its Stream", d)
	}
	if d.Stream.Plan.c == st.Plan.c {
		t.Fatal("the Delta wrote the tables of the stream it was asked of")
	}
	if got := rowsOf(st); len(got) != len(before) || findRow(got, "lock:k03") == nil || findRow(got, "lock:k20").Value != "w#"+hex32 {
		t.Errorf("the stream asked of changed: %d rows (want %d), lock:k03 %+v, lock:k20 %+v", len(got), len(before), findRow(got, "lock:k03"), findRow(got, "lock:k20"))
	}
	// st's rows, less Dropped, with Built at Judged, are the Stream's.
	var patched []string
	next, j := 0, 0
	for i, r := range before {
		if next < len(d.Dropped) && d.Dropped[next] == i {
			next++
			continue
		}
		for j < len(d.Judged) && d.Judged[j] == len(patched) {
			patched = append(patched, d.Built[j].Resource)
			j++
		}
		patched = append(patched, r.Resource)
	}
	for ; j < len(d.Judged); j++ {
		patched = append(patched, d.Built[j].Resource)
	}
	got := rowsOf(d.Stream)
	var names []string
	for _, r := range got {
		names = append(names, r.Resource)
	}
	if !slices.Equal(patched, names) {
		t.Errorf("st's rows patched by the Delta: %v\nthe Delta's Stream: %v", patched, names)
	}
	for j, i := range d.Judged {
		if got[i].Resource != d.Built[j].Resource || got[i].State != d.Built[j].State || got[i].Value != d.Built[j].Value {
			t.Errorf("Built[%d] %s %s, Stream.Row(%d) %s %s", j, d.Built[j].Resource, d.Built[j].State, i, got[i].Resource, got[i].State)
		}
	}
	if len(d.Dropped) != 4 || len(d.Judged) != 6 { // k03, partial, k20, k05; and partial, k10b, k20, zz, aa, k05
		t.Errorf("dropped %v, judged %v: want 4 and 6", d.Dropped, d.Judged)
	}
	sum := d.Stream.Snapshot.Summary
	if !d.Stream.Snapshot.TakenAt.Equal(d.TakenAt) {
		t.Errorf("the Stream taken at %v, the Delta at %v", d.Stream.Snapshot.TakenAt, d.TakenAt)
	}
	// A stream that is not the last one is refused; the Delta's own is not.
	if old := f.PollDeltaOf(context.Background(), st); old != nil {
		t.Errorf("a Delta of a stream a Delta followed: %+v, want nil", old)
	}
	if d2 := f.PollDeltaOf(context.Background(), d.Stream); d2 == nil || d2.Stream == nil || d2.Stream.Len() != d.Stream.Len() {
		t.Errorf("a Delta of the Delta's Stream: %+v, want one of %d rows", d2, d.Stream.Len())
	}
	whole, rows := f.poll(t)
	want := whole.Snapshot.Summary
	want.MastersUp, want.Findings = sum.MastersUp, sum.Findings
	if sum != want {
		t.Errorf("the Stream's counts %+v, a whole poll's %+v", sum, want)
	}
	if len(rows) != len(got) {
		t.Errorf("%d rows in the Stream, %d in a whole poll", len(got), len(rows))
	}
	for i := range min(len(rows), len(got)) {
		if rows[i].Resource != got[i].Resource || rows[i].State != got[i].State || rows[i].Value != got[i].Value || rows[i].Holders != got[i].Holders {
			t.Errorf("row %d: the Stream's %s %s %d, a whole poll's %s %s %d", i, got[i].Resource, got[i].State, got[i].Holders, rows[i].Resource, rows[i].State, rows[i].Holders)
		}
	}
}

// A deadline read over a link slow one way is off by up to half the round trip: a
// reconciliation over a fast link finds it moved by that much, which is no mismatch;
// a deadline moved unseen by more still is one.
func TestFeedFirstReconciliationAllowsForTheRoundTrip(t *testing.T) {
	servers := redistest.StartN(t, 1, redistest.Options{})
	proxy := servers[0].SlowProxy(300 * time.Millisecond) // replies only
	do(t, servers, "SET", "lock:k", "w#"+hex32, "PX", 600000)
	do(t, servers, "SET", "lock:moved", "w#"+hex32, "PX", 600000)
	f := newFedPoller(t, servers, 50*time.Millisecond, func(c *config.Config) {
		c.Masters[0].Addr = proxy.Addr
		c.Inspect.Timeout = 2 * time.Second
	})
	f.poll(t) // whole, 150 ms late: the read is taken at the middle of its round trip
	proxy.SetDelay(0)
	f.poll(t) // fed from here: the reconciliation reads over a fast link
	do(t, servers, "PEXPIRE", "lock:moved", 1200000)
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(100 * time.Millisecond)
		f.poll(t)
		if m := f.Mismatches(); m[0][3] > 0 {
			time.Sleep(suspectWait + 50*time.Millisecond)
			f.poll(t)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mismatches %v: the deadline moved unseen never counted", f.Mismatches())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.logged) != 1 || f.logged[0] != "m1 lock:moved ttl" {
		t.Errorf("logged %q, want only lock:moved's ttl (lock:k's deadline was read over a slow link)", f.logged)
	}
}

// A reconciliation finds what the feed did not report, counts it once no change of
// the key explains it, logs it, and fixes the rows; where the feed was cut (a gap:
// its syncs change), the master is read whole and compared.
func TestFeedFirstReconciliation(t *testing.T) {
	servers := startLocks(t, 40, "lock:k%d")
	f := newFedPoller(t, servers, 50*time.Millisecond)
	f.poll(t)
	f.poll(t)
	// Unreported: a key gone, one new, one of another value, one extended.
	do(t, servers[:1], "DEL", "lock:k5")
	do(t, servers[:1], "SET", "lock:unseen", "u#"+hex32, "PX", 600000)
	do(t, servers[:1], "SET", "lock:k6", "z#"+hex32, "PX", 600000)
	do(t, servers[:1], "PEXPIRE", "lock:k7", 1200000)
	deadline := time.Now().Add(20 * time.Second)
	want := []uint64{1, 1, 1, 1} // missing, gone, value, ttl
	for {
		time.Sleep(100 * time.Millisecond)
		_, rows := f.poll(t)
		if m := f.Mismatches(); fmt.Sprint(m[0]) == fmt.Sprint(want) {
			if r := findRow(rows, "lock:unseen"); r == nil || r.Nodes[0].PTTLMs < 0 {
				t.Errorf("lock:unseen not fixed: %+v", r)
			}
			if r := findRow(rows, "lock:k5"); r == nil || r.Nodes[0].PTTLMs != -2 {
				t.Errorf("lock:k5 not fixed on m1: %+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mismatches %v, want %v on m1", f.Mismatches(), want)
		}
	}
	f.mu.Lock()
	if len(f.logged) != 4 || !strings.Contains(strings.Join(f.logged, "\n"), "m1 lock:unseen missing") {
		t.Errorf("logged %q, want one line per mismatch", f.logged)
	}
	f.mu.Unlock()
	if m := f.Mismatches(); m[1][0]+m[1][1]+m[1][2]+m[1][3] != 0 {
		t.Errorf("m2 mismatches %v, want none", m[1])
	}

	// A change reported by the feed is no mismatch, even when a reconciliation reads
	// it first.
	do(t, servers[:1], "SET", "lock:told", "t#"+hex32, "PX", 600000)
	f.Changed(0, []string{"lock:told"})
	// A gap: the feed comes back (syncs 2) after a change it never reported.
	do(t, servers[1:2], "DEL", "lock:k9")
	f.mu.Lock()
	f.syncs = 2
	f.mu.Unlock()
	f.poll(t) // m2 read whole, compared with what the feed kept
	time.Sleep(suspectWait + 50*time.Millisecond)
	_, rows := f.poll(t)
	if m := f.Mismatches(); m[1][1] != 1 || m[0][0] != 1 {
		t.Errorf("after the gap: m1 %v (lock:told was reported), m2 %v (want one gone)", m[0], m[1])
	}
	if r := findRow(rows, "lock:k9"); r == nil || r.Nodes[1].PTTLMs != -2 {
		t.Errorf("lock:k9 after the gap: %+v, want absent on m2", r)
	}
	if fed := f.Fed(); !fed[1] {
		t.Errorf("m2 not fed again after the gap's whole read: %v", fed)
	}

	// Down (degraded, or in a gap): polled whole every time, never compared.
	f.mu.Lock()
	f.up = false
	f.mu.Unlock()
	f.poll(t)
	do(t, servers[2:], "DEL", "lock:k11")
	_, rows = f.poll(t)
	if fed := f.Fed(); fed[2] {
		t.Errorf("m3 fed while its feed is down")
	}
	if f.FullDue() {
		t.Error("a whole poll due at a change while the feeds are down (they are polled every interval)")
	}
	if r := findRow(rows, "lock:k11"); r == nil || r.Nodes[2].PTTLMs != -2 {
		t.Errorf("lock:k11 deleted while polled: %+v, want absent on m3", r)
	}
	time.Sleep(suspectWait + 50*time.Millisecond)
	f.poll(t)
	if m := f.Mismatches(); m[2][1] != 0 {
		t.Errorf("m3 polled: mismatches %v, want none", m[2])
	}
}

// A stream handed out and not recycled (the console keeps the last poll's to draw
// from, dump --watch's carry.Tracker its plan) still builds the rows of its own poll
// while the next fed poll writes the changes the feed reported: that poll writes a
// copy of the kept tables. A stream recycled (serve) gives its tables to the next
// poll, which writes them in place.
func TestFeedFirstKeepsAStreamHandedOut(t *testing.T) {
	servers := startLocks(t, 20, "lock:k%d")
	f := newFedPoller(t, servers, time.Hour)
	held, _ := f.pollFed(t)
	do(t, servers, "DEL", "lock:k1")
	do(t, servers, "SET", "lock:k2", "x#"+hex32, "PX", 600000)
	for mi := range servers {
		f.Changed(mi, []string{"lock:k1", "lock:k2"})
	}
	// Rows of the held stream are built while the next poll writes.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			streamRow(held, "lock:k2")
		}
	}()
	next, rows := f.poll(t)
	<-done
	if r := findRow(rows, "lock:k1"); r != nil {
		t.Errorf("the next poll: lock:k1 released, still a row: %+v", r)
	}
	if r := findRow(rows, "lock:k2"); r == nil || r.Value != "x#"+hex32 {
		t.Errorf("the next poll: lock:k2 %+v, want the new value", r)
	}
	if r, ok := streamRow(held, "lock:k1"); !ok || r.State != inspect.StateHeld {
		t.Errorf("the stream handed out before: lock:k1 %+v (found %v), want held as it was read", r, ok)
	}
	if r, ok := streamRow(held, "lock:k2"); !ok || r.Value != "w#"+hex32 {
		t.Errorf("the stream handed out before: lock:k2 %+v, want its old value", r)
	}
	if held.Plan.c == next.Plan.c {
		t.Error("the next poll wrote the tables of a stream not recycled")
	}
	tables := next.Plan.c
	f.Recycle(next)
	if last, _ := f.poll(t); last.Plan.c != tables {
		t.Error("a recycled stream's tables were not the next poll's")
	}
}

// While no master's feed is up (at start), each poll reads every master whole and
// compares nothing with the kept table: once recycled, its memory holds the next
// poll's table, instead of a copy beside it (at 5 × 1M keys, serve's peak).
func TestFeedFirstWholePollsReuseTheTable(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.Options{})
	const keys = 5000 // each whole read writes over more cells than compaction allows
	for _, s := range servers {
		if err := redistest.PlantLocks(s.Pool, "lock:k", keys, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	f := newFedPoller(t, servers, time.Hour, func(c *config.Config) { c.Inspect.ScanCount = 1000 })
	f.mu.Lock()
	f.up = false
	f.mu.Unlock()
	last, want := f.poll(t)
	if len(want) < keys/2 {
		t.Fatalf("%d rows of %d keys", len(want), keys)
	}
	for range 3 {
		cells := last.Plan.c.cells
		f.Recycle(last)
		var rows []inspect.Resource
		last, rows = f.poll(t)
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d as the first poll", len(rows), len(want))
		}
		if &last.Plan.c.cells[0] != &cells[:1][0] {
			t.Fatal("a whole poll with no feed up did not reuse the recycled table's cells")
		}
	}
}

// A copy of an arena (share) reads its strings, writes its own in chunks of its own,
// and never hands the original's chunks on to be written again (recycled).
func TestArenaShareKeepsTheOriginal(t *testing.T) {
	var a arena
	held := a.ref([]byte("held by a stream"))
	b := a.share()
	mine := b.ref([]byte("written by the copy"))
	if got := b.get(held); got != "held by a stream" || b.get(mine) != "written by the copy" {
		t.Fatalf("the copy reads %q and %q", got, b.get(mine))
	}
	for _, ch := range b.recycled() {
		if &ch[:1][0] == &a.chunks[0][:1][0] {
			t.Fatal("the copy recycles a chunk of the original's")
		}
	}
	if len(b.recycled()) != 1 {
		t.Errorf("the copy recycles %d chunks, want its own one", len(b.recycled()))
	}
	if a.get(held) != "held by a stream" {
		t.Errorf("the original reads %q", a.get(held))
	}
}

// A Delta counts the values that hold several keys (one node-redlock lock over
// several resources) from the last Delta's hashes, taking out and putting in only the
// changed keys' values; where one of those is met twice, or was, it counts them whole
// (a key gone keeps its last values in the tables, as a whole count sees them). Each
// Delta's count is the one a plan counts from nothing. (Here every lock:k key holds
// one value: met 30 times, it is no changed key's.)
func TestDeltaCountsSharedValuesFromTheLast(t *testing.T) {
	servers := startLocks(t, 30, "lock:k%02d")
	f := newFedPoller(t, servers, time.Hour)
	st, _ := f.pollFed(t)
	const a, b = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	step := func(name string, cmds [][]any) *Stream {
		t.Helper()
		var keys []string
		for _, c := range cmds {
			do(t, servers, c[0].(string), c[1:]...)
			keys = append(keys, c[1].(string))
		}
		for mi := range servers {
			f.Changed(mi, keys)
		}
		d := f.PollDeltaOf(context.Background(), st)
		if d == nil || d.Stream == nil {
			t.Fatalf("%s: PollDeltaOf %+v, want a Delta with its Stream", name, d)
		}
		pl := d.Stream.Plan
		if whole := pl.sharedValues(); !maps.Equal(pl.shared, whole) {
			t.Errorf("%s: the Delta counted %v shared, a count from nothing %v", name, pl.shared, whole)
		}
		if pl.hashes == nil {
			t.Fatalf("%s: the Delta's plan kept no hashes for the next", name)
		}
		return d.Stream
	}
	evidence := func(st *Stream, key string) string {
		r, ok := streamRow(st, key)
		if !ok {
			t.Fatalf("no row %s", key)
		}
		return r.LibraryEvidence
	}
	st = step("one new value", [][]any{{"SET", "lock:n1", a, "PX", 60000}})
	first := st.Plan.hashes
	st = step("another", [][]any{{"SET", "lock:n2", b, "PX", 60000}})
	if st.Plan.hashes.seed != first.seed {
		t.Error("a Delta of distinct values counted them whole, not from the last")
	}
	st = step("the same value on a second key", [][]any{{"SET", "lock:n3", a, "PX", 60000}})
	if h := st.Plan.hashes; !metTwice(h.hs, []uint64{maphash.String(h.seed, a)}) || st.Plan.shared[a] != 2 {
		t.Errorf("shared %v: want %s on 2 keys, its hash met twice", st.Plan.shared, a)
	}
	for _, k := range []string{"lock:n1", "lock:n3"} {
		if ev := evidence(st, k); !strings.Contains(ev, "the same value holds 2 keys") {
			t.Errorf("%s: evidence %q does not say one value holds two keys", k, ev)
		}
	}
	st = step("the second key gone", [][]any{{"DEL", "lock:n3"}})
	if st.Plan.shared[a] > 1 {
		t.Errorf("shared %v after the second key went: want %s on one key at most", st.Plan.shared, a)
	}
	counted := st.Plan.hashes
	st = step("a value changed", [][]any{{"SET", "lock:n2", a + "x", "PX", 60000}})
	if st.Plan.hashes.seed != counted.seed {
		t.Error("a Delta of distinct values after a count from nothing counted whole again")
	}
	if ev := evidence(st, "lock:n1"); strings.Contains(ev, "the same value holds") {
		t.Errorf("lock:n1: evidence %q after its value's second key went", ev)
	}
}
