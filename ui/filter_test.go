package ui

import (
	"slices"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/inspecttest"
)

// One filter language: the console's `/` keeps exactly the rows `dump --filter` keeps
// (inspect.Filter, which dump's stream applies too), for the same five filters.
func TestConsoleAndDumpFilterAlike(t *testing.T) {
	s := inspecttest.FixedSnapshot()
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 160, 60)
	h.snaps = []*inspect.Snapshot{s}
	h.key("r")
	for _, f := range []string{"billing:*", "deploy", "state:split", "owner:billing-7f9c lib:redlockctl", "b* value:x"} {
		h.run(h.m.table.setFilter(f))
		var console []string
		for _, idx := range h.m.table.view {
			console = append(console, h.m.table.rows[idx].name)
		}
		var dump []string
		for _, r := range inspect.Filter(s, f, false).Resources {
			dump = append(dump, r.Resource)
		}
		slices.Sort(console)
		slices.Sort(dump)
		if !slices.Equal(console, dump) || len(dump) == 0 {
			t.Errorf("filter %q: console %v, dump %v", f, console, dump)
		}
	}
}

// A filter that does not parse keeps no row, and the status line names the word at
// fault, as dump --filter refuses it.
func TestConsoleBadFilterSaysWhy(t *testing.T) {
	h := newHarness(t, testConfig(), &fakeActions{t: t}, 160, 60)
	h.snaps = []*inspect.Snapshot{inspecttest.FixedSnapshot()}
	h.key("r")
	h.run(h.m.table.setFilter("owner:"))
	if n := len(h.m.table.view); n != 0 {
		t.Errorf("filter owner: keeps %d rows, want 0", n)
	}
	if line := h.m.statusLine(); !strings.Contains(line, `filter: "owner:": nothing to match`) {
		t.Errorf("status line %q does not say why the filter keeps nothing", line)
	}
	h.run(h.m.table.setFilter("deploy"))
	if len(h.m.table.view) == 0 {
		t.Error("a good filter after a bad one keeps no row")
	}
}
