package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

func isPollTick(m tea.Msg) bool  { _, ok := m.(tickMsg); return ok }
func isKeepAlive(m tea.Msg) bool { _, ok := m.(keepAliveMsg); return ok }

func (h *harness) cursorResource() string {
	if r := h.m.table.current(); r != nil {
		return r.Resource
	}
	return ""
}

func (h *harness) viewNames() []string {
	var out []string
	for _, idx := range h.m.table.view {
		out = append(out, h.m.table.rows[idx].name)
	}
	return out
}

func TestFirstPollAndOnePollInFlight(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	if h.polls != 1 || h.m.snap == nil {
		t.Fatalf("after Init: %d polls, snapshot %v; want 1 poll and a snapshot", h.polls, h.m.snap != nil)
	}
	// A poll in flight: ticks and refreshes start no second one; a refresh is queued.
	var started []tea.Cmd
	h.m.poll = func(ctx context.Context) *poll.Stream { h.polls++; return poll.StreamOf(testSnapshot()) }
	started = append(started, h.m.startPoll())
	if c := h.m.startPoll(); c != nil {
		t.Fatal("second startPoll while one is in flight returned a command")
	}
	_, cmd := h.m.Update(tickMsg(t0.Add(time.Second)))
	h.run(cmd) // runs only the re-armed tick
	h.key("r")
	if !h.m.pendingRefresh {
		t.Error("refresh during a poll was not queued")
	}
	if h.polls != 1 {
		t.Fatalf("polls started while one was in flight: %d", h.polls-1)
	}
	// The console answers keys while the poll is out (a stopped master cannot freeze it).
	h.key("j")
	h.key("?")
	if h.cursorResource() != "cache:rebuild" || !strings.Contains(h.screen(), "Legend") {
		t.Error("keys not handled while a poll was in flight")
	}
	h.key("esc")
	if !strings.Contains(h.screen(), "polling…") {
		t.Error("the header does not show a poll in flight")
	}
	h.run(started[0]) // the in-flight poll lands; the queued refresh runs right after
	if h.polls != 3 {
		t.Errorf("after the poll landed with a refresh queued: %d polls, want 3", h.polls)
	}
	if h.m.polling {
		t.Error("still polling after every poll landed")
	}
}

func TestPauseResumeAndRefresh(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	h.key("p")
	if !h.m.paused || !strings.Contains(h.screen(), "PAUSED") {
		t.Fatal("p did not pause (or PAUSED is not in the header)")
	}
	before := h.polls
	h.fire(isPollTick)
	if h.polls != before {
		t.Errorf("a tick polled while paused")
	}
	if len(h.ticks) == 0 {
		t.Error("the tick was not re-armed while paused")
	}
	h.key("r")
	if h.polls != before+1 {
		t.Errorf("r while paused: %d polls, want 1", h.polls-before)
	}
	h.key("p")
	if h.m.paused || h.polls != before+2 {
		t.Errorf("resume: paused=%v, polls %d, want unpaused and an immediate poll", h.m.paused, h.polls-before)
	}
	h.fire(isPollTick)
	if h.polls != before+3 {
		t.Errorf("tick after resume did not poll")
	}
}

func TestCursorMovesAndStaysOnResourceAcrossPolls(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	h.key("down")
	h.key("down")
	h.key("down")
	if got := h.cursorResource(); got != "jobs:email" {
		t.Fatalf("cursor after 3 downs on %q, want jobs:email", got)
	}
	// The next poll has new resources sorting before it and loses another.
	s := testSnapshot()
	extra := res("aaa:new", inspect.StateHeld, "n#"+hex32(50), 5, same("n#"+hex32(50), 1, 1, 1, 1, 1)...)
	s.Resources = append([]inspect.Resource{extra, extra, extra}, s.Resources...)
	s.Resources[1].Resource, s.Resources[2].Resource = "aab:new", "aac:new"
	s.Resources = slices.DeleteFunc(s.Resources, func(r inspect.Resource) bool { return r.Resource == "billing:nightly" })
	h.snaps = append(h.snaps, s)
	h.key("r")
	if got := h.cursorResource(); got != "jobs:email" {
		t.Errorf("cursor after a poll on %q, want jobs:email", got)
	}
	// Sorting and reversing keep it too.
	h.key("s")
	h.key("o")
	if got := h.cursorResource(); got != "jobs:email" {
		t.Errorf("cursor after sort+reverse on %q, want jobs:email", got)
	}
	h.key("G")
	if h.m.table.cursor != len(h.m.table.view)-1 {
		t.Errorf("G: cursor %d, want last row %d", h.m.table.cursor, len(h.m.table.view)-1)
	}
	h.key("g")
	h.key("up")
	if h.m.table.cursor != 0 {
		t.Errorf("up at the top moved the cursor to %d", h.m.table.cursor)
	}
	h.key("pgdown")
	if h.m.table.cursor != h.m.table.height {
		t.Errorf("pgdown: cursor %d, want %d", h.m.table.cursor, h.m.table.height)
	}
}

