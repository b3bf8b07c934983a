package ui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/admin"
	"github.com/redlockctl/redlockctl/inspect/config"
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
		out = append(out, h.m.table.rows[idx].res.Resource)
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
	h.m.poll = func(ctx context.Context) *inspect.Snapshot { h.polls++; return testSnapshot() }
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
			a, b := &tb.rows[tb.view[i-1]], &tb.rows[tb.view[i]]
			ka, kb := tb.sortKey(a, want), tb.sortKey(b, want)
			if want == colOwner {
				ka, kb = int64(strings.Compare(a.res.Owner, b.res.Owner)), 0
				if ka > 0 {
					t.Fatalf("column owner: %q before %q", a.res.Owner, b.res.Owner)
				}
				continue
			}
			if ka > kb || (ka == kb && a.rank > b.rank) {
				t.Fatalf("column %d: %s (%d) before %s (%d)", want, a.res.Resource, ka, b.res.Resource, kb)
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
	s := testSnapshot()
	s.Events = []inspect.Event{
		{At: t0.Add(time.Second), Resource: "jobs:email", Kind: "acquired", Value: s.Resources[3].Value},
		{At: t0.Add(2 * time.Second), Resource: "jobs:email", Kind: "extended", Value: s.Resources[3].Value, Detail: "pttl 8.1s"},
		{At: t0.Add(2 * time.Second), Resource: "other", Kind: "expired"},
	}
	h.snaps = append(h.snaps, s)
	h.key("r")
	h.key("/")
	h.typeText("jobs")
	h.key("enter")
	h.key("enter")
	if h.m.mode != modeDetail || h.m.detailName != "jobs:email" {
		t.Fatalf("enter did not open the detail of jobs:email (mode %v, %q)", h.m.mode, h.m.detailName)
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
	if h.m.mode != modeTable {
		t.Error("esc did not leave the detail")
	}
}

func TestForceReleaseNeedsTypedNameAndDeletesObservedValue(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("D")
	if _, ok := h.m.dialog.(*forceDialog); !ok {
		t.Fatalf("D did not open the force-release dialog")
	}
	if strings.Contains(h.screen(), "any value") {
		t.Error("any value offered for a plain held row")
	}
	h.typeText("billing:nightl")
	h.key("enter")
	if len(acts.Calls()) != 0 || !strings.Contains(h.screen(), "type the resource name exactly") {
		t.Fatalf("a wrong name did not refuse: calls %v", acts.Calls())
	}
	h.key("tab") // no "any value" choice here: tab changes nothing
	h.typeText("y")
	h.key("enter")
	want := "force-release billing:nightly worker-7:4242#" + hex32(1)
	if got := acts.Calls(); !slices.Equal(got, []string{want}) {
		t.Fatalf("calls %v, want [%s]", got, want)
	}
	if _, ok := h.m.dialog.(*resultDialog); !ok {
		t.Fatalf("no per-master result shown")
	}
	sc := h.screen()
	if !strings.Contains(sc, "done on 5/5") || strings.Count(sc, " ok") < 5 {
		t.Errorf("result lacks per-master outcomes:\n%s", sc)
	}
	h.key("esc")
	if h.m.dialog != nil {
		t.Error("esc did not close the result")
	}
}

func TestForceReleaseAnyValueIsExplicit(t *testing.T) {
	for _, name := range []string{"orders:sync", "legacy:cron", "redisson:lock", "jobs:email"} {
		t.Run(name, func(t *testing.T) {
			acts := &fakeActions{t: t}
			h := newHarness(t, testConfig(), acts, 120, 40)
			h.key("/")
			h.typeText(name)
			h.key("enter")
			h.key("D")
			d := h.m.dialog.(*forceDialog)
			if !d.anyAllowed {
				t.Fatalf("any value not offered for %s", name)
			}
			if d.res.Value != "" {
				if d.anyValue {
					t.Fatal("any value chosen by default")
				}
				h.key("tab")
			}
			if !strings.Contains(h.screen(), "(ANY VALUE)") {
				t.Errorf("any-value mode not shown:\n%s", h.screen())
			}
			h.typeText(name)
			h.key("enter")
			if got := acts.Calls(); !slices.Equal(got, []string{"force-release-any " + name}) {
				t.Errorf("calls %v", got)
			}
		})
	}
}

func TestEscCancelsDialogsWithoutActions(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	for _, k := range []string{"a", "e", "D"} {
		h.key(k)
		if h.m.dialog == nil {
			t.Fatalf("%s opened no dialog", k)
		}
		h.typeText("xyz")
		h.key("esc")
		if h.m.dialog != nil {
			t.Errorf("esc left the %s dialog open", k)
		}
	}
	if len(acts.Calls()) != 0 {
		t.Errorf("cancelled dialogs called %v", acts.Calls())
	}
}

func TestExtendObservedValue(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("e")
	h.key("ctrl+u")
	h.typeText("45s")
	h.key("enter")
	want := "extend billing:nightly worker-7:4242#" + hex32(1) + " 45s"
	if got := acts.Calls(); !slices.Equal(got, []string{want}) {
		t.Errorf("calls %v, want [%s]", got, want)
	}
	h.key("esc")
	h.key("/")
	h.typeText("redisson")
	h.key("enter")
	h.key("e")
	if h.m.dialog != nil || !h.m.statErr {
		t.Error("extend offered on a foreign key")
	}
}

func TestAcquireKeepsAliveAndQuitAsks(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("a")
	h.key("ctrl+u")
	h.typeText("deploy:prod")
	h.key("tab")
	h.key("ctrl+u")
	h.typeText("nonsense")
	h.key("enter")
	if len(acts.Calls()) != 0 || !strings.Contains(h.screen(), "not a positive duration") {
		t.Fatal("a bad ttl was not refused in the dialog")
	}
	h.key("ctrl+u")
	h.typeText("3s")
	h.key("enter")
	if got := acts.Calls(); !slices.Equal(got, []string{"acquire deploy:prod 3s"}) {
		t.Fatalf("calls %v", got)
	}
	if !slices.Equal(h.m.Held(), []string{"deploy:prod"}) {
		t.Fatalf("held %v", h.m.Held())
	}
	var every time.Duration
	for _, tk := range h.ticks {
		if isKeepAlive(tk.msg) {
			every = tk.d
		}
	}
	if every != time.Second {
		t.Errorf("keep-alive every %v, want ttl/3 = 1s", every)
	}
	for i := 0; i < 3; i++ {
		if h.fire(isKeepAlive) != 1 {
			t.Fatalf("round %d: no keep-alive tick armed", i)
		}
	}
	value := "console:1#" + hex32(999)
	ext := 0
	for _, c := range acts.Calls() {
		if c == "renew 3s" {
			ext++
		}
	}
	if ext != 3 {
		t.Errorf("%d keep-alive extends of the acquired value, want 3: %v", ext, acts.Calls())
	}
	h.key("esc") // close the result
	h.key("q")
	if h.quit {
		t.Fatal("quit without asking while holding a lock")
	}
	if _, ok := h.m.dialog.(*quitDialog); !ok {
		t.Fatal("no quit dialog")
	}
	h.key("esc")
	if h.m.dialog != nil || h.quit {
		t.Fatal("esc did not cancel quitting")
	}
	h.key("q")
	h.key("r")
	if !h.quit {
		t.Fatal("release and quit did not quit")
	}
	if got := acts.Calls(); got[len(got)-1] != "release deploy:prod "+value {
		t.Errorf("last call %q, want the owner-checked release", got[len(got)-1])
	}
	if rep := h.m.ExitReport(); len(rep) != 1 || !strings.Contains(rep[0], "release deploy:prod: done") {
		t.Errorf("exit report %v", rep)
	}
	// A keep-alive tick after the release sends nothing.
	n := len(acts.Calls())
	h.fire(isKeepAlive)
	if len(acts.Calls()) != n {
		t.Errorf("keep-alive after release: %v", acts.Calls()[n:])
	}
}

func TestCtrlCQuitsFromAnywhere(t *testing.T) {
	for _, keys := range [][]string{{}, {"/", "x"}, {"D", "bil"}, {"enter"}, {"?"}} {
		h := newHarness(t, testConfig(), &fakeActions{t: t}, 80, 24)
		for _, k := range keys {
			if _, named := namedKeys[k]; named {
				h.key(k)
			} else {
				h.typeText(k)
			}
		}
		h.key("ctrl+c")
		if !h.quit {
			t.Errorf("ctrl+c after %v did not quit", keys)
		}
	}
	// Holding a lock, ctrl+c asks; a second ctrl+c keeps the lock and quits.
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 80, 24)
	h.key("a")
	h.key("enter")
	h.key("ctrl+c")
	if h.quit {
		t.Fatal("ctrl+c while holding quit without asking")
	}
	h.key("ctrl+c")
	if !h.quit || !strings.Contains(strings.Join(h.m.ExitReport(), "\n"), "left billing:nightly") {
		t.Errorf("second ctrl+c: quit %v, report %v", h.quit, h.m.ExitReport())
	}
}

