package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect"
)

var sizes = []struct{ w, h int }{{80, 24}, {120, 40}}

// TestGoldenViews snapshots View() with ANSI stripped for each screen at 80×24 and
// 120×40.
func TestGoldenViews(t *testing.T) {
	screens := []struct {
		name     string
		readOnly bool
		down     bool // m4 down
		topo     bool // m2 a Sentinel group, m3 a cluster
		keys     []string
	}{
		{name: "topology", topo: true},
		{name: "topology-detail", topo: true, keys: []string{"enter"}},
		{name: "master-down", down: true},
		{name: "master-down-force-release", down: true, keys: []string{"D"}},
		{name: "master-down-detail", down: true, keys: []string{"enter"}},
		{name: "table"},
		{name: "table-sorted-validity-desc", keys: []string{"s", "s", "s", "s", "o"}},
		{name: "table-filtered", keys: []string{"/", "j", "o", "b", "s", "enter"}},
		{name: "table-anomalies", keys: []string{"!"}},
		{name: "detail", keys: []string{"down", "down", "down", "enter"}},
		{name: "detail-escaped", keys: []string{"down", "down", "enter"}},
		{name: "force-release", keys: []string{"enter", "D", "b", "i", "l"}},
		{name: "force-release-split", keys: []string{"/", "orders", "enter", "D", "tab"}},
		{name: "force-release-result", keys: []string{"D", "billing:nightly", "enter"}},
		{name: "acquire", keys: []string{"a"}},
		{name: "help", keys: []string{"?"}},
		{name: "read-only", readOnly: true},
		{name: "read-only-help", readOnly: true, keys: []string{"?"}},
	}
	for _, sc := range screens {
		for _, sz := range sizes {
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, sz.w, sz.h), func(t *testing.T) {
				cfg := testConfig()
				cfg.ReadOnly = sc.readOnly
				h := newHarness(t, cfg, &fakeActions{t: t, fail: sc.readOnly}, sz.w, sz.h)
				if sc.topo {
					h.snaps = append(h.snaps, topologySnapshot())
					h.key("r")
				}
				if sc.down {
					h.snaps = append(h.snaps, downSnapshot(3))
					h.key("r")
				}
				for _, k := range sc.keys {
					if len([]rune(k)) > 1 && namedKeys[k] == 0 && !strings.HasPrefix(k, "ctrl+") {
						h.typeText(k)
					} else {
						h.key(k)
					}
				}
				got := h.screen()
				checkFits(t, h.m.View().Content, sz.w, sz.h)
				golden(t, fmt.Sprintf("%s-%dx%d", sc.name, sz.w, sz.h), got)
			})
		}
	}
}

// checkFits asserts the screen is exactly h lines, none wider than w, and carries no
// control byte other than SGR styling.
func checkFits(t *testing.T, content string, w, h int) {
	t.Helper()
	lines := strings.Split(content, "\n")
	if len(lines) != h {
		t.Errorf("screen has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, want <= %d: %q", i, n, w, ansi.Strip(l))
		}
		plain := ansi.Strip(l)
		for _, c := range plain {
			if c < 0x20 || c == 0x7f {
				t.Errorf("line %d carries control byte %#x: %q", i, c, plain)
			}
		}
	}
}

// downSnapshot is testSnapshot with master i unreachable.
func downSnapshot(i int) *inspect.Snapshot {
	s := testSnapshot()
	s.Masters[i] = inspect.Master{Name: s.Masters[i].Name, Addr: s.Masters[i].Addr, Error: "TIME: no answer within the poll deadline"}
	for j := range s.Resources {
		r := &s.Resources[j]
		r.Nodes[i] = inspect.Node{Master: s.Masters[i].Name, PTTLMs: -2, Type: "none", Error: "no answer"}
		r.Uncertain = true
	}
	s.Complete = false
	summarize(s)
	return s
}