func TestSortEveryColumnAndReverse(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	n := h.m.table.nColumns()
	if n != colMasters+5 {
		t.Fatalf("%d sortable columns, want %d", n, colMasters+5)
	}
	for c := 1; c <= n; c++ {
		h.key("s")
		want := c % n
		if h.m.table.sortCol != want {
			t.Fatalf("after %d presses of s: sort column %d, want %d", c, h.m.table.sortCol, want)
		}
		// The view must be ordered by the column's key, ties by name.
		tb := h.m.table
		for i := 1; i < len(tb.view); i++ {
			ia, ib := tb.view[i-1], tb.view[i]
			a, b := &tb.rows[ia], &tb.rows[ib]
			ka, kb := tb.sortKey(ia, want), tb.sortKey(ib, want)
			if want == colOwner {
				ka, kb = int64(strings.Compare(a.owner, b.owner)), 0
				if ka > 0 {
					t.Fatalf("column owner: %q before %q", a.owner, b.owner)
				}
				continue
			}
			if ka > kb || (ka == kb && ia > ib) { // rows are in name order
				t.Fatalf("column %d: %s (%d) before %s (%d)", want, a.name, ka, b.name, kb)
			}
		}
	}
	h.key("S")
	if h.m.table.sortCol != n-1 {
		t.Errorf("S from column 0: %d, want %d", h.m.table.sortCol, n-1)
	}
	h.key("s") // back to resource
	before := h.viewNames()
	h.key("o")
	after := h.viewNames()
	slices.Reverse(after)
	if !slices.Equal(before, after) {
		t.Errorf("o did not reverse the order")
	}
	if !strings.Contains(h.screen(), "RESOURCE↓") {
		t.Errorf("header does not show the descending sort")
	}
}

func TestFilterAndAnomaliesOnly(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	h.key("/")
	h.typeText("SHARD:1")
	if got := len(h.viewNames()); got != 10 { // shard:10..19
		t.Fatalf("filter shard:1: %d rows, want 10: %v", got, h.viewNames())
	}
	h.key("backspace")
	h.key("backspace")
	if got := len(h.viewNames()); got != 24 {
		t.Errorf("filter shard: after backspaces: %d rows, want 24", got)
	}
	h.key("enter")
	if h.m.filtering {
		t.Fatal("enter did not close the filter input")
	}
	h.key("j") // table keys work again; the filter stays; the cursor stayed on shard:10
	if h.cursorResource() != "shard:11" {
		t.Errorf("cursor on %q, want shard:11", h.cursorResource())
	}
	h.key("esc")
	if got := len(h.viewNames()); got != 32 {
		t.Errorf("esc: %d rows, want all 32", got)
	}
	// Filter matches owners and states too.
	h.key("/")
	h.typeText("mailer:99")
	if got := h.viewNames(); !slices.Equal(got, []string{"jobs:email"}) {
		t.Errorf("owner filter: %v", got)
	}
	h.key("esc")
	h.key("!")
	want := []string{"cache:rebuild", "jobs:email", "legacy:cron", "orders:sync", "redisson:lock"}
	if got := h.viewNames(); !slices.Equal(got, want) {
		t.Errorf("anomalies only: %v, want %v", got, want)
	}
	h.key("!")
	if got := len(h.viewNames()); got != 32 {
		t.Errorf("anomalies toggled off: %d rows", got)
	}
	h.key("/")
	h.typeText("zzz")
	if !strings.Contains(h.screen(), "no resource matches the filter") {
		t.Error("empty filter result is not explained")
	}
}

func TestChangedRowsMarkedForAFewPolls(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	if strings.Contains(h.screen(), "+ ") {
		t.Fatalf("rows marked changed on the first poll:\n%s", h.screen())
	}
	s := testSnapshot()
	s.Resources[0].Nodes[2].Value = "thief#" + hex32(77)
	h.snaps = append(h.snaps, s)
	h.key("r")
	line := func() string {
		for _, l := range strings.Split(h.screen(), "\n") {
			if strings.Contains(l, "billing:nightly") {
				return l
			}
		}
		return ""
	}
	if !strings.HasPrefix(line(), ">+") {
		t.Fatalf("changed row not marked: %q", line())
	}
	if !strings.Contains(line(), "~23.1s") {
		t.Errorf("other value on m3 not shown as ~PTTL: %q", line())
	}
	h.key("r")
	h.key("r")
	if !strings.HasPrefix(line(), ">+") {
		t.Errorf("mark gone too early: %q", line())
	}
	h.key("r")
	if strings.HasPrefix(line(), ">+") {
		t.Errorf("mark still there after %d polls: %q", changedPolls, line())
	}
}

