package live

import (
	"slices"
	"testing"
	"time"
)

// named applies one named change on every master in ms at at, each followed by the
// invalidation Redis sends for it at the end of the event-loop iteration.
func named(tr *Tracker, ms []int, key string, at time.Time, ops ...Op) {
	for _, m := range ms {
		for _, op := range ops {
			tr.Change(m, key, op, at)
		}
		tr.Invalidate(m, key, at)
	}
}

// A release and the next holder's set in one event-loop iteration are one
// invalidation, but two notifications: both lifecycles are counted, each once, with
// source keyspace, and the invalidations that follow named changes count nothing.
func TestNamedChangesCountMergedCycles(t *testing.T) {
	tr, rec := newTestTracker(3)
	all := []int{0, 1, 2}
	t0 := time.Unix(1000, 0)
	named(tr, all, "k", t0, OpSet, OpExpire)
	// Master 2 gets the release and the next set in one iteration.
	named(tr, []int{0, 1}, "k", t0.Add(2*time.Millisecond), OpDel)
	named(tr, []int{0, 1}, "k", t0.Add(3*time.Millisecond), OpSet, OpExpire)
	named(tr, []int{2}, "k", t0.Add(3*time.Millisecond), OpDel, OpSet, OpExpire)
	named(tr, all, "k", t0.Add(5*time.Millisecond), OpDel)
	want := []string{Acquired, Released, Acquired, Released}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i, e := range rec.events {
		if masters := 2 + i%2; e.Source != SourceKeyspace || e.Masters != masters {
			t.Errorf("%s: source %q, masters %d; want keyspace, %d", e.Event, e.Source, e.Masters, masters)
		}
	}
	if e := rec.events[1]; e.HeldMs == nil || *e.HeldMs != 2 {
		t.Errorf("first release held %s ms, want 2", fmtMsTest(e.HeldMs))
	}
	if len(rec.reads) != 0 {
		t.Errorf("named changes of young locks asked reads: %v", rec.reads)
	}
}

func fmtMsTest(ms *float64) string {
	if ms == nil {
		return "unknown"
	}
	return time.Duration(*ms * float64(time.Millisecond)).String()
}

// Expired and evicted are named as such, whatever the TTL read; a removal the
// notifications do not name (a change of a kind not enabled) is inferred from its
// invalidation, with source tracking.
func TestNamedExpiryAndEviction(t *testing.T) {
	tr, rec := newTestTracker(3)
	all := []int{0, 1, 2}
	t0 := time.Unix(1000, 0)
	named(tr, all, "x", t0, OpSet, OpExpire)
	named(tr, all, "x", t0.Add(10*time.Millisecond), OpExpired) // early: no deadline known, still an expiry
	named(tr, all, "e", t0, OpSet, OpExpire)
	named(tr, []int{0, 1}, "e", t0.Add(20*time.Millisecond), OpEvicted)
	named(tr, all, "u", t0, OpSet, OpExpire)
	for _, m := range all {
		tr.Invalidate(m, "u", t0.Add(30*time.Millisecond)) // unnamed: a RENAME away, say
	}
	want := []string{Acquired, Expired, Acquired, Evicted, Acquired, Released}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i, src := range []string{SourceKeyspace, SourceKeyspace, SourceKeyspace, SourceKeyspace, SourceKeyspace, SourceTracking} {
		if rec.events[i].Source != src {
			t.Errorf("%s of %s: source %q, want %q", rec.events[i].Event, rec.events[i].Key, rec.events[i].Source, src)
		}
	}
	if e := rec.events[3]; e.Masters != 3 || e.HeldMs == nil || *e.HeldMs != 20 {
		t.Errorf("evicted %+v: want 3 masters, held 20 ms (the second eviction left it below a quorum)", e)
	}
}

