package report

import (
	"strings"
	"testing"
)

// The table drives validation and help: every built-in format writes streams and whole
// snapshots and serves doctor, and the names read as the help says.
func TestFormatsTable(t *testing.T) {
	for _, name := range []string{"table", "json", "ndjson"} {
		f, ok := Lookup(name)
		if !ok || f.Stream == nil || f.Snapshot == nil || f.Doctor == nil {
			t.Errorf("format %s: %v %+v", name, ok, f)
		}
	}
	if _, ok := Lookup("xml"); ok {
		t.Error("an unregistered format was found")
	}
	if got := FormatNames("doctor"); got != "table, json or ndjson" {
		t.Errorf("doctor's formats %q", got)
	}
	if h := FormatHelp(); !strings.HasPrefix(h, "output: table (") || !strings.Contains(h, "ndjson (") {
		t.Errorf("help %q", h)
	}
	defer func() {
		if recover() == nil {
			t.Error("a format registered twice did not panic")
		}
	}()
	Register(Format{Name: "json"})
}