func TestDetailShowsValuesAndHistory(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	// What the console sees between polls is its history: jobs:email goes, comes back
	// (acquired), then its expiry moves 5 s later (extended).
	gone, back, extended := testSnapshot(), testSnapshot(), testSnapshot()
	gone.Resources = slices.DeleteFunc(gone.Resources, func(r inspect.Resource) bool { return r.Resource == "jobs:email" })
	for i := range extended.Resources[3].Nodes {
		if n := &extended.Resources[3].Nodes[i]; n.PTTLMs >= 0 {
			n.PTTLMs += 5000
		}
	}
	h.snaps = append(h.snaps, gone, back, extended)
	h.key("r")
	h.key("r")
	h.key("r")
	h.key("/")
	h.typeText("jobs")
	h.key("enter")
	h.key("enter")
	if !h.m.detail.shown || h.m.detail.name != "jobs:email" {
		t.Fatalf("enter did not open the detail of jobs:email (shown %v, %q)", h.m.detail.shown, h.m.detail.name)
	}
	sc := h.screen()
	for _, want := range []string{"fence token 42", "OTHER", `"mailer:17#`, "absent", "extended", "acquired", "stray-value on m5"} {
		if !strings.Contains(sc, want) {
			t.Errorf("detail lacks %q:\n%s", want, sc)
		}
	}
	if strings.Index(sc, "extended") > strings.Index(sc, "acquired") {
		t.Error("history is not newest first")
	}
	h.key("esc")
	if h.m.detail.shown {
		t.Error("esc did not leave the detail")
	}
}

// allKeys is every key any keymap of the console binds, plus typing.
func allKeys() []string {
	var out []string
	add := func(bs ...key.Binding) {
		for _, b := range bs {
			out = append(out, b.Keys()...)
		}
	}
	k := DefaultKeyMap(false)
	add(k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Detail, k.Back, k.Filter, k.Anomalies,
		k.SortNext, k.SortPrev, k.Reverse, k.Pause, k.Refresh, k.Help)
	add(k.actions()...)
	dk := DefaultDetailKeyMap()
	add(dk.Back, dk.Up, dk.Down, dk.PageUp, dk.PageDown, dk.Top, dk.Bottom)
	add(DefaultActivityKeyMap().Toggle)
	d := DefaultDialogKeyMap()
	add(d.Confirm, d.Cancel, d.NextField, d.PrevField, d.Toggle, d.SwitchMode, d.ReleaseQuit, d.KeepQuit)
	return out
}

func TestReadOnlyEveryKeySendsNoAction(t *testing.T) {
	cfg := testConfig()
	cfg.ReadOnly = true
	acts := &fakeActions{t: t, fail: true}
	h := newHarness(t, cfg, acts, 120, 40)
	keys := allKeys()
	// Every key from the table, from the detail, from help and from the filter,
	// with "enter" and a typed resource name in between (what a dialog would want).
	for round := 0; round < 3; round++ {
		for _, k := range keys {
			h.key(k)
			h.typeText("billing:nightly")
			h.key("enter")
			h.key(k)
			if h.m.dialog != nil {
				t.Fatalf("key %q opened a dialog in read-only mode", k)
			}
		}
		h.key("esc")
		h.key("enter") // into the detail for the next round
	}
	if got := acts.Calls(); len(got) != 0 {
		t.Fatalf("actions called in read-only mode: %v", got)
	}
	h.key("esc")
	h.key("esc")
	sc := h.screen()
	for _, gone := range []string{"acquire", "force-release", "extend", "release mine"} {
		if strings.Contains(sc, gone) {
			t.Errorf("read-only help bar mentions %q", gone)
		}
	}
	if !strings.Contains(sc, "READ-ONLY") {
		t.Error("header lacks READ-ONLY")
	}
	for _, b := range DefaultKeyMap(true).actions() {
		if b.Enabled() || len(b.Keys()) != 0 {
			t.Errorf("action binding %v still bound in read-only", b.Help())
		}
	}
	// The command path itself refuses too, without calling Actions.
	h.m.readOnly = true
	msg := h.m.actionCmd(actionReq{kind: "force-release-any", resource: "x"})()
	if am, ok := msg.(actionMsg); !ok || !errors.Is(am.err, admin.ErrReadOnly) {
		t.Errorf("read-only actionCmd returned %#v", msg)
	}
}