// An expire of a held lock (after its set's own) is an extension: read, and reported
// once the deadline moved on a quorum. A read that a named change overtook is not
// taken for the lock it was asked for.
func TestNamedExtensionAndStaleRead(t *testing.T) {
	tr, rec := newTestTracker(3)
	all := []int{0, 1, 2}
	t0 := time.Unix(1000, 0)
	named(tr, all, "k", t0, OpSet, OpExpire)
	tr.Tick(t0.Add(ReadDelay)) // the read of a lock held ReadDelay
	if len(rec.reads) != 3 {
		t.Fatalf("reads %v after ReadDelay, want one per master", rec.reads)
	}
	at := t0.Add(ReadDelay + time.Millisecond)
	for _, m := range all {
		tr.ReadTyped(m, "k", at, Entry{Present: true, Type: "string", Value: "v1", PTTLMs: 1000, ReadAt: at.UnixNano()})
	}
	ext := t0.Add(500 * time.Millisecond)
	named(tr, all, "k", ext, OpExpire)
	if len(rec.reads) != 6 {
		t.Fatalf("reads %v after the expires, want one more per master", rec.reads)
	}
	for _, m := range all {
		tr.ReadTyped(m, "k", ext.Add(time.Millisecond), Entry{Present: true, Type: "string", Value: "v1", PTTLMs: 1000, ReadAt: ext.UnixNano()})
	}
	if got := rec.kinds(); !slices.Equal(got, []string{Acquired, Extended}) {
		t.Fatalf("events %v, want [acquired extended]", got)
	}
	if e := rec.events[1]; !e.At.Equal(ext) || e.Source != SourceKeyspace || e.Value != "v1" {
		t.Errorf("extended %+v: want at the expires, source keyspace, value v1", e)
	}
	// A probe of the next lock is out when it is released and another taken: the
	// read, which shows the newer value, names neither.
	named(tr, all, "k", t0.Add(time.Second), OpDel)
	named(tr, all, "k", t0.Add(1100*time.Millisecond), OpSet, OpExpire)
	tr.Tick(t0.Add(1100*time.Millisecond + ReadDelay))
	named(tr, all, "k", t0.Add(1200*time.Millisecond), OpDel)
	named(tr, all, "k", t0.Add(1201*time.Millisecond), OpSet, OpExpire)
	for _, m := range all {
		tr.ReadTyped(m, "k", t0.Add(1202*time.Millisecond), Entry{Present: true, Type: "string", Value: "v3", PTTLMs: 1000})
	}
	named(tr, all, "k", t0.Add(1300*time.Millisecond), OpDel)
	var values []string
	for _, e := range rec.events {
		values = append(values, e.Event+":"+e.Value)
	}
	want := []string{"acquired:", "extended:v1", "released:v1", "acquired:", "released:", "acquired:", "released:"}
	if !slices.Equal(values, want) {
		t.Errorf("events %v, want %v: the stale read's v3 named a lock it was not asked for", values, want)
	}
}

// A set of a held key (an extension by SET, or another holder's SET) is settled by a
// read: the same value with a later deadline is an extension, another value a release
// and a new lock.
func TestNamedSetOfAHeldKey(t *testing.T) {
	tr, rec := newTestTracker(3)
	all := []int{0, 1, 2}
	t0 := time.Unix(1000, 0)
	named(tr, all, "k", t0, OpSet, OpExpire)
	tr.Tick(t0.Add(ReadDelay))
	for _, m := range all {
		tr.ReadTyped(m, "k", t0.Add(ReadDelay), Entry{Present: true, Type: "string", Value: "v1", PTTLMs: 1000})
	}
	named(tr, all, "k", t0.Add(200*time.Millisecond), OpSet, OpExpire)
	for _, m := range all {
		tr.ReadTyped(m, "k", t0.Add(201*time.Millisecond), Entry{Present: true, Type: "string", Value: "v1", PTTLMs: 1000})
	}
	if got := rec.kinds(); !slices.Equal(got, []string{Acquired, Extended}) {
		t.Fatalf("events %v after a SET of the same value, want [acquired extended]", got)
	}
	named(tr, all, "k", t0.Add(300*time.Millisecond), OpSet, OpExpire)
	for _, m := range all {
		tr.ReadTyped(m, "k", t0.Add(301*time.Millisecond), Entry{Present: true, Type: "string", Value: "v2", PTTLMs: 1000})
	}
	if got := rec.kinds(); !slices.Equal(got, []string{Acquired, Extended, Released, Acquired}) {
		t.Fatalf("events %v after a SET of another value, want [acquired extended released acquired]", got)
	}
	if e := rec.events[3]; e.Value != "v2" || e.Source != SourceKeyspace {
		t.Errorf("second acquired %+v: want value v2, source keyspace", e)
	}
}

