package ui

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
)

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

// With a key prefix, a key scanned outside it shows under a resource name whose key is
// another one: acting on that name would hit the other key, so no action by name is
// offered. A force-release acts on the row's exact key (its release plan names it), so
// it stays available: that is how other libraries' locks are released.
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
	h.key("e")
	if h.m.dialog != nil {
		t.Fatal("e opened a dialog for a key outside the prefix")
	}
	if !strings.Contains(h.screen(), "outside lock.key_prefix") {
		t.Fatalf("e: no reason shown:\n%s", h.screen())
	}
	if len(acts.Calls()) != 0 {
		t.Fatalf("actions sent: %v", acts.Calls())
	}
	h.key("D")
	d, ok := h.m.dialog.(*forceDialog)
	if !ok {
		t.Fatal("D did not open the force-release dialog")
	}
	if keys := d.plan.Lock.Release.Checked.Keys; len(keys) == 0 || keys[0] != "billing:nightly" {
		t.Fatalf("force-release would act on %v, want the row's exact key", keys)
	}
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
