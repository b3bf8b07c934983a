package ui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
)

// A large table sorts and filters in commands: each keystroke returns at once with
// "sorting…" in the status line, and once its command's result lands the view, the
// cursor and the screen are exactly what the same keys give a small table, which
// does it all inside Update.
func TestLargeTableSortsAndFiltersOffTheUIPath(t *testing.T) {
	snap := bigSnapshot(3000)
	sync := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	async := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	async.m.table.asyncRows = 1
	for _, h := range []*harness{sync, async} {
		h.snaps = []*inspect.Snapshot{snap}
		h.key("r")
	}
	keys := []string{"j", "j", "s", "s", "o", "G", "k", "/", "j", "o", "b", ":", "0", "0", "1", "backspace", "enter",
		"!", "j", "!", "S", "S", "o", "esc", "s", "/", "s", "v", "c", "-", "4", "esc", "r"}
	for i, k := range keys {
		// The async console: Update returns without the new order.
		_, cmd := async.m.Update(keyMsg(k))
		if cmd != nil && k != "r" && strings.ContainsAny(k, "sSo!") && !async.m.filtering {
			if !async.m.table.pending || !strings.Contains(async.m.statusLine(), "sorting…") {
				t.Fatalf("key %d %q: a large table's command returned without a pending order (status %q)", i, k, async.m.statusLine())
			}
		}
		async.run(cmd)
		sync.key(k)
		st, at := sync.m.table, async.m.table
		if !slices.Equal(st.view, at.view) || st.cursor != at.cursor || st.selected != at.selected {
			t.Fatalf("key %d %q: async view (%d rows, cursor %d %q) differs from sync (%d rows, cursor %d %q)",
				i, k, len(at.view), at.cursor, at.selected, len(st.view), st.cursor, st.selected)
		}
		if at.pending {
			t.Fatalf("key %d %q: still pending after its command landed", i, k)
		}
		if s, a := sync.screen(), async.screen(); s != a {
			t.Fatalf("key %d %q: screens differ:\n--- sync\n%s\n--- async\n%s", i, k, s, a)
		}
	}
}

// A result computed for settings that changed meanwhile is dropped: only the
// latest request's order is applied.
func TestStaleOrderIsDropped(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	h.m.table.asyncRows = 1
	h.snaps = []*inspect.Snapshot{bigSnapshot(500)}
	h.key("r")
	_, first := h.m.Update(keyMsg("s"))  // sort by STATE, not yet landed
	_, second := h.m.Update(keyMsg("s")) // then OWNER
	stale := first().(orderMsg)
	h.send(stale)
	if !h.m.table.pending || h.m.table.applied.sortCol != colResource {
		t.Fatalf("a stale order was applied (applied sort column %d)", h.m.table.applied.sortCol)
	}
	h.send(second().(orderMsg))
	if h.m.table.pending || h.m.table.applied.sortCol != colOwner {
		t.Fatalf("the latest order was not applied (pending %v, sort column %d)", h.m.table.pending, h.m.table.applied.sortCol)
	}
	var _ tea.Msg = stale
}

// An order being built in a command (its own goroutine, as under bubbletea) while
// the UI goroutine takes a new snapshot, moves and sorts a small table shares no
// slice either side writes (run with -race), and its late result is dropped.
func TestOrderBuiltConcurrentlyWithUpdates(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	h.m.table.asyncRows = 1
	h.snaps = []*inspect.Snapshot{bigSnapshot(2000), bigSnapshot(1500)}
	h.key("r")
	_, cmd := h.m.Update(keyMsg("s"))
	done := make(chan tea.Msg)
	go func() { done <- cmd() }()
	h.key("r") // the next snapshot: rows, order and view replaced
	h.m.table.asyncRows = 1 << 30
	for _, k := range []string{"j", "s", "o", "G", "!", "!"} {
		h.key(k)
	}
	late := (<-done).(orderMsg)
	view := slices.Clone(h.m.table.view)
	h.send(late)
	if !slices.Equal(view, h.m.table.view) || len(h.m.table.rows) != 1500 {
		t.Fatalf("a result built for the previous rows was applied (%d rows, view %d)", len(h.m.table.rows), len(h.m.table.view))
	}
}