func TestPlanKeyspace(t *testing.T) {
	for _, c := range []struct {
		flags, cmd string
		args       []string
		note       bool
	}{
		{"", "", nil, false},
		{"Kx", "", nil, false},
		{"g$xE", "SUBSCRIBE", []string{"__keyevent@3__:set", "__keyevent@3__:expire", "__keyevent@3__:del", "__keyevent@3__:expired"}, true},
		{"AE", "SUBSCRIBE", []string{"__keyevent@3__:set", "__keyevent@3__:expire", "__keyevent@3__:del", "__keyevent@3__:expired", "__keyevent@3__:evicted"}, false},
		{"g$xKE", "SUBSCRIBE", []string{"__keyevent@3__:set", "__keyevent@3__:expire", "__keyevent@3__:del", "__keyevent@3__:expired"}, true},
		{"AK", "PSUBSCRIBE", []string{"__keyspace@3__:jobs:*", "__keyspace@3__:rl:*"}, false},
		{"g$lshzxeK", "PSUBSCRIBE", []string{"__keyspace@3__:jobs:*", "__keyspace@3__:rl:*"}, false},
		{"AEm", "SUBSCRIBE", []string{"__keyevent@3__:set", "__keyevent@3__:expire", "__keyevent@3__:del", "__keyevent@3__:expired", "__keyevent@3__:evicted"}, false},
	} {
		p, why := planKeyspace(c.flags, 3, []string{"jobs:*", "rl:*"})
		if c.cmd == "" {
			if p != nil || why == "" {
				t.Errorf("%q: plan %+v, reason %q; want none, and why", c.flags, p, why)
			}
			continue
		}
		if p == nil || p.cmd != c.cmd || !slices.Equal(p.args, c.args) || (p.note != "") != c.note {
			t.Errorf("%q: plan %+v (%s); want %s %v, a note on evictions %v", c.flags, p, why, c.cmd, c.args, c.note)
		}
	}
	ev, _ := planKeyspace("AE", 0, nil)
	if k, op, ok := ev.parse("__keyevent@0__:evicted", "jobs:a"); !ok || k != "jobs:a" || op != OpEvicted {
		t.Errorf("keyevent parse: %q %v %v", k, op, ok)
	}
	if _, _, ok := ev.parse("__keyevent@0__:hset", "jobs:a"); ok {
		t.Errorf("an hset notification was taken for a change the feed follows")
	}
	ks, _ := planKeyspace("AK", 0, []string{"jobs:*"})
	if k, op, ok := ks.parse("__keyspace@0__:jobs:a", "del"); !ok || k != "jobs:a" || op != OpDel {
		t.Errorf("keyspace parse: %q %v %v", k, op, ok)
	}
}

// Around a sync, named changes and their invalidations are settled by reads, and an
// invalidation there accounts for the named change before it: a later change that
// no notification names still counts.
func TestNamedChangesAroundTheSync(t *testing.T) {
	tr, rec := newTestTracker(3)
	all := []int{0, 1, 2}
	t0 := time.Unix(1000, 0)
	for _, m := range all {
		tr.Verify(m, "k", t0) // the feed's handler: a named change before the mark
		tr.Change(m, "k", OpSet, t0)
		tr.Verify(m, "k", t0) // its invalidation, before the mark too
	}
	for _, m := range all {
		tr.ReadTyped(m, "k", t0.Add(time.Millisecond), Entry{Present: true, Type: "string", Value: "v", PTTLMs: 1000})
	}
	if got := rec.kinds(); !slices.Equal(got, []string{Acquired}) {
		t.Fatalf("events %v, want [acquired] from the reads", got)
	}
	for _, m := range all {
		tr.Invalidate(m, "k", t0.Add(10*time.Millisecond)) // unnamed: a RENAME away, say
	}
	if got := rec.kinds(); !slices.Equal(got, []string{Acquired, Released}) {
		t.Fatalf("events %v, want [acquired released]: the unnamed change was taken for the named one's invalidation", got)
	}
}
