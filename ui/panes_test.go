package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// Each pane draws within the size it is given, and its state is its own: the masters
// panel shrinks to its summary line when the panel does not fit, the activity pane
// takes a third of the body it shares with the table only while shown, and the detail
// keeps its resource and scroll while the table moves.
func TestPanesDrawWithinTheirSize(t *testing.T) {
	ch := make(chan live.Event)
	close(ch)
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 80, 12)
	h.m.live, h.m.liveCh = newLiveBoard(), ch
	h.m.activity.keys = DefaultActivityKeyMap()
	h.key("r")

	var p component = h.m.masters
	p.SetSize(100, 6) // 5 masters and a title: fits
	if got := strings.Split(p.View(), "\n"); len(got) != 6 || !strings.HasPrefix(ansi.Strip(got[0]), "MASTER") {
		t.Errorf("masters panel in 6 lines: %q", got)
	}
	p.SetSize(100, 5)
	if got := strings.Split(ansi.Strip(p.View()), "\n"); len(got) != 1 || !strings.HasPrefix(got[0], "m1:up m2:up") {
		t.Errorf("masters panel in 5 lines, want the summary line: %q", got)
	}
	if len(p.ShortHelp()) != 0 {
		t.Errorf("the masters panel shows keys: %v", p.ShortHelp())
	}

	a := h.m.activity
	a.SetSize(90, 30)
	if a.height() != 0 || a.View() != "" {
		t.Errorf("hidden activity pane takes %d lines", a.height())
	}
	h.key("L")
	a.SetSize(90, 30)
	if lines := strings.Split(a.View(), "\n"); a.height() != 10 || len(lines) != 10 || ansi.StringWidth(lines[0]) > 90 {
		t.Errorf("shown activity pane in a 30-line body: height %d, %d lines", a.height(), len(lines))
	}
	a.SetSize(90, 7)
	if a.height() != 0 {
		t.Errorf("activity pane in a 7-line body takes %d lines", a.height())
	}
	if help := a.ShortHelp(); len(help) != 1 || help[0].Help().Key != "L" {
		t.Errorf("activity pane keys: %v", help)
	}

	h.key("enter")
	d := h.m.detail
	name := d.name
	h.key("down")
	h.key("down")
	if d.scroll != 2 {
		t.Fatalf("detail scroll %d after two downs, want 2", d.scroll)
	}
	d.SetSize(60, 7)
	if lines := strings.Split(d.View(), "\n"); len(lines) != 7 {
		t.Errorf("detail in 7 lines draws %d", len(lines))
	}
	for _, l := range strings.Split(d.View(), "\n") {
		if ansi.StringWidth(l) > 60 {
			t.Errorf("detail line wider than 60: %q", ansi.Strip(l))
		}
	}
	h.key("esc")
	h.key("down")
	h.key("enter")
	if d.name == name || d.scroll != 0 {
		t.Errorf("reopened on the next row: %q scroll %d, want another resource from the top", d.name, d.scroll)
	}
}
