package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect/carry"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// loadConfig writes body to a config file and loads it as an operator's would be.
func loadConfig(t *testing.T, body string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// liveHarness is a harness whose polls read real masters through an inspect.Poller's
// streams (tracked by tr, when given, as the console's wiring does).
func liveHarness(t *testing.T, cfg *config.Config, tr *carry.Tracker, w, h int) *harness {
	t.Helper()
	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	p := poll.NewPoller(cfg, pools)
	t.Cleanup(func() {
		p.Close()
		for _, pl := range pools {
			pl.Close()
		}
	})
	hs := newHarness(t, cfg, &fakeActions{t: t}, w, h)
	hs.m.poll = func(ctx context.Context) *poll.Stream {
		st := p.PollStream(ctx)
		if tr != nil {
			if whole := tr.TrackStream(st); whole != nil {
				return poll.StreamOf(whole)
			}
		}
		return st
	}
	hs.m.snap, hs.m.table = nil, newTable()
	hs.m.resize()
	hs.key("r")
	return hs
}

// TestMastersPanelNamesErrorKinds (real masters): WRONGPASS, NOAUTH, a TLS-only server
// dialled in plain text, a refused connection and a paused server each show their kind
// in the masters panel (the summary line on a short terminal) and in the force-release
// plan.
func TestMastersPanelNamesErrorKinds(t *testing.T) {
	good := redistest.Start(t, redistest.Options{})
	locked := redistest.StartN(t, 2, redistest.Options{Password: "right-pass"})
	tlsOnly := redistest.Start(t, redistest.Options{TLS: true})
	gone := redistest.Start(t, redistest.Options{})
	gone.Kill()
	paused := redistest.Start(t, redistest.Options{})
	paused.Pause()
	t.Cleanup(paused.Resume)
	if _, err := good.Do("SET", "kinds:job", "worker-1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UI_KINDS_WRONG_PW", "not-the-password")
	var b strings.Builder
	b.WriteString("name = \"kinds\"\n[inspect]\ntimeout = \"500ms\"\n")
	for _, m := range []struct{ name, addr, extra string }{
		{"m1", good.Addr, ""}, {"m2", locked[0].Addr, "password_env = \"UI_KINDS_WRONG_PW\"\n"}, {"m3", locked[1].Addr, ""},
		{"m4", tlsOnly.Addr, ""}, {"m5", gone.Addr, ""}, {"m6", paused.Addr, ""},
	} {
		fmt.Fprintf(&b, "[[masters]]\nname = %q\naddr = %q\n%s", m.name, m.addr, m.extra)
	}
	cfg := loadConfig(t, b.String())
	want := map[string]string{"m2": "auth", "m3": "auth", "m4": "tls", "m5": "refused", "m6": "timeout"}

	h := liveHarness(t, cfg, nil, 120, 40)
	sc := h.screen()
	for name, kind := range want {
		if line := lineWith(sc, name+" "); !strings.Contains(line, " down "+kind+": ") {
			t.Errorf("masters panel line of %s: %q, want down %s", name, line, kind)
		}
	}
	if !strings.Contains(lineWith(sc, "m2 "), "WRONGPASS") || !strings.Contains(lineWith(sc, "m3 "), "NOAUTH") {
		t.Errorf("the panel does not carry the messages:\n%s", sc)
	}
	h.key("D")
	sc = h.screen()
	for name, kind := range want {
		if line := lineWith(sc, name+" "); !strings.Contains(line, "try") || !strings.Contains(line, "down ("+kind+")") {
			t.Errorf("force-release plan line of %s: %q, want try with %s", name, line, kind)
		}
	}
	h.key("esc")
	h.send(tea.WindowSizeMsg{Width: 100, Height: 12}) // too short for the panel: one summary line
	sc = h.screen()
	for name, kind := range want {
		if !strings.Contains(sc, name+":down("+kind+")") {
			t.Errorf("summary line lacks %s's kind %s:\n%s", name, kind, sc)
		}
	}
}

// lineWith returns the first line of s containing sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestConsoleKeepsPausedHolder (real masters): the console, polling through a tracker
// as its wiring does, keeps a row whose only holder was paused: its cell shows the
// projected PTTL (≈), the status line says where and when it was last seen, and the
// detail view too; resumed, the row is normal again.
func TestConsoleKeepsPausedHolder(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	var b strings.Builder
	b.WriteString("name = \"stay\"\n[inspect]\ntimeout = \"300ms\"\n")
	for i, s := range servers {
		fmt.Fprintf(&b, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	cfg := loadConfig(t, b.String())
	if _, err := servers[0].Do("SET", "x", "w1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	var tr carry.Tracker
	h := liveHarness(t, cfg, &tr, 80, 24)
	if sc := h.screen(); !strings.Contains(lineWith(sc, " x "), "partial") || strings.Contains(sc, "≈") {
		t.Fatalf("before the pause:\n%s", sc)
	}
	servers[0].Pause()
	defer servers[0].Resume()
	h.m.now = time.Now()
	h.key("r")
	sc := h.screen()
	row := lineWith(sc, " x ")
	if row == "" || !strings.Contains(row, "≈") || !strings.Contains(sc, "last seen on m1, ") || !strings.Contains(sc, "projected") {
		t.Fatalf("the paused holder's row is not kept with its last-seen text:\n%s", sc)
	}
	h.key("enter")
	if sc := h.screen(); !strings.Contains(sc, "last seen on m1, ") || !strings.Contains(sc, "seen") {
		t.Errorf("detail lacks the last-seen line:\n%s", sc)
	}
	h.key("esc")
	servers[0].Resume()
	h.key("r")
	if sc := h.screen(); strings.Contains(sc, "≈") || strings.Contains(sc, "last seen") || !strings.Contains(lineWith(sc, " x "), "partial") {
		t.Errorf("after resume the row is not normal:\n%s", sc)
	}
}

// Live events reach the LIVE column (rate, hold p99, expiries marked) and the detail
// view's lifecycles and hold-time distribution; L toggles the activity pane.
func TestLiveColumnPaneAndDetail(t *testing.T) {
	ch := make(chan live.Event)
	close(ch) // the harness runs commands in line: waitLive must not block
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 200, 50)
	h.m.live, h.m.liveCh = newLiveBoard(), ch
	h.m.activity.keys = DefaultActivityKeyMap() // bound: the feed was given after New
	h.key("r")
	name := h.cursorResource()
	at := h.m.now
	held, margin := 12.0, 900.0
	var evs []live.Event
	for i := range 20 {
		evs = append(evs, live.Event{At: at.Add(time.Duration(i) * time.Millisecond), Event: live.Acquired, Resource: name},
			live.Event{At: at.Add(time.Duration(i) * time.Millisecond), Event: live.Released, Resource: name, HeldMs: &held, MarginMs: &margin, TTLMs: 1000})
	}
	evs = append(evs, live.Event{At: at, Event: live.Expired, Resource: name, HeldMs: &held, Value: "v-expired"})
	h.send(liveMsg{events: evs})
	screen := h.screen()
	if !strings.Contains(screen, "LIVE") || !strings.Contains(screen, "2.0/s 12ms ✗1") {
		t.Errorf("no LIVE column with 2.0/s, p99 12ms and one expiry:\n%s", screen)
	}
	h.key("L")
	if screen := h.screen(); !strings.Contains(screen, "ACTIVITY (live") || !strings.Contains(screen, "expired") {
		t.Errorf("L shows no activity pane with the expiry:\n%s", screen)
	}
	h.key("L")
	if strings.Contains(h.screen(), "ACTIVITY") {
		t.Error("a second L does not hide the pane")
	}
	h.key("enter")
	screen = h.screen()
	for _, want := range []string{"Live: 20 acquired", "1 expired while held", "p99 12ms", "≤ 16ms", "last lifecycles:"} {
		if !strings.Contains(screen, want) {
			t.Errorf("detail view lacks %q:\n%s", want, screen)
		}
	}
}

// Paused means frozen: live events that arrive while the console is paused change
// neither the LIVE column nor the activity pane, and time passing does not move its
// rates; on resume they all count.
func TestPauseFreezesLive(t *testing.T) {
	ch := make(chan live.Event)
	close(ch)
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 200, 50)
	h.m.live, h.m.liveCh = newLiveBoard(), ch
	h.m.activity.keys = DefaultActivityKeyMap() // bound: the feed was given after New
	h.key("r")
	name := h.cursorResource()
	at := h.m.now
	held := 12.0
	burst := func(from time.Time, n int) []live.Event {
		var evs []live.Event
		for i := range n {
			evs = append(evs, live.Event{At: from.Add(time.Duration(i) * time.Millisecond), Event: live.Acquired, Resource: name},
				live.Event{At: from.Add(time.Duration(i) * time.Millisecond), Event: live.Released, Resource: name, HeldMs: &held})
		}
		return evs
	}
	h.send(liveMsg{events: burst(at, 20)})
	cell := func() string { return lineWith(h.screen(), " "+name+" ") }
	before := cell()
	if !strings.Contains(before, "2.0/s") {
		t.Fatalf("no LIVE rate before the pause:\n%s", h.screen())
	}
	h.key("p")
	h.send(liveMsg{events: append(burst(at.Add(time.Second), 30), live.Event{At: at.Add(2 * time.Second), Event: live.Expired, Resource: name, HeldMs: &held, Value: "v-paused"})})
	h.m.now = at.Add(8 * time.Second) // the 10 s window would halve the rate
	if got := cell(); got != before {
		t.Errorf("the LIVE column moved while paused:\nbefore %s\nafter  %s", before, got)
	}
	h.key("L")
	if strings.Contains(h.screen(), "v-paused") {
		t.Errorf("the activity pane took an event while paused:\n%s", h.screen())
	}
	h.key("L")
	h.key("p")
	if got := cell(); got == before || !strings.Contains(got, "✗1") {
		t.Errorf("the events of the pause did not count on resume:\n%s", got)
	}
}