func TestKeepAndQuitAndReleaseMine(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("a")
	h.key("enter") // billing:nightly prefilled, 30s, keep-alive on
	h.key("esc")
	h.key("q")
	h.key("k")
	if !h.quit {
		t.Fatal("keep and quit did not quit")
	}
	if rep := h.m.ExitReport(); len(rep) != 1 || !strings.Contains(rep[0], "left billing:nightly") {
		t.Errorf("exit report %v", rep)
	}
	for _, c := range acts.Calls() {
		if strings.HasPrefix(c, "release") {
			t.Errorf("keep and quit released: %s", c)
		}
	}

	// x releases a lock this console holds, owner-checked, and stops its keep-alive.
	acts = &fakeActions{t: t}
	h = newHarness(t, testConfig(), acts, 120, 40)
	h.key("x")
	if len(acts.Calls()) != 0 || !h.m.statErr {
		t.Fatal("x on a lock this console does not hold sent something")
	}
	h.key("a")
	h.key("enter")
	h.key("esc")
	h.key("x")
	value := "console:1#" + hex32(999)
	if got := acts.Calls(); got[len(got)-1] != "release billing:nightly "+value {
		t.Errorf("x sent %v", got)
	}
	if len(h.m.Held()) != 0 {
		t.Errorf("still holding %v after x", h.m.Held())
	}
	h.key("esc")
	h.key("q")
	if !h.quit {
		t.Error("q after releasing everything asked again")
	}
}

