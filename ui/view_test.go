package ui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
)

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
	for _, want := range []string{"masters 4/5 up", "down refused: dial tcp", "~1.2s", "   down"} {
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
		if h.m.detail.scroll != 0 {
			t.Fatalf("g: scroll %d", h.m.detail.scroll)
		}
		h.key(k)
		n := len(h.m.detail.all(h.m.width))
		if want := n - h.m.bodyHeight(); want <= 0 || h.m.detail.scroll != want {
			t.Errorf("%s: scroll %d, want the last page at %d (%d lines)", k, h.m.detail.scroll, want, n)
		}
		if !strings.Contains(h.screen(), "nothing seen yet") {
			t.Errorf("%s: the end of the detail is not on screen:\n%s", k, h.screen())
		}
	}
}
