package ui

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
)

// The console shows, and would carry out, the very plan the CLI prints for the same
// row (admin.NewForcePlan), in either mode: on a split row, a partial row and a
// Redisson lock.
func TestForceDialogShowsTheCLIPlan(t *testing.T) {
	find := func(s *inspect.Snapshot, name string) inspect.Resource {
		for _, r := range s.Resources {
			if r.Resource == name {
				return r
			}
		}
		t.Fatalf("no row %s", name)
		return inspect.Resource{}
	}
	fixture, libs := testSnapshot(), libsSnapshot()
	cases := []struct {
		snap *inspect.Snapshot
		row  inspect.Resource
	}{
		{fixture, find(fixture, "orders:sync")},   // split
		{fixture, find(fixture, "cache:rebuild")}, // partial
		{libs, find(libs, "orders")},              // Redisson
	}
	// What the CLI prints for a step, and what the dialog shows for it.
	cliWord := map[string]string{"DELETE": "DELETE", "keep:": "keep", "absent": "nothing", "holds": "holds", "unknown": "try"}
	for _, c := range cases {
		d := newForceDialog(c.snap, c.row)
		for range 2 { // the mode it opens in, then the other (where allowed)
			want := admin.NewForcePlan(c.snap.Quorum, c.snap, c.row, d.anyValue)
			got := d.plan
			if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
				t.Errorf("%s any=%v: refusal %v, the CLI's %v", c.row.Resource, d.anyValue, got.Err, want.Err)
			}
			got.Err, want.Err = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s any=%v: the dialog's plan differs from the CLI's:\n%+v\n%+v", c.row.Resource, d.anyValue, got, want)
			}
			var cli bytes.Buffer
			admin.NewForcePlan(c.snap.Quorum, c.snap, c.row, d.anyValue).Write(&cli)
			lines := strings.Split(cli.String(), "\n")[1:]
			for i := range c.snap.Masters {
				action, _ := d.step(i)
				fields := strings.Fields(lines[i])
				if len(fields) < 3 || cliWord[fields[2]] != action {
					t.Errorf("%s any=%v master %d: the dialog shows %q, the CLI %q", c.row.Resource, d.anyValue, i+1, action, lines[i])
				}
			}
			if !d.anyAllowed {
				break
			}
			d.anyValue = !d.anyValue
			d.replan()
		}
	}
}

// The header says which config is in use, when a master that answered was not read
// whole, and when a poll ran longer than its interval (slow, not down).
func TestHeaderSaysConfigIncompleteAndSlow(t *testing.T) {
	cfg := testConfig()
	cfg.Path = "/etc/redlockctl/prod.toml"
	s := testSnapshot()
	s.Masters[1].Capped, s.Complete, s.Slow, s.PollMs = true, false, true, 1840
	h := newHarness(t, cfg, &fakeActions{t: t}, 200, 40)
	h.snaps = []*inspect.Snapshot{s}
	h.key("r") // refresh: the capped, slow snapshot
	head := strings.Split(h.screen(), "\n")[0]
	for _, want := range []string{"INCOMPLETE: m2 not read whole", "SLOW poll 1.8s", "config /etc/redlockctl/prod.toml"} {
		if !strings.Contains(head, want) {
			t.Errorf("header lacks %q:\n%s", want, head)
		}
	}
}