func TestKeepAliveFailureReportsLostLock(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("a")
	h.key("enter")
	h.key("esc")
	acts.err = errors.New("redlock: extend: 1/5 ok, quorum 3")
	h.fire(isKeepAlive)
	if len(h.m.Held()) != 0 {
		t.Errorf("lock still held after a failed keep-alive")
	}
	if !strings.Contains(h.screen(), "LOST billing:nightly") {
		t.Errorf("lost lock not reported:\n%s", h.screen())
	}
}

func TestActionErrorsAreShown(t *testing.T) {
	acts := &fakeActions{t: t, err: admin.ErrReadOnly}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("D")
	h.typeText("billing:nightly")
	h.key("enter")
	if !strings.Contains(h.screen(), "failed: read-only") {
		t.Errorf("error not shown:\n%s", h.screen())
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

func TestNoColourNeededToReadState(t *testing.T) {
	// With colours stripped, agreement is still readable: same, ~other, - absent, down.
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	s := testSnapshot()
	s.Masters[1].Up = false
	s.Masters[1].Error = "dial tcp 10.0.0.2:6379: connection refused"
	for i := range s.Resources {
		s.Resources[i].Nodes[1] = inspect.Node{Master: "m2", Error: "connection refused"}
	}
	summarize(s)
	h.snaps = append(h.snaps, s)
	h.key("r")
	sc := h.screen()
	for _, want := range []string{"masters 4/5 up", "down dial tcp", "~1.2s", "   down"} {
		if !strings.Contains(sc, want) {
			t.Errorf("screen lacks %q:\n%s", want, sc)
		}
	}
}

func TestResizeKeepsEveryLineInside(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	for _, sz := range []struct{ w, h int }{{80, 24}, {81, 25}, {100, 30}, {160, 50}, {200, 60}, {120, 40}} {
		h.send(tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		for _, keys := range [][]string{{}, {"enter"}, {"esc", "?"}, {"esc", "D"}, {"esc", "a"}, {"esc"}} {
			for _, k := range keys {
				h.key(k)
			}
			checkFits(t, h.m.View().Content, sz.w, sz.h)
		}
		if h.m.table.height < 5 {
			t.Errorf("%dx%d: only %d table rows", sz.w, sz.h, h.m.table.height)
		}
	}
	// The cursor row stays visible after shrinking.
	h.key("G")
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	if !strings.Contains(h.screen(), "> ") {
		t.Error("cursor row not visible after a resize")
	}
}

func TestViewHasMouseOffAndAltScreen(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 80, 24)
	v := h.m.View()
	if v.MouseMode != tea.MouseModeNone || !v.AltScreen {
		t.Errorf("mouse mode %v, alt screen %v", v.MouseMode, v.AltScreen)
	}
}

func TestLabelColour(t *testing.T) {
	for _, c := range []string{"red", "bright-green", "#ff8800", "208"} {
		if labelColour(c) == nil {
			t.Errorf("label colour %q not understood", c)
		}
	}
	if labelColour("") != nil {
		t.Error("empty label colour is not 'none'")
	}
	// Every name the config accepts has a colour of its own here.
	for _, name := range config.LabelColors {
		if _, ok := labelColours[name]; !ok {
			t.Errorf("config accepts label_color %q but the console has no colour for it", name)
		}
	}
}

func TestCleanEscapesControlBytes(t *testing.T) {
	for in, want := range map[string]string{
		"plain":           "plain",
		"a\x1b[31mb":      `a\x1b[31mb`,
		"bell\a":          `bell\a`,
		"bad\xffutf8":     `bad\xffutf8`,
		"ünïcode ok":      "ünïcode ok",
		"back\\slash\x00": `back\\slash\x00`, // backslash doubled: escapes stay unambiguous
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	// The text `\x1b` and an ESC byte must not look alike to the operator.
	if clean(`a\x1b`) == clean("a\x1b") {
		t.Errorf("clean shows the text \\x1b and an ESC byte the same: %q", clean("a\x1b"))
	}
}

// With a key prefix, a key scanned outside it shows under a resource name whose key is
// another one: acting on that name would hit the other key, so no action is offered.
func TestNoActionOnKeysOutsideThePrefix(t *testing.T) {
	acts := &fakeActions{t: t}
	cfg := testConfig()
	cfg.Lock.KeyPrefix = "lock:"
	h := newHarness(t, cfg, acts, 120, 40)
	stray := res("billing:nightly", inspect.StateHeld, "worker-7:4242#"+hex32(1), 5, same("worker-7:4242#"+hex32(1), 9000, 9000, 9000, 9000, 9000)...)
	snap := testSnapshot()
	snap.Resources = []inspect.Resource{stray} // Key "billing:nightly", outside "lock:"
	h.snaps = []*inspect.Snapshot{snap}
	h.key("r")
	for _, k := range []string{"D", "e"} {
		h.key(k)
		if h.m.dialog != nil {
			t.Fatalf("%s opened a dialog for a key outside the prefix", k)
		}
		if !strings.Contains(h.screen(), "outside lock.key_prefix") {
			t.Fatalf("%s: no reason shown:\n%s", k, h.screen())
		}
	}
	if len(acts.Calls()) != 0 {
		t.Fatalf("actions sent: %v", acts.Calls())
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

func TestAcquireWithoutKeepAliveIsTracked(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	now := t0.Add(400 * time.Millisecond)
	h.m.clock = func() time.Time { return now }
	h.acquireNoKeepAlive("billing:nightly", "10s")
	h.acquireNoKeepAlive("deploy:prod", "60s")
	h.key("a")
	h.key("ctrl+u")
	h.typeText("cache:rebuild")
	h.key("enter") // kept alive
	h.key("esc")
	if !slices.Equal(h.m.Held(), []string{"billing:nightly", "cache:rebuild", "deploy:prod"}) {
		t.Fatalf("held %v, want all three acquired locks", h.m.Held())
	}
	if h.m.table.mine["billing:nightly"] == "" {
		t.Error("a lock acquired without keep-alive has no * mark")
	}
	keepAlives := 0
	for _, tk := range h.ticks {
		if ka, ok := tk.msg.(keepAliveMsg); ok {
			keepAlives++
			if ka.resource != "cache:rebuild" {
				t.Errorf("keep-alive armed for %s, acquired without keep-alive", ka.resource)
			}
		}
	}
	if keepAlives != 1 {
		t.Errorf("%d keep-alive ticks armed, want 1", keepAlives)
	}
	// The quit dialog lists them all and says which are kept alive.
	h.key("q")
	sc := h.screen()
	for _, want := range []string{"holds 3 lock(s)", "billing:nightly  not kept alive", "cache:rebuild  kept alive", "deploy:prod  not kept alive"} {
		if !strings.Contains(sc, want) {
			t.Errorf("quit dialog lacks %q:\n%s", want, sc)
		}
	}
	h.key("esc")
	// x releases it, owner-checked.
	h.key("x") // cursor on billing:nightly
	value := "console:1#" + hex32(999)
	if got := acts.Calls(); got[len(got)-1] != "release billing:nightly "+value {
		t.Errorf("x sent %v", got)
	}
	h.key("esc")
	if slices.Contains(h.m.Held(), "billing:nightly") {
		t.Error("still holding billing:nightly after x")
	}
	// Once its validity has passed, a lock not kept alive is forgotten.
	now = now.Add(60 * time.Second)
	h.key("r")
	if !slices.Equal(h.m.Held(), []string{"cache:rebuild"}) {
		t.Errorf("held %v after deploy:prod's validity passed, want [cache:rebuild]", h.m.Held())
	}
	// Release and quit releases every lock still held.
	h.acquireNoKeepAlive("deploy:prod", "60s")
	h.key("q")
	h.key("r")
	if !h.quit {
		t.Fatal("release and quit did not quit")
	}
	rep := strings.Join(h.m.ExitReport(), "\n")
	if !strings.Contains(rep, "release cache:rebuild") || !strings.Contains(rep, "release deploy:prod") {
		t.Errorf("exit report %q, want both released", rep)
	}
}

func TestKeepAndQuitLeavesUnkeptLocksToExpire(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.acquireNoKeepAlive("deploy:prod", "60s")
	h.key("q")
	if _, ok := h.m.dialog.(*quitDialog); !ok {
		t.Fatal("q did not ask while holding a lock acquired without keep-alive")
	}
	h.key("k")
	if rep := h.m.ExitReport(); !h.quit || len(rep) != 1 || !strings.Contains(rep[0], "left deploy:prod") {
		t.Errorf("keep and quit: quit %v, report %v", h.quit, rep)
	}
}

func TestExtendDoesNotSilentlyShorten(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 120, 40)
	s := testSnapshot()
	for i := range s.Resources[0].Nodes { // billing:nightly, the first row
		s.Resources[0].Nodes[i].PTTLMs = 250_000 - int64(i)*300
	}
	h.snaps = []*inspect.Snapshot{s}
	h.key("r")
	h.key("e")
	sc := h.screen()
	if !strings.Contains(sc, "current  4m10s") {
		t.Errorf("the extend dialog does not show the current PTTL:\n%s", sc)
	}
	if v := h.m.dialog.(*extendDialog).ttl.Value(); v != "4m10s" {
		t.Errorf("pre-filled %q, want 4m10s (the current PTTL, above the 30s default)", v)
	}
	h.key("enter")
	value := "worker-7:4242#" + hex32(1)
	if got := acts.Calls(); !slices.Equal(got, []string{"extend billing:nightly " + value + " 4m10s"}) {
		t.Fatalf("calls %v", got)
	}
	h.key("esc")

	// A shorter TTL needs a second enter, after a warning.
	h.key("e")
	h.key("ctrl+u")
	h.typeText("30s")
	h.key("enter")
	if len(acts.Calls()) != 1 {
		t.Fatalf("a shortening extend was sent at the first enter: %v", acts.Calls())
	}
	if !strings.Contains(h.screen(), "shorter than the current 4m10s: enter again to shorten") {
		t.Errorf("no shortening warning:\n%s", h.screen())
	}
	h.key("enter")
	if got := acts.Calls(); len(got) != 2 || got[1] != "extend billing:nightly "+value+" 30s" {
		t.Errorf("second enter: calls %v", got)
	}
	h.key("esc")

	// Editing after the warning asks again.
	h.key("e")
	h.key("ctrl+u")
	h.typeText("30s")
	h.key("enter")
	h.key("backspace")
	h.typeText("s")
	h.key("enter")
	if len(acts.Calls()) != 2 {
		t.Errorf("an edited shortening TTL was sent without a new warning: %v", acts.Calls())
	}
}

func TestForceReleaseAcceptsTheEscapedName(t *testing.T) {
	for _, typed := range []string{`evil\x1b[31m:name`, `"evil\x1b[31m:name"`} {
		acts := &fakeActions{t: t}
		h := newHarness(t, testConfig(), acts, 120, 40)
		h.key("down")
		h.key("down")
		h.key("D")
		sc := h.screen()
		if !strings.Contains(sc, "escaped as shown:") || !strings.Contains(sc, `  evil\x1b[31m:name`) {
			t.Errorf("the dialog does not show the string to type:\n%s", sc)
		}
		h.typeText(`evil\x1b[31m:nam`)
		h.key("enter")
		if len(acts.Calls()) != 0 {
			t.Fatalf("a partial name confirmed: %v", acts.Calls())
		}
		h.key("ctrl+u")
		h.typeText(typed)
		h.key("enter")
		want := "force-release evil\x1b[31m:name x\x1b]0;pwned\x07#" + hex32(8)
		if got := acts.Calls(); !slices.Equal(got, []string{want}) {
			t.Errorf("typed %s: calls %q, want [%q]", typed, got, want)
		}
	}
}

// flat is the screen without spaces and box borders: a wrapped name reads whole.
func flat(screen string) string {
	return strings.NewReplacer(" ", "", "\n", "", "│", "").Replace(screen)
}

func TestLongNamesWrapInDetailAndDialogs(t *testing.T) {
	long := "a-tenant-42:" + strings.Repeat("segment/", 30) + "end"
	s := testSnapshot()
	r := res(long, inspect.StateHeld, s.Resources[0].Value, 5, s.Resources[0].Nodes...)
	s.Resources = append([]inspect.Resource{r}, s.Resources...)
	for _, size := range [][2]int{{80, 40}, {120, 40}} {
		acts := &fakeActions{t: t}
		h := newHarness(t, testConfig(), acts, size[0], size[1])
		h.snaps = []*inspect.Snapshot{s}
		h.key("r")
		h.key("g") // the cursor stays on its resource across polls
		if h.cursorResource() != long {
			t.Fatalf("cursor on %q", h.cursorResource())
		}
		h.key("enter")
		if sc := flat(h.screen()); strings.Count(sc, long) < 2 { // the name and the key
			t.Errorf("%dx%d detail does not show the whole name and key:\n%s", size[0], size[1], h.screen())
		}
		for _, k := range []string{"D", "e"} {
			h.key(k)
			if !strings.Contains(flat(h.screen()), long) {
				t.Errorf("%dx%d %s dialog does not show the whole name:\n%s", size[0], size[1], k, h.screen())
			}
			h.key("esc")
		}
		h.key("D")
		h.typeText(long)
		h.key("enter")
		if !strings.Contains(flat(h.screen()), "force-release"+long+":doneon") {
			t.Errorf("%dx%d result does not show the whole name:\n%s", size[0], size[1], h.screen())
		}
		if len(acts.Calls()) != 1 {
			t.Errorf("calls %v", acts.Calls())
		}
	}
}

func TestAnomalyMessagesWrapInDetail(t *testing.T) {
	msg := "the value on m5 differs from the quorum's value and will outlive it by 41.2s, so a client reading only m5 would see a stale owner"
	s := testSnapshot()
	s.Resources[3].Anomalies[0].Message = msg // jobs:email
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 80, 40)
	h.snaps = []*inspect.Snapshot{s}
	h.key("r")
	h.key("down")
	h.key("down")
	h.key("down")
	h.key("enter")
	if !strings.Contains(flat(h.screen()), flat("! stray-value on m5: "+msg)) {
		t.Errorf("the anomaly message is not shown whole:\n%s", h.screen())
	}
}

func TestOpaqueValuesShowInOwnerAndFilter(t *testing.T) {
	s := testSnapshot()
	uuid := "3f2b8c1e-9a4d-4e7b-b6f1-0c2d5e8a9b7f"
	for _, v := range []string{"ci-3#aaa", uuid} {
		r := res("zz:"+v[:4], inspect.StateHeld, v, 5, same(v, 9000, 9000, 9000, 9000, 9000)...)
		r.Owner = "" // the poller parses no owner from values other libraries write
		s.Resources = append(s.Resources, r)
	}
	summarize(s)
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 120, 40)
	h.snaps = []*inspect.Snapshot{s}
	h.key("r")
	h.key("/")
	h.typeText("ci-3")
	h.key("enter")
	if got := h.viewNames(); !slices.Equal(got, []string{"zz:ci-3"}) {
		t.Errorf("filter ci-3 shows %v, want [zz:ci-3]", got)
	}
	if !strings.Contains(h.screen(), `"ci-3#aaa"`) {
		t.Errorf("the OWNER column does not show the quoted value:\n%s", h.screen())
	}
	h.key("esc")
	h.key("/")
	h.typeText("9a4d-4e7b")
	h.key("enter")
	if got := h.viewNames(); !slices.Equal(got, []string{"zz:3f2b"}) {
		t.Errorf("filter on a UUID shows %v, want [zz:3f2b]", got)
	}
	if !strings.Contains(h.screen(), `"3f2b8c1e-`) {
		t.Errorf("the OWNER column does not show the quoted UUID:\n%s", h.screen())
	}
}

func TestDetailBottomAndTop(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 80, 12)
	h.key("enter")
	for _, k := range []string{"G", "end"} {
		h.key("g")
		if h.m.detailScroll != 0 {
			t.Fatalf("g: scroll %d", h.m.detailScroll)
		}
		h.key(k)
		n := len(h.m.detailLines(h.m.width))
		if want := n - h.m.bodyHeight(); want <= 0 || h.m.detailScroll != want {
			t.Errorf("%s: scroll %d, want the last page at %d (%d lines)", k, h.m.detailScroll, want, n)
		}
		if !strings.Contains(h.screen(), "nothing seen yet") {
			t.Errorf("%s: the end of the detail is not on screen:\n%s", k, h.screen())
		}
	}
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

func (g *goneActions) ForceRelease(ctx context.Context, resource, value string) (admin.ActionResult, error) {
	r, err := g.fakeActions.ForceRelease(ctx, resource, value)
	return g.gone(r), err
}

func (g *goneActions) ForceReleaseAny(ctx context.Context, resource string) (admin.ActionResult, error) {
	r, err := g.fakeActions.ForceReleaseAny(ctx, resource)
	return g.gone(r), err
}

func TestReleaseSummaryCountsAlreadyGoneAsDone(t *testing.T) {
	const want = "done on 5/5 masters (4 deleted, 1 already gone; quorum 3)"
	acts := &goneActions{fakeActions{t: t}}
	h := newHarness(t, testConfig(), acts, 120, 40)
	h.key("D")
	h.typeText("billing:nightly")
	h.key("enter")
	if sc := h.screen(); !strings.Contains(sc, "force-release billing:nightly: "+want) {
		t.Errorf("force-release summary:\n%s", sc)
	}
	h.key("esc")
	h.key("/")
	h.typeText("orders")
	h.key("enter")
	h.key("D")
	h.key("tab") // any value
	h.typeText("orders:sync")
	h.key("enter")
	if sc := h.screen(); !strings.Contains(sc, "force-release-any orders:sync: "+want) {
		t.Errorf("force-release-any summary:\n%s", sc)
	}
	h.key("esc")
	h.key("esc")
	h.key("a")
	h.key("enter")
	h.key("esc")
	h.key("x")
	if sc := h.screen(); !strings.Contains(sc, "release orders:sync: "+want) { // a prefills the row under the cursor
		t.Errorf("release summary:\n%s", sc)
	}
}

// Master cells that show no PTTL sort where their display puts them: down first, then
// absent, then the PTTLs, then no-ttl (never expires), then non-string keys (not locks).
// Rows without validity ("-") sort before every lock that has some.
func TestSortMasterCellsByWhatTheyShow(t *testing.T) {
	tb := &table{}
	cell := func(nd inspect.Node, state string, validity int64) *row {
		r := res("x", state, "", 1, nd)
		r.ValidityMs = validity
		return &row{res: &r}
	}
	ordered := []*row{
		cell(inspect.Node{Error: "down"}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: -2, Type: inspect.TypeNone}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: 5, Type: inspect.TypeString}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: 90_000_000, Type: inspect.TypeString}, inspect.StatePartial, 0),
		cell(inspect.Node{PTTLMs: -1, Type: inspect.TypeString}, inspect.StateNoTTL, 0),
		cell(inspect.Node{PTTLMs: -1, Type: "hash"}, inspect.StateForeign, 0),
	}
	for i := 1; i < len(ordered); i++ {
		if a, b := tb.sortKey(ordered[i-1], colMasters), tb.sortKey(ordered[i], colMasters); a >= b {
			t.Errorf("cell %d (key %d) does not sort before cell %d (key %d)", i-1, a, i, b)
		}
	}
	free := cell(inspect.Node{PTTLMs: -2}, inspect.StateSplit, 0)
	expiring := cell(inspect.Node{PTTLMs: 1}, inspect.StateHeld, 0)
	if a, b := tb.sortKey(free, colValidity), tb.sortKey(expiring, colValidity); a >= b {
		t.Errorf("a row without validity (key %d) does not sort before a held lock with 0 ms left (key %d)", a, b)
	}
}

// A dialog taller than the screen keeps its bottom: the confirmation field of a
// force-release on a very long name stays visible at 80x24.
func TestTallDialogKeepsItsInputOnScreen(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 80, 24)
	long := strings.Repeat("very-long-resource-name-", 40)
	value := "w:1#" + hex32(7)
	snap := testSnapshot()
	snap.Resources = []inspect.Resource{res(long, inspect.StateHeld, value, 5, same(value, 9000, 9000, 9000, 9000, 9000)...)}
	h.snaps = []*inspect.Snapshot{snap}
	h.key("r")
	h.key("D")
	if _, ok := h.m.dialog.(*forceDialog); !ok {
		t.Fatal("D did not open the force-release dialog")
	}
	screen := h.screen()
	if !strings.Contains(screen, "confirm") || !strings.Contains(screen, "╰") {
		t.Fatalf("the confirmation field or the dialog's end is off screen:\n%s", screen)
	}
	h.typeText(long)
	h.key("enter")
	if got := acts.Calls(); len(got) != 1 || !strings.HasPrefix(got[0], "force-release "+long) {
		t.Fatalf("calls %v", got)
	}
}
