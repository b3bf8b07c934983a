package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/history"
)

// storeWith writes lifecycles of jobs:email to a history store in a temporary
// directory: n released one after another from t0-1h, one expired, and a feed gap.
func storeWith(t *testing.T, n int) *history.Store {
	t.Helper()
	s, err := history.Open(t.TempDir(), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	start := t0.Add(-time.Hour)
	var b history.Batch
	for i := range n {
		at := start.Add(time.Duration(i) * time.Minute)
		end := history.Released
		if i == n-1 {
			end = history.Expired
		}
		m := 900.5
		l := history.Lifecycle{Resource: "jobs:email", Key: "jobs:email", Value: fmt.Sprintf("mailer:%d#%s", i, hex32(200+i)),
			Owner: fmt.Sprintf("mailer:%d", i), Library: "redlockctl", Scope: "redlock", Masters: 5, Quorum: 3,
			AcquiredAt: at, EndedAt: at.Add(1500 * time.Millisecond), End: end, TTLMs: 30000}
		if end == history.Released {
			l.MarginMs = &m
		}
		b.Ended = append(b.Ended, l)
	}
	b.Ended = append(b.Ended, history.Lifecycle{Resource: "billing:nightly", Key: "billing:nightly", Value: "other#" + hex32(9),
		Owner: "other", Masters: 5, Quorum: 3, AcquiredAt: start, EndedAt: start.Add(time.Second), End: history.Released})
	b.Marks = []history.Mark{
		{Kind: history.MarkSession, At: start.Add(-time.Minute), To: t0},
		{Kind: history.MarkGap, At: start.Add(3 * time.Minute), To: start.Add(3*time.Minute + 2*time.Second), Master: "m2", Text: "connection reset"},
	}
	if err := s.Write(b); err != nil {
		t.Fatal(err)
	}
	return s
}

// The detail view lists the resource's last recorded holders from the history
// store, newest first, and the gaps that may hide others; the store is read in a
// command with a deadline, never in Update.
func TestDetailShowsRecordedHolders(t *testing.T) {
	s := storeWith(t, 12)
	var reads atomic.Int32
	h := newHarnessWith(t, testConfig(), &fakeActions{t: t}, 120, 60, func(o *Options) {
		o.History = func(ctx context.Context, resource string) (history.Result, error) {
			reads.Add(1)
			if _, ok := ctx.Deadline(); !ok {
				t.Error("history read without a deadline")
			}
			return s.Lifecycles(history.Filter{Select: history.Select{Resources: []string{resource}}}, t0)
		}
	})
	h.key("/")
	h.typeText("jobs")
	h.key("enter")

	// Update alone opens the detail and does no I/O: the read is its command.
	_, cmd := h.m.Update(keyMsg("enter"))
	if !h.m.detail.shown || h.m.detail.name != "jobs:email" {
		t.Fatalf("enter did not open the detail of jobs:email")
	}
	if reads.Load() != 0 {
		t.Fatalf("Update read the history store %d times", reads.Load())
	}
	if sc := h.screen(); !strings.Contains(sc, "reading…") {
		t.Errorf("detail before the read lacks reading…:\n%s", sc)
	}
	h.run(cmd)
	if reads.Load() != 1 {
		t.Fatalf("opening the detail read the store %d times, want 1", reads.Load())
	}
	sc := h.screen()
	for _, want := range []string{"Recorded", `"mailer:11#` + hex32(211), "expired", "1.5s", "released", `"mailer:2#` + hex32(202),
		"… 2 earlier", "gap from", "on m2: holders there unknown"} {
		if !strings.Contains(sc, want) {
			t.Errorf("detail lacks %q:\n%s", want, sc)
		}
	}
	for _, absent := range []string{`"mailer:1#`, `"mailer:0#`, "other#"} {
		if strings.Contains(sc, absent) {
			t.Errorf("detail shows %q (older than the last 10, or another resource's):\n%s", absent, sc)
		}
	}
	if strings.Index(sc, "mailer:11#") > strings.Index(sc, "mailer:10#") {
		t.Error("recorded holders are not newest first")
	}

	// A poll tick reads again only once storedRefresh has passed; r reads at once.
	h.m.Update(tickMsg(t0))
	if reads.Load() != 1 {
		t.Errorf("a tick within %v read the store again", storedRefresh)
	}
	h.key("r")
	if reads.Load() != 2 {
		t.Errorf("r read the store %d times in all, want 2", reads.Load())
	}

	// A read for a resource no longer shown is dropped.
	h.m.Update(storedMsg{resource: "billing:nightly", at: t0, res: history.Result{Lifecycles: []history.Lifecycle{{Resource: "billing:nightly", Value: "stale#1"}}}})
	if sc := h.screen(); strings.Contains(sc, "stale#1") {
		t.Errorf("detail shows another resource's read:\n%s", sc)
	}

	// Another resource opened while a read is in flight is read when that read
	// returns: its own list, never the other's.
	h.key("r")
	_, inFlight := h.m.Update(keyMsg("r")) // the read, not run yet
	h.key("esc")
	h.key("esc") // the filter
	h.key("home")
	_, none := h.m.Update(keyMsg("enter"))
	if h.m.detail.name != "billing:nightly" {
		t.Fatalf("enter opened %q, want billing:nightly", h.m.detail.name)
	}
	before := reads.Load()
	h.run(none) // no read: one is in flight
	if reads.Load() != before {
		t.Errorf("a second read went out while one was in flight")
	}
	h.run(inFlight) // jobs:email's read returns, and billing:nightly's goes out
	sc = h.screen()
	if !strings.Contains(sc, `"other#`+hex32(9)) || strings.Contains(sc, "mailer:11#") {
		t.Errorf("billing:nightly's detail does not list its own recorded holder alone:\n%s", sc)
	}
}

// Without a store, the detail has no Recorded part and reads nothing; a store that
// cannot be read says why there.
func TestDetailRecordedWithoutOrFailingStore(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 60)
	h.key("enter")
	if sc := h.screen(); strings.Contains(sc, "Recorded") {
		t.Errorf("detail without a store shows Recorded:\n%s", sc)
	}
	h = newHarnessWith(t, testConfig(), &fakeActions{t: t}, 120, 60, func(o *Options) {
		o.History = func(ctx context.Context, resource string) (history.Result, error) {
			return history.Result{}, errors.New("/var/lib/redlockctl/history/history.db: held by pid 4242 (redlockctl)")
		}
	})
	h.key("enter")
	if sc := h.screen(); !strings.Contains(sc, "history store: /var/lib/redlockctl/history/history.db: held by pid 4242") {
		t.Errorf("detail lacks the store's error:\n%s", sc)
	}
}