// acquireNoKeepAlive acquires resource from the console with keep-alive off.
func (h *harness) acquireNoKeepAlive(resource, ttl string) {
	h.key("a")
	h.key("ctrl+u")
	h.typeText(resource)
	h.key("tab")
	h.key("ctrl+u")
	h.typeText(ttl)
	h.key("tab")
	h.key("space")
	h.key("enter")
	h.key("esc") // close the result
}

// goneActions answers releases as if the fifth master no longer had the key.
type goneActions struct{ fakeActions }

func (g *goneActions) gone(r admin.ActionResult) admin.ActionResult {
	r.Done = 4
	r.Nodes[4].Outcome = "absent"
	return r
}

func (g *goneActions) Release(ctx context.Context, resource, value string) (admin.ActionResult, error) {
	r, err := g.fakeActions.Release(ctx, resource, value)
	return g.gone(r), err
}

func (g *goneActions) ForceRelease(ctx context.Context, p admin.ForcePlan) (admin.ActionResult, error) {
	r, err := g.fakeActions.ForceRelease(ctx, p)
	return g.gone(r), err
}

// Master cells that show no PTTL sort where their display puts them: down first, then
// absent, then the PTTLs, then no-ttl (never expires), then non-string keys (not locks).
// Rows without validity ("-") sort before every lock that has some.
func TestSortMasterCellsByWhatTheyShow(t *testing.T) {
	s := &inspect.Snapshot{Masters: []inspect.Master{{Name: "m1", Up: true}}}
	cell := func(nd inspect.Node, state string, validity int64) int32 {
		r := res(fmt.Sprintf("x%02d", len(s.Resources)), state, "", 1, nd) // in name order
		r.ValidityMs = validity
		s.Resources = append(s.Resources, r)
		return int32(len(s.Resources) - 1)
	}
	ordered := []int32{
		cell(inspect.Node{Error: "down"}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: -2, Type: inspect.TypeNone}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: 5, Type: inspect.TypeString}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: 90_000_000, Type: inspect.TypeString}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: -1, Type: inspect.TypeString}, inspect.StateNoTTL, 0),
		cell(inspect.Node{PTTLMs: -1, Type: "hash"}, inspect.StateForeign, 0),
	}
	free := cell(inspect.Node{PTTLMs: -2}, inspect.StateSplit, 0)
	expiring := cell(inspect.Node{PTTLMs: 1}, inspect.StateHeld, 0)
	tb := newTable()
	tb.setSnapshot(poll.StreamOf(s), 1)
	for i := 1; i < len(ordered); i++ {
		if a, b := tb.sortKey(ordered[i-1], colMasters), tb.sortKey(ordered[i], colMasters); a >= b {
			t.Errorf("cell %d (key %d) does not sort before cell %d (key %d)", i-1, a, i, b)
		}
	}
	if a, b := tb.sortKey(free, colValidity), tb.sortKey(expiring, colValidity); a >= b {
		t.Errorf("a row without validity (key %d) does not sort before a held lock with 0 ms left (key %d)", a, b)
	}
}

// A poll in which more rows changed than one message records (historyChunk) has
// every event recorded, over several messages.
func TestManyEventsAllRecorded(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	n := 2*historyChunk + 7
	h.snaps = append(h.snaps, bigSnapshot(n))
	h.key("r")
	appeared := 0 // acquired, or partial for bigSnapshot's partial rows
	for name, evs := range h.m.detail.history {
		if strings.HasPrefix(name, "job:") && len(evs) == 1 && (evs[0].Kind == "acquired" || evs[0].Kind == "partial") {
			appeared++
		}
	}
	if appeared != n || len(h.m.detail.pending) != 0 {
		t.Fatalf("%d rows' arrival recorded (%d events pending), want %d", appeared, len(h.m.detail.pending), n)
	}
}

// An expiry estimated later by less than the polls took is noise, not an extension:
// each poll counts its PTTLs from its end, and reads a key anywhere in it.
func TestLongPollsMakeNoExtensions(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	for _, later := range []int64{3000, 9000} {
		prev, cur := testSnapshot(), testSnapshot()
		prev.PollMs, cur.PollMs = 5000, 5000
		for i := range cur.Resources[3].Nodes {
			if n := &cur.Resources[3].Nodes[i]; n.PTTLMs >= 0 {
				n.PTTLMs += later
			}
		}
		h.snaps = append(h.snaps, prev, cur)
		h.key("r")
		h.key("r")
		evs := h.m.detail.history["jobs:email"]
		extended := len(evs) > 0 && evs[len(evs)-1].Kind == "extended" && evs[len(evs)-1].At.Equal(cur.TakenAt)
		if extended != (later > 5000) {
			t.Errorf("expiry %d ms later after 5 s polls: extended %v, want %v", later, extended, later > 5000)
		}
	}
}
