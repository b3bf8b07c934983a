package admin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
)

// An Output writes, in the json format, exactly the result's own JSON (the audit log's
// form), and in the table a line per master with its address; a failed action's error
// goes to the notes.
func TestOutputFormats(t *testing.T) {
	cfg := &config.Config{Masters: []config.MasterConfig{{Name: "m1", Addr: "10.0.0.1:6379"}, {Name: "m2", Addr: "10.0.0.2:6379"}, {Name: "m3", Addr: "10.0.0.3:6379"}}}
	r := ActionResult{Time: time.Date(2026, 11, 28, 3, 12, 0, 0, time.UTC), Action: ActionExtend, Resource: "billing:nightly",
		Value: "v", Quorum: 2, Done: 1, Up: 3, Error: "quorum not reached",
		Nodes: []NodeOutcome{{Master: "m1", Outcome: "ok"}, {Master: "m2", Outcome: "absent"}, {Master: "m3", Outcome: "absent"}}}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	jf, err := report.Choose(report.CmdExtend, "json")
	if err != nil {
		t.Fatal(err)
	}
	var out, notes bytes.Buffer
	if err := jf.Action(&out, &notes, Output{ActionResult: r, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want)+"\n" || notes.Len() != 0 {
		t.Errorf("json wrote %q, notes %q; want %s and a newline, no notes", out.String(), notes.String(), want)
	}
	tf, err := report.Choose(report.CmdExtend, "table")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := tf.Action(&out, &notes, Output{ActionResult: r, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`not extended "billing:nightly": quorum 2 not reached (1/3 masters said ok, 3 answered)`, "m2  10.0.0.2:6379          absent (value not there)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	if notes.String() != "redlockctl extend: quorum not reached\n" {
		t.Errorf("table notes %q", notes.String())
	}
}
