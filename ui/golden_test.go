package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"
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
		carried  bool // m4 down, its rows carried by a tracker (last seen 4.2 s before)
		keys     []string
	}{
		{name: "topology", topo: true},
		{name: "topology-detail", topo: true, keys: []string{"enter"}},
		{name: "uncertain", carried: true},
		{name: "uncertain-detail", carried: true, keys: []string{"enter"}},
		{name: "paused", keys: []string{"p"}},
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
				if sc.carried {
					h.snaps = append(h.snaps, carriedSnapshot(3))
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

// carriedSnapshot is downSnapshot(i) as a Tracker returns it: master i's nodes that held
// a value carry LastSeen from a sample 4.2 s before the snapshot.
func carriedSnapshot(i int) *inspect.Snapshot {
	prev, s := testSnapshot(), downSnapshot(i)
	for j := range s.Resources {
		pn := prev.Resources[j].Nodes[i]
		if pn.Value == "" || pn.PTTLMs < 0 {
			continue
		}
		s.Resources[j].Nodes[i].LastSeen = &inspect.LastSeen{Master: pn.Master, At: s.TakenAt.Add(-4200 * time.Millisecond),
			ProjectedPTTLMs: max(1, pn.PTTLMs-4200), Value: pn.Value}
	}
	return s
}

// TestFrozenAndProjectedCellsReadWithoutColour: while paused, validity and PTTL cells are
// italic and faint, and projected cells (≈) italic; NO_COLOR (the Ascii profile the
// program then writes with) drops the colours but keeps those attributes, and the text
// says it anyway (header "PAUSED: figures as of", the ≈ prefix).
func TestFrozenAndProjectedCellsReadWithoutColour(t *testing.T) {
	noColour := func(s string) string {
		var b strings.Builder
		w := &colorprofile.Writer{Forward: &b, Profile: colorprofile.Ascii}
		w.WriteString(s)
		return b.String()
	}
	for _, sz := range sizes {
		h := newHarness(t, testConfig(), &fakeActions{t: t}, sz.w, sz.h)
		h.key("p")
		raw := h.m.View().Content
		for name, content := range map[string]string{"colour": raw, "NO_COLOR": noColour(raw)} {
			if !strings.Contains(content, "PAUSED: figures as of 04:00:00") {
				t.Errorf("%dx%d %s: header lacks the figures' time", sz.w, sz.h, name)
			}
			if !strings.Contains(lineWith(content, "shard:03"), "3.0s\x1b[m \x1b[3;2m") || !strings.Contains(lineWith(content, "shard:03"), "\x1b[3;2m ") {
				t.Errorf("%dx%d %s: frozen PTTL cells are not styled stale: %q", sz.w, sz.h, name, lineWith(content, "shard:03"))
			}
		}
		if strings.Contains(noColour(raw), "\x1b[32m") {
			t.Errorf("%dx%d: NO_COLOR output still has colours", sz.w, sz.h)
		}
		h = newHarness(t, testConfig(), &fakeActions{t: t}, sz.w, sz.h)
		h.snaps = append(h.snaps, carriedSnapshot(3))
		h.key("r")
		if c := noColour(h.m.View().Content); !strings.Contains(c, "≈18.9s") || !strings.Contains(c, "\x1b[3m") {
			t.Errorf("%dx%d: projected cell not marked under NO_COLOR: %q", sz.w, sz.h, lineWith(c, "billing:nightly"))
		}
	}
}
